/**
 * The lifeline wrapper run by the local /bin/sh, in both of its modes: as a process group
 * leader (what sshd gives it; started here with `setsid`) and not (the `setsid` fallback).
 */
import { spawn } from "node:child_process"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { lifeline } from "../../src/internal/shellScripts.js"
import { pgrep, selfExcluding, unique } from "../support/local.js"

interface Ended {
  readonly code: number | null
  readonly signal: string | null
  readonly stdout: string
}

/** Start the wrapper around `line`; stdin stays open until `closeStdin` (the lifeline). */
const start = (line: string, leader: boolean) => {
  const wrapped = lifeline(line, 0, 0)
  const child = leader
    ? spawn("setsid", ["/bin/sh", "-c", wrapped], { stdio: ["pipe", "pipe", "ignore"] })
    : spawn("/bin/sh", ["-c", wrapped], { stdio: ["pipe", "pipe", "ignore"] })
  let stdout = ""
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8")
  })
  const ended = Effect.async<Ended>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null)
      return resume(Effect.succeed({ code: child.exitCode, signal: child.signalCode, stdout }))
    child.once("close", (code, signal) => resume(Effect.succeed({ code, signal, stdout })))
  }).pipe(Effect.timeout("10 seconds"))
  return { ended, closeStdin: Effect.sync(() => child.stdin.end()) }
}

/** No process matches `marker` any more (killing a group is asynchronous: poll briefly). */
const gone = (marker: string) =>
  Effect.gen(function* () {
    for (let i = 0; i < 60 && pgrep(selfExcluding(marker)).length > 0; i++) yield* Effect.sleep("50 millis")
    return pgrep(selfExcluding(marker))
  })

for (const leader of [true, false]) {
  describe(`lifeline wrapper (${leader ? "group leader" : "setsid fallback"})`, () => {
    it.live("reports the exit code and ends while the lifeline is still open", () =>
      Effect.gen(function* () {
        const run = start("echo out; exit 3", leader)
        const ended = yield* run.ended
        yield* run.closeStdin
        assert.deepStrictEqual(ended, { code: 3, signal: null, stdout: "out\n" })
      })
    )

    it.live("re-raises the signal that killed the command", () =>
      Effect.gen(function* () {
        const run = start("kill -s TERM $$; sleep 5", leader)
        const ended = yield* run.ended
        yield* run.closeStdin
        assert.deepStrictEqual([ended.code, ended.signal], [null, "SIGTERM"])
      })
    )

    it.live("EOF on the lifeline kills the command and its children", () =>
      Effect.gen(function* () {
        const marker = unique("mlops-lifeline")
        const run = start(`sleep 30 & sleep 31; : ${marker}`, leader)
        yield* Effect.sleep("200 millis")
        assert.isAbove(pgrep(selfExcluding(marker)).length, 0)
        yield* run.closeStdin
        yield* run.ended
        assert.deepStrictEqual(yield* gone(marker), [])
      })
    )
  })
}
