/**
 * Placements from requests and from records, on the simulated host: a spec is checked strictly,
 * a relaunch compares where and how the engine runs, and one record that its placement cannot
 * read hides no other deployment from `status`.
 */
import { assert, describe, it } from "@effect/vitest"
import { FakeHost } from "@mlops/core/testing"
import * as Deployment from "@mlops/serve/Deployment"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import * as Remove from "@mlops/serve/Remove"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }

/** A record as a launch writes it, for a deployment this host never ran. */
const record = (name: string, placement: unknown) =>
  Effect.gen(function* () {
    const handle = yield* FakeHost.host("sim")
    const runDir = `/root/.mlops/deployments/${name}`
    yield* handle.fs.write(
      `${runDir}/meta.json`,
      JSON.stringify({
        name,
        port: 31000,
        engine: "sglang",
        engineVersion: "0.5.11",
        placement,
        python: "/root/ml-env/bin/python",
        envNames: [],
        secrets: { salt: "00", sha256: "00" },
        createdAt: 1,
        mlopsVersion: Deployment.mlopsVersion,
        attempt: 1
      })
    )
    yield* handle.fs.write(`${runDir}/argv.json`, JSON.stringify({ argv: [], requestedArgv: [] }))
    return runDir
  })

describe("Placements", () => {
  it.effect(
    "status: a record of a placement this mlops does not know, or a job file that is not a job id, is listed with why; the others are listed as ever",
    () =>
      Effect.gen(function* () {
        yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "a" }))
        yield* record("b", { kind: "container", image: "lmsysorg/sglang:v0.5.11" })
        const c = yield* record("c", { kind: "slurm", settings: {} })
        yield* (yield* FakeHost.host("sim")).fs.write(`${c}/job`, "not a job id\n")
        const rows = yield* drive(Serving.statusOfHost("sim"))
        assert.deepStrictEqual(
          rows.map((row) => [row.name, row.alive, row.problem?._tag]),
          [
            ["a", true, undefined],
            ["b", false, "InvalidPlacement"],
            ["c", false, "ProcessError"]
          ]
        )
        assert.include(rows[1]?.problem?.message ?? "", "container")
        assert.include(rows[2]?.problem?.message ?? "", "no Slurm job id")
        // rm --all removes nothing it cannot judge: the running one and the two unreadable are kept
        const { removed, kept } = yield* Remove.removeEnded("sim")
        assert.deepStrictEqual(removed, [])
        assert.deepStrictEqual(
          kept.map((k) => [k.name, k._tag]),
          [
            ["a", "DeploymentRunning"],
            ["b", "RecordUnreadable"],
            ["c", "RecordUnreadable"]
          ]
        )
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect(
    "a relaunch of the same flags elsewhere, or with its engine found another way, is not the running one",
    () =>
      Effect.gen(function* () {
        yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "q" }))
        const elsewhere = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: fixedArgv,
              env,
              name: "q",
              placement: SlurmPlacement.spec({ partition: "gpu" })
            })
          )
        )
        assert.strictEqual(elsewhere._tag, "DeploymentExists")
        assert.include(elsewhere.message, "it runs elsewhere")
        const pinned = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: fixedArgv,
              env,
              name: "q",
              runtime: PythonEnvRuntime.spec("/opt/other-env")
            })
          )
        )
        assert.strictEqual(pinned._tag, "DeploymentExists")
        assert.include(pinned.message, "its engine was found another way")
        // the same placement and runtime: the running one
        const again = yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "q" }))
        assert.strictEqual(again.name, "q")
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("a spec whose settings are not the placement's is refused, not read as its defaults", () =>
    Effect.gen(function* () {
      const flat = yield* Effect.flip(
        drive(
          Serving.launchDeployment({
            host: "sim",
            argv: fixedArgv,
            env,
            placement: { kind: "slurm", partition: "gpu", time: "1:00:00" }
          })
        )
      )
      assert.strictEqual(flat._tag, "InvalidPlacement")
      assert.include(flat.message, "partition")
      const unknown = yield* Effect.flip(
        drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, placement: { kind: "k8s" } }))
      )
      assert.strictEqual(unknown._tag, "InvalidPlacement")
      assert.include(unknown.message, "detached-group")
    }).pipe(Effect.provide(Simulator.layer))
  )
})
