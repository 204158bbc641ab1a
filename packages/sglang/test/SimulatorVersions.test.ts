import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, RemoteCommand } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import * as PythonEnvRuntime from "@mlops/serve/PythonEnvRuntime"
import { Effect, Either } from "effect"
import * as Catalogue from "../src/Catalogue.js"
import * as Check from "../src/Check.js"
import * as HostFlags from "../src/HostFlags.js"
import * as Installed from "../src/Installed.js"
import { engine } from "../src/SglangEngine.js"
import * as Simulator from "../src/Simulator.js"
import { storyArgv } from "./support/sim.js"

const simWith = (sglangVersion: string) => FakeHost.layer([Simulator.makeHostSpec({ sglangVersion })])
const python = `${Simulator.python}/bin/python`

describe("Simulator with another shipped release", () => {
  it.effect("reports that release, and its parser refuses a flag the release does not have", () =>
    Effect.gen(function* () {
      const conn = yield* Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim"))
      // found as a launch finds it: the discovery script on the sim's shell
      const env = yield* PythonEnvRuntime.choose(conn, { engine, explicit: undefined, env: {} })
      assert.strictEqual(env.engineVersion, "0.5.4")
      assert.match(env.fileHashes[HostFlags.fingerprintFile] ?? "", /^[0-9a-f]{64}$/)
      const run = yield* conn.exec(
        RemoteCommand.make([
          python,
          "-m",
          "sglang.launch_server",
          "--model-path",
          Simulator.modelPath,
          "--mamba-track-interval",
          "128"
        ])
      )
      assert.strictEqual(run.exitCode, 2)
      assert.include(run.stderr, "unrecognized arguments: --mamba-track-interval")
    }).pipe(Effect.provide(simWith("0.5.4")))
  )

  it.effect("check --host sim types the flags by the sim's release and applies that release's rules", () =>
    Effect.gen(function* () {
      const later = yield* Effect.flip(
        Check.host({ host: "sim", argv: [...storyArgv, "--mamba-scheduler-strategy", "extra_buffer"] })
      )
      assert.strictEqual(later._tag, "UnknownFlag")
      if (later._tag === "UnknownFlag") assert.strictEqual(later.version, "0.5.4")
      // 0.5.4 has neither the mamba radix-cache ValueError (0.5.10) nor the strategy flag: only the assertion
      const error = yield* Effect.flip(Check.host({ host: "sim", argv: storyArgv }))
      assert.strictEqual(error._tag, "LaunchRulesViolated")
      if (error._tag === "LaunchRulesViolated") {
        assert.strictEqual(error.version, "0.5.4")
        assert.deepStrictEqual(
          error.violations.map((v) => v.ruleId),
          ["R12"]
        )
      }
    }).pipe(Effect.provide(simWith("0.5.4")))
  )

  it.effect("--flags-from-host on the sim reads its parser: the same flags as the shipped catalogue", () =>
    Effect.gen(function* () {
      const found = yield* Installed.onHost({ host: "sim", fromHost: true })
      assert.strictEqual(found.source, "dumped")
      const facts = (c: Catalogue.Catalogue) =>
        c.flags.map((f) => [f.flag, f.field, f.aliases, f.type, f.default, f.choices, f.nargs, f.negatable])
      assert.deepStrictEqual(facts(found.catalogue), facts(Catalogue.get("0.5.15")!))
    }).pipe(Effect.provide(simWith("0.5.15")))
  )

  it("only shipped releases can be installed on the sim", () => {
    assert.isTrue(Either.isRight(Simulator.simVersion("v0.5.13")))
    const refused = Simulator.simVersion("0.6.0")
    assert.isTrue(Either.isLeft(refused))
    if (Either.isLeft(refused)) assert.include(refused.left.message, "mlops flags --releases")
  })
})
