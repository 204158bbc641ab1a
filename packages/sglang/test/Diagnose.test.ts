import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeFileSystem } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as L from "../src/internal/lifecycleLines.js"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, storyArgv } from "./support/sim.js"

describe("Diagnose", () => {
  it("a successful log: no failure, phase ready", () => {
    const d = Serving.diagnoseText(
      "ok.log",
      L.toText(L.successfulLaunch({ tpSize: 2, hybrid: true, mtp: true }))
    )
    assert.isUndefined(d.failure)
    assert.isTrue(d.ready)
    assert.strictEqual(d.phase, "ready")
  })

  it.effect("a local file with the incident's ValueError: MissingSchedulerStrategy with its fix", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-diagnose-"))
      const file = path.join(dir, "server.log")
      fs.writeFileSync(file, L.toText([...L.entrypointWarning(), ...L.mambaValueError()]))
      const d = yield* Serving.diagnoseLocalFile(file)
      fs.rmSync(dir, { recursive: true })
      assert.strictEqual(d.failure?._tag, "MissingSchedulerStrategy")
      assert.deepStrictEqual(d.failure?.fix?.flags, { "--mamba-scheduler-strategy": "extra_buffer" })
      assert.strictEqual(d.source, file)
    }).pipe(Effect.provide(NodeFileSystem.layer))
  )

  it.effect("a deployment on the host and a remote file: the failure from its log and exit status", () =>
    Effect.gen(function* () {
      const env = { SGLANG_ENABLE_SPEC_V2: "1" }
      yield* Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv: storyArgv, env, preflight: false, name: "s" }))
      )
      const d = yield* Serving.diagnoseDeployment("sim", "s")
      assert.strictEqual(d?.failure?._tag, "MissingSchedulerStrategy")
      const remote = yield* Serving.diagnoseRemoteFile("sim", "/root/.mlops/deployments/s/log")
      assert.strictEqual(remote.failure?._tag, "MissingSchedulerStrategy")
      assert.isUndefined(yield* Serving.diagnoseDeployment("sim", "none"))
    }).pipe(Effect.provide(Simulator.layer))
  )
})
