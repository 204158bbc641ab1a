import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Liveness from "../../src/internal/groupLiveness.js"

/** procps output (`ps -A -o pgid= -o stat=`): right-aligned pgids, state letters with flags. */
const procps = ["    1 Ss", "  812 Ssl", " 4242 S", " 4242 Z", " 4242 R+", " 5000 Z+", " 6000 X", ""].join(
  "\n"
)

describe("groupLiveness", () => {
  it("parsePsTable reads PGID STAT rows and skips a header line", () => {
    assert.deepStrictEqual(Liveness.parsePsTable("PGID STAT\n   12 S\n   13 Z<\n"), [
      { pgid: 12, stat: "S" },
      { pgid: 13, stat: "Z<" }
    ])
  })

  it("isRunningStat: zombies (Z) and dead (X) are not running; every other state is", () => {
    for (const stat of ["S", "Ssl", "R+", "D", "T", "I<"]) assert.isTrue(Liveness.isRunningStat(stat), stat)
    for (const stat of ["Z", "Z+", "Zs", "X"]) assert.isFalse(Liveness.isRunningStat(stat), stat)
  })

  it("groupRuns: a group with a running member runs; zombie-only, dead-only and absent groups do not", () => {
    assert.isTrue(Liveness.groupRuns(procps, 4242))
    assert.isTrue(Liveness.groupRuns(procps, 812))
    assert.isFalse(Liveness.groupRuns(procps, 5000))
    assert.isFalse(Liveness.groupRuns(procps, 6000))
    assert.isFalse(Liveness.groupRuns(procps, 7))
  })

  it("groupRuns is undefined for output that is no process table", () => {
    assert.isUndefined(Liveness.groupRuns("", 1))
    assert.isUndefined(Liveness.groupRuns("ps: unknown option -A\nusage: ps\n", 1))
  })

  // The shell loop must say what the TS parser says: run it against a stub `ps` printing each
  // table, for a real (throwaway) process group it can SIGKILL first.
  it.live("killAndConfirmScript agrees with groupRuns on every table", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-liveness-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      fs.writeFileSync(path.join(dir, "ps"), '#!/bin/sh\ncat "$TABLE"\n', { mode: 0o755 })
      const states = ["S", "Ssl", "R+", "Z", "Z+", "X", undefined]
      for (const stat of states) {
        const group = spawn("sleep", ["30"], { detached: true, stdio: "ignore" })
        const pgid = group.pid!
        const table = ["PGID STAT", "    1 Ss", ...(stat === undefined ? [] : [`${pgid} ${stat}`]), ""].join(
          "\n"
        )
        fs.writeFileSync(path.join(dir, "table"), table)
        const exitCode = yield* Effect.async<number>((resume) => {
          execFile(
            "sh",
            ["-c", Liveness.killAndConfirmScript, "mlops-kill", String(pgid), "3"],
            { env: { ...process.env, PATH: `${dir}:${process.env.PATH}`, TABLE: path.join(dir, "table") } },
            (error) => resume(Effect.succeed(error === null ? 0 : Number(error.code)))
          )
        })
        assert.strictEqual(exitCode, Liveness.groupRuns(table, pgid) ? 3 : 0, `state ${stat}`)
        assert.strictEqual(group.signalCode ?? (yield* Effect.promise(() => once(group))), "SIGKILL")
      }
    }).pipe(Effect.scoped)
  )
})

const once = (child: ReturnType<typeof spawn>) =>
  new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)))
