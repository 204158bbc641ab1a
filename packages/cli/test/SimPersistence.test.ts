/**
 * The `sim` host outlives one `mlops` process: commands in one session (a shared MLOPS_HOME)
 * see what the earlier ones did, as the README quickstart promises (live clock).
 */

import * as fs from "node:fs"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { session, story, storyFixes } from "./support/run.js"

const parseLines = (lines: ReadonlyArray<string>) =>
  lines.filter((line) => line.trim() !== "").map((line) => JSON.parse(line) as Record<string, unknown>)

const name = "qwen3.6-27b"
const readyLine = "The server is fired up and ready to roll!"

describe("the sim across mlops invocations", () => {
  it.live("launch, then status / logs / logs -f / launch again / stop / status in later runs", () =>
    Effect.gen(function* () {
      const user = session()
      const launched = yield* user.mlops("launch", "--host", "sim", "--json", "--", ...story, ...storyFixes)
      assert.strictEqual(launched.code, ExitCode.Ok, launched.text)
      const result = parseLines(launched.stdout).at(-1)!
      assert.strictEqual(result._tag, "Launched")
      const pid = (result.deployment as { pid: number }).pid
      assert.isTrue(fs.existsSync(user.stateFile))

      const status = yield* user.mlops("status", "--host", "sim", "--json")
      assert.strictEqual(status.code, ExitCode.Ok, status.text)
      const [deployment] = parseLines(status.stdout)[0]!.deployments as Array<Record<string, unknown>>
      assert.deepStrictEqual(
        [deployment?.name, deployment?.pid, deployment?.alive, deployment?.phase, deployment?.healthy],
        [name, pid, true, "ready", true]
      )
      assert.isAbove(deployment?.uptimeMs as number, 0)
      assert.isAbove(deployment?.gpuMemoryMiB as number, 20_000)

      const logs = yield* user.mlops("logs", "--host", "sim", "--name", name)
      assert.strictEqual(logs.code, ExitCode.Ok, logs.text)
      assert.isTrue(
        logs.stdout.some((line) => line.includes(readyLine)),
        logs.text
      )
      assert.isAbove(logs.stdout.length, 20)

      // -f prints the tail and keeps following until Ctrl-C
      const followed = yield* user.interrupted("1500 millis", "logs", "--host", "sim", "--name", name, "-f")
      assert.strictEqual(followed.code, -1, "still following when interrupted")
      assert.isTrue(
        followed.stdout.some((line) => line.includes(readyLine)),
        followed.text
      )

      const again = yield* user.mlops("launch", "--host", "sim", "--json", "--", ...story, ...storyFixes)
      assert.strictEqual(again.code, ExitCode.Ok, again.text)
      const events = parseLines(again.stdout).map((event) => event._tag)
      assert.include(events, "AlreadyRunning")
      assert.notInclude(events, "Spawned")

      const stop = yield* user.mlops("stop", "--host", "sim", "--name", name, "--json")
      assert.strictEqual(stop.code, ExitCode.Ok, stop.text)
      assert.strictEqual(parseLines(stop.stdout)[0]!._tag, "Stopped")

      const after = yield* user.mlops("status", "--host", "sim", "--json")
      const [stopped] = parseLines(after.stdout)[0]!.deployments as Array<Record<string, unknown>>
      assert.deepStrictEqual([stopped?.name, stopped?.alive, stopped?.gpuMemoryMiB], [name, false, undefined])
      // a deliberate stop is reported as such, not as a crash
      assert.deepStrictEqual([stopped?.stopped, stopped?.failure], ["terminated", null])
      assert.strictEqual(after.stderr.join(""), "")
    })
  )

  it.live("a corrupt or unknown-version state file: one warning line, a fresh sim, then replaced", () =>
    Effect.gen(function* () {
      for (const [content, reason] of [
        ["{ this is not json", "not valid JSON"],
        [JSON.stringify({ version: 99 }), "unknown version 99"]
      ] as const) {
        const user = session()
        fs.mkdirSync(user.stateFile.replace(/\/state\.json$/, ""), { recursive: true })
        fs.writeFileSync(user.stateFile, content)
        const status = yield* user.mlops("status", "--host", "sim", "--json")
        assert.strictEqual(status.code, ExitCode.Ok, status.text)
        assert.deepStrictEqual(parseLines(status.stdout)[0]!.deployments, [])
        const warnings = status.stderr.filter((line) => line !== "")
        assert.strictEqual(warnings.length, 1, status.text)
        assert.include(warnings[0]!, "ignoring the sim state")
        assert.include(warnings[0]!, reason)

        // the bad file was replaced by a valid one: the next run is silent
        assert.strictEqual(JSON.parse(fs.readFileSync(user.stateFile, "utf8")).version, 1)
        const next = yield* user.mlops("status", "--host", "sim", "--json")
        assert.strictEqual(next.stderr.filter((line) => line !== "").length, 0, next.text)
      }
    })
  )
})
