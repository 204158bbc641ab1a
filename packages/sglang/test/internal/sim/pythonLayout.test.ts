import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, RemoteCommand, RemoteProcess } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { Effect } from "effect"
import { engine } from "../../../src/SglangEngine.js"
import * as Simulator from "../../../src/Simulator.js"
import { advance, storyArgv } from "../../support/sim.js"

// every path the sim's SGLang prints (warnings, ServerArgs tracebacks, rank tracebacks) lives in
// the one Python environment the host reports: <prefix>/lib/python3.X/site-packages
const packagePaths = (text: string) => [
  ...new Set(
    [...text.matchAll(/(\/[\w./-]+\/lib\/python3\.\d+\/(?:site|dist)-packages)\//g)].map((m) => m[1])
  )
]

describe("the sim's Python layout", () => {
  it.effect(
    "warning lines and tracebacks name one site-packages, of the Python version the host reports",
    () =>
      Effect.gen(function* () {
        const conn = yield* Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))
        const python = `${Simulator.python}/bin/python`
        const env = yield* PythonEnvRuntime.choose(conn, { engine, explicit: undefined, env: {} })
        const minor = /^3\.(\d+)/.exec(env.pythonVersion)![1]
        const expected = `${Simulator.python}/lib/python3.${minor}/site-packages`
        assert.strictEqual(env.location, `${expected}/sglang`)
        // a ServerArgs ValueError (launcher traceback) after the entrypoint warning
        const refused = yield* conn.exec(
          RemoteCommand.make([python, "-m", "sglang.launch_server", ...storyArgv])
        )
        assert.include(refused.stderr, "UserWarning")
        // a rank's OOM traceback while loading weights
        yield* RemoteProcess.spawnDetached(
          conn,
          RemoteCommand.make([
            python,
            "-m",
            "sglang.launch_server",
            "--model-path",
            Simulator.modelPath,
            "--tp",
            "1"
          ]),
          { runDir: "/root/runs/oom" }
        )
        yield* advance(6000)
        const log =
          (yield* Effect.flatMap(FakeHost.host("sim"), (h) => h.fs.readText("/root/runs/oom/log"))) ?? ""
        assert.include(log, "torch.OutOfMemoryError")
        assert.deepStrictEqual(packagePaths(refused.stderr), [expected])
        assert.deepStrictEqual(packagePaths(log), [expected])
      }).pipe(Effect.provide(Simulator.layer))
  )
})
