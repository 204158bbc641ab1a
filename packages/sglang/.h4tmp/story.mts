import { Effect, Either } from "effect"
import * as Argv from "../src/Argv.ts"
import * as ModelTraits from "../src/ModelTraits.ts"
import * as Resolve from "../src/Resolve.ts"
import { qwen36_27b } from "../src/internal/fixtures/models.ts"
const traits = Effect.runSync(ModelTraits.fromConfig(qwen36_27b))
const ctx = { traits, gpus: { count: 2, computeCapability: "8.6", memoryMiB: 49140 }, env: {}, version: "0.5.11" }
const run = (argv: string[]) => {
  const { args, explicit } = Effect.runSync(Argv.decodeArgv(argv))
  const r = Resolve.resolveEither(args, explicit, ctx)
  if (Either.isLeft(r)) { console.log(r.left.message); console.log(JSON.stringify(r.left.violations.map(v=>[v.ruleId, v.fix]))) }
  else { const e = r.right.effective; console.log(e.speculative_algorithm, e.speculative_num_steps, e.speculative_eagle_topk, e.speculative_num_draft_tokens, e.max_running_requests, e.attention_backend, e.page_size, e.mem_fraction_static, e.chunked_prefill_size, e.cuda_graph_max_bs); console.log(r.right.logLines); console.log(r.right.adjustments.map(a=>a.ruleId+":"+JSON.stringify(a.changes)).join("\n")) }
}
const base = ["--model-path", "/root/models/Qwen3.6-27B", "--speculative-algorithm", "NEXTN", "--speculative-num-draft-tokens", "1", "--tp", "2"]
run(base)
run([...base, "--mamba-scheduler-strategy", "extra_buffer", "--speculative-num-steps", "1", "--speculative-eagle-topk", "1"])
run(["--model-path", "/root/models/Qwen3.6-27B", "--speculative-algorithm", "NEXTN", "--tp", "2"])
