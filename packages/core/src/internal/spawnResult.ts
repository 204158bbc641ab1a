/**
 * What the detached-start script printed, read into a `DetachedInfo` or its typed refusal.
 * Shared by the live connection and the fake host, which run the same script text.
 *
 * @internal
 */
import { Effect } from "effect"
import type { DetachedInfo, ExecResult } from "../Connection.js"
import { AlreadyRunning, ProcessError, type SpawnLocked, spawnLocked } from "../Errors.js"
import { SPAWN_LOCKED, SPAWN_RUNNING } from "./shellScripts.js"

export const parseSpawnResult = (
  host: string,
  runDir: string,
  token: string,
  result: ExecResult
): Effect.Effect<DetachedInfo, ProcessError | SpawnLocked | AlreadyRunning> => {
  const lines = result.stdout.split("\n")
  const words = (lines[0] ?? "").trim().split(/\s+/)
  const failed = (reason: string) => Effect.fail(new ProcessError({ host, runDir, reason }))
  if (result.exitCode === SPAWN_LOCKED && words[0] === "locked") {
    const holder = Number(words[2])
    return Effect.fail(
      spawnLocked(
        host,
        runDir,
        words[1] ?? `${runDir}/spawn.lock`,
        Number.isInteger(holder) ? holder : undefined
      )
    )
  }
  if (result.exitCode === SPAWN_RUNNING && words[0] === "running") {
    return Effect.fail(new AlreadyRunning({ host, runDir, pgid: Number(words[1]) }))
  }
  if (result.exitCode !== 0) {
    return failed(`could not start: ${result.stderr.trim() || `exit ${result.exitCode ?? result.signal}`}`)
  }
  const [dir, log, pid, pgid, start] = lines.map((l) => l.trim())
  const info: DetachedInfo = {
    runDir: dir || runDir,
    logPath: log ?? "",
    pid: Number(pid),
    pgid: Number(pgid),
    token,
    ...(start ? { startTime: start } : {})
  }
  if (!Number.isInteger(info.pid) || !Number.isInteger(info.pgid) || info.pid <= 0 || info.pgid <= 0) {
    return failed(`unexpected output from the start script: ${JSON.stringify(result.stdout)}`)
  }
  return Effect.succeed(info)
}
