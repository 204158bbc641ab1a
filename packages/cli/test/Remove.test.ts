/**
 * `mlops rm` on the sim across invocations: the record of a stopped or crashed deployment goes
 * (status no longer lists it, its directory is gone), a running one stays (exit 7, named),
 * `--all` removes only what has ended, and a host that cannot be reached is an error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { session } from "./support/run.js"

const flags = ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "2"]

const namesIn = (statusJson: ReadonlyArray<string>) =>
  (
    JSON.parse(statusJson.join("\n")) as { deployments: Array<{ name: string; alive: boolean }> }
  ).deployments.map((d) => `${d.name}:${d.alive ? "running" : "ended"}`)

describe("mlops rm", () => {
  it.live("removes a stopped deployment's record, never a running one's", () =>
    Effect.gen(function* () {
      const user = session()
      const up = yield* user.mlops("launch", "--host", "sim", "--name", "a", "--json", "--", ...flags)
      assert.strictEqual(up.code, ExitCode.Ok, up.text)
      const refused = yield* user.mlops("rm", "--host", "sim", "--name", "a")
      assert.strictEqual(refused.code, ExitCode.DeploymentExists, refused.text)
      assert.match(
        refused.stderr.join("\n"),
        /a on sim is running \(pid \d+\): its record stays; stop it first: mlops stop --host sim --name a/
      )
      const still = yield* user.mlops("status", "--host", "sim", "--json")
      assert.deepStrictEqual(namesIn(still.stdout), ["a:running"])

      const stopped = yield* user.mlops("stop", "--host", "sim", "--name", "a")
      assert.strictEqual(stopped.code, ExitCode.Ok, stopped.text)
      const removed = yield* user.mlops("rm", "--host", "sim", "--name", "a")
      assert.strictEqual(removed.code, ExitCode.Ok, removed.text)
      assert.match(
        removed.stdout.join("\n"),
        /removed a on sim \(stopped \(terminated\), pid \d+\): \/root\/\.mlops\/deployments\/a/
      )
      const after = yield* user.mlops("status", "--host", "sim", "--json")
      assert.deepStrictEqual(namesIn(after.stdout), [])
      const again = yield* user.mlops("rm", "--host", "sim", "--name", "a")
      assert.strictEqual(again.code, ExitCode.Usage, again.text)
      assert.include(again.stderr.join("\n"), "no deployment a on sim")
    })
  )

  it.live("--all removes the ended ones (stopped, crashed) and keeps the running one, named", () =>
    Effect.gen(function* () {
      const user = session()
      const crashed = yield* user.mlops(
        "launch",
        "--host",
        "sim",
        "--name",
        "crashed",
        "--no-preflight",
        "--",
        ...flags,
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-draft-tokens",
        "1"
      )
      assert.strictEqual(crashed.code, ExitCode.LaunchFailed, crashed.text)
      assert.strictEqual(
        (yield* user.mlops("launch", "--host", "sim", "--name", "gone", "--", ...flags)).code,
        ExitCode.Ok
      )
      assert.strictEqual((yield* user.mlops("stop", "--host", "sim", "--name", "gone")).code, ExitCode.Ok)
      const up = yield* user.mlops("launch", "--host", "sim", "--name", "up", "--", ...flags)
      assert.strictEqual(up.code, ExitCode.Ok, up.text)
      const before = yield* user.mlops("status", "--host", "sim", "--json")
      assert.deepStrictEqual(namesIn(before.stdout), ["crashed:ended", "gone:ended", "up:running"])

      const pruned = yield* user.mlops("rm", "--host", "sim", "--all")
      assert.strictEqual(pruned.code, ExitCode.Ok, pruned.text)
      assert.match(pruned.stdout.join("\n"), /removed crashed on sim \(code 1/)
      assert.match(pruned.stdout.join("\n"), /removed gone on sim \(stopped/)
      assert.match(pruned.stdout.join("\n"), /kept up on sim: running \(pid \d+\)/)
      const after = yield* user.mlops("status", "--host", "sim", "--json")
      assert.deepStrictEqual(namesIn(after.stdout), ["up:running"])
    })
  )

  it.live("a host that cannot be reached is an error (exit 6), not 'nothing removed'", () =>
    Effect.gen(function* () {
      const user = session()
      // lab-box is in the test ssh_config, on a port where nothing listens
      const ran = yield* user.mlops("rm", "--host", "lab-box", "--all")
      assert.strictEqual(ran.code, ExitCode.Connection, ran.text)
      assert.deepStrictEqual(
        ran.stdout.filter((l) => l !== ""),
        []
      )
      const unknown = yield* user.mlops("rm", "--host", "nowhere", "--name", "x")
      assert.strictEqual(unknown.code, ExitCode.Connection, unknown.text)
    })
  )

  it.live("--name and --all: exactly one of them", () =>
    Effect.gen(function* () {
      const user = session()
      const both = yield* user.mlops("rm", "--host", "sim", "--all", "--name", "a")
      assert.strictEqual(both.code, ExitCode.Usage, both.text)
      const neither = yield* user.mlops("rm", "--host", "sim")
      assert.strictEqual(neither.code, ExitCode.Usage, neither.text)
      assert.include(neither.stderr.join("\n"), "give --name N (repeatable) or --all")
    })
  )
})
