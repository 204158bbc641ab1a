import { NodeContext } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { mlopsWith } from "/work/wt/i8b/packages/cli/test/support/run.js"
import { fixedStory, freePort, startHost } from "/work/wt/i8b/packages/sglang/test/integration/support.js"

const prog = Effect.gen(function* () {
  const { standin, sshd } = yield* startHost
  const port = yield* freePort
  const env = { MLOPS_SSH_CONFIG: sshd.sshConfigPath, MLOPS_HOME: standin.mlopsHome }
  const args = process.argv.slice(2)
  const r = yield* mlopsWith(
    { mlopsHome: standin.mlopsHome, env, interruptAfter: "40 seconds" },
    "launch",
    "--host",
    "testhost",
    "--name",
    "dbg",
    "--env",
    "HF_TOKEN=hf_abcdefgh12345",
    "--env",
    "STANDIN_PHASE_SECONDS=0.02",
    "--",
    ...fixedStory(standin.modelPath, port),
    "--api-key",
    "sk-abcdef123456"
  )
  console.log(r.code, r.text)
  for (const args of [
    [
      "launch",
      "--host",
      "testhost",
      "--name",
      "dbg",
      "--env",
      "HF_TOKEN=hf_abcdefgh12345",
      "--env",
      "STANDIN_PHASE_SECONDS=0.02",
      "--json",
      "--",
      ...fixedStory(standin.modelPath, port),
      "--api-key",
      "sk-abcdef123456"
    ],
    ["status", "--host", "testhost", "--json"],
    ["status", "--host", "testhost"],
    ["logs", "--host", "testhost", "--name", "dbg", "-n", "3"]
  ]) {
    const t = Date.now()
    const x = yield* mlopsWith({ mlopsHome: standin.mlopsHome, env, interruptAfter: "20 seconds" }, ...args)
    console.log(args[0], x.code, Date.now() - t, x.text.slice(0, 600))
  }
  const s = yield* mlopsWith(
    { mlopsHome: standin.mlopsHome, env, interruptAfter: "20 seconds" },
    "stop",
    "--host",
    "testhost",
    "--name",
    "dbg"
  )
  console.log(s.code, s.text)
}).pipe(Effect.scoped)
Effect.runPromise(prog.pipe(Effect.provide(NodeContext.layer))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
