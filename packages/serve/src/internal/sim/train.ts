/**
 * The sim's `torchrun`: a training run to try `mlops run` on. It starts one worker per
 * `--nproc-per-node` (default 1) on the GPUs `CUDA_VISIBLE_DEVICES` gives it (holding memory on
 * each, as `nvidia-smi` then shows), prints a Hugging Face Trainer-like line per step, and ends
 * with exit 0. Its script's own flags (whatever the script is named) steer it: `--steps N`
 * (default 20), `--step-ms N` (default 250), `--fail oom|nan|crash` at `--fail-at K` (default
 * half way): a CUDA out-of-memory error, a NaN loss that the script refuses, or a plain
 * exception, each followed by torchrun's ChildFailedError report, in PyTorch's words. With
 * `--output-dir DIR` it saves a (toy) draft model there at the end.
 *
 * A demo, not test evidence for the classifier (see `SimHost`).
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import { Clock, Effect } from "effect"
import * as SimGpus from "../../SimGpus.js"

/** The config of the drafter a run saves with `--output-dir`: one decoder layer, the target's vocabulary. */
const DRAFTER = {
  architectures: ["LlamaForCausalLMEagle3"],
  model_type: "llama",
  hidden_size: 5120,
  intermediate_size: 17408,
  num_attention_heads: 40,
  num_key_value_heads: 8,
  num_hidden_layers: 1,
  vocab_size: 248320,
  draft_vocab_size: 32000,
  torch_dtype: "bfloat16"
}

/** MiB each worker holds on its GPU. */
const WORKER_MIB = 21504

const flag = (argv: ReadonlyArray<string>, name: string): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === name) return argv[i + 1]
    if (word.startsWith(`${name}=`)) return word.slice(name.length + 1)
  }
  return undefined
}

const stamp = (now: Date) => now.toISOString().replace("T", "_").slice(0, 19)

/** torchrun's report when a worker failed (its elastic agent's words). */
const childFailed = (script: string, host: string, pid: number, now: Date): ReadonlyArray<string> => [
  `E${String(now.getUTCMonth() + 1).padStart(2, "0")}${String(now.getUTCDate()).padStart(2, "0")} ${now.toISOString().slice(11, 23)}000 ${pid} torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 0 (pid: ${pid + 1}) of binary: /usr/bin/python3`,
  "Traceback (most recent call last):",
  '  File "/usr/local/bin/torchrun", line 8, in <module>',
  "    sys.exit(main())",
  "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
  "============================================================",
  `${script} FAILED`,
  "------------------------------------------------------------",
  "Failures:",
  "  <NO_OTHER_FAILURES>",
  "------------------------------------------------------------",
  "Root Cause (first observed failure):",
  "[0]:",
  `  time      : ${stamp(now)}`,
  `  host      : ${host}`,
  "  rank      : 0 (local_rank: 0)",
  `  exitcode  : 1 (pid: ${pid + 1})`,
  "  error_file: <N/A>",
  "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
  "============================================================"
]

const failureLines = (kind: string, script: string, step: number): ReadonlyArray<string> => {
  const at = `  File "${script}", line 88, in <module>`
  switch (kind) {
    case "oom":
      return [
        "Traceback (most recent call last):",
        at,
        "    loss.backward()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 47.41 GiB of which 1.13 GiB is free. Including non-PyTorch memory, this process has 46.27 GiB memory in use. Of the allocated memory 43.90 GiB is allocated by PyTorch, and 1.87 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
      ]
    case "nan":
      return [
        `{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.0001, 'epoch': ${(step / 100).toFixed(2)}}`,
        "Traceback (most recent call last):",
        at,
        '    raise ValueError(f"loss is {loss.item()} at step {step}")',
        `ValueError: loss is nan at step ${step}`
      ]
    default:
      return ["Traceback (most recent call last):", at, "    batch = next(loader)", "KeyError: 'input_ids'"]
  }
}

export const torchrun: FakeHost.Program = {
  match: (argv) => (argv[0] ?? "").split("/").pop() === "torchrun",
  run: (ctx) =>
    Effect.gen(function* () {
      const argv = ctx.argv.slice(1)
      const script = argv.find((word) => word.endsWith(".py")) ?? "train.py"
      const steps = Number(flag(argv, "--steps") ?? 20)
      const stepMs = Number(flag(argv, "--step-ms") ?? 250)
      const fail = flag(argv, "--fail")
      const failAt = Number(flag(argv, "--fail-at") ?? Math.max(1, Math.floor(steps / 2)))
      const workers = Number(flag(argv, "--nproc-per-node") ?? flag(argv, "--nproc_per_node") ?? 1)
      const visible = (ctx.env.CUDA_VISIBLE_DEVICES ?? "")
        .split(",")
        .filter((id) => /^\d+$/.test(id))
        .map(Number)
      if (visible.length < workers) {
        yield* ctx.stderr.line(
          `RuntimeError: CUDA error: invalid device ordinal (${workers} processes per node, ${visible.length} visible GPU(s))`
        )
        return 1
      }
      yield* SimGpus.hold(
        ctx.fs,
        ctx.pid,
        Object.fromEntries(visible.slice(0, Math.max(1, workers)).map((gpu) => [gpu, WORKER_MIB]))
      )
      yield* ctx.onSignal("TERM", ctx.exit(143))
      yield* ctx.onSignal("INT", ctx.exit(130))
      yield* ctx.stdout.line(
        `***** Running training *****  Num steps = ${steps}, GPUs = ${visible.join(",")}`
      )
      let loss = 2.4
      for (let step = 1; step <= steps; step++) {
        yield* Effect.sleep(`${stepMs} millis`)
        if (fail !== undefined && step === failAt) {
          for (const line of failureLines(fail, script, step)) yield* ctx.stderr.line(line)
          const now = new Date(yield* Clock.currentTimeMillis)
          for (const line of childFailed(script, "sim.local", ctx.pid, now)) yield* ctx.stderr.line(line)
          return 1
        }
        loss = loss * 0.93
        yield* ctx.stdout.line(
          `{'loss': ${loss.toFixed(4)}, 'grad_norm': ${(1.5 * loss).toFixed(3)}, 'learning_rate': 0.0001, 'epoch': ${(step / steps).toFixed(2)}}`
        )
      }
      yield* ctx.stdout.line(
        `{'train_runtime': ${((steps * stepMs) / 1000).toFixed(1)}, 'train_loss': ${loss.toFixed(4)}}`
      )
      // a checkpoint: a draft model's config (a one-layer Llama-style drafter), as trainers save it
      const output = flag(argv, "--output-dir")
      if (output !== undefined) {
        const dir = ctx.fs.resolve(output.startsWith("/") ? output : `${ctx.cwd}/${output}`)
        yield* ctx.fs.write(`${dir}/config.json`, `${JSON.stringify(DRAFTER, null, 2)}\n`)
        yield* ctx.fs.write(`${dir}/model.safetensors`, "")
        yield* ctx.stdout.line(`Saving model checkpoint to ${output}`)
      }
      return 0
    }).pipe(Effect.ensuring(SimGpus.release(ctx.fs, ctx.pid)))
}
