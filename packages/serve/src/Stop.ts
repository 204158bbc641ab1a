/**
 * `stop`: end a deployment for good. SIGTERM to its process group, SIGKILL after the grace
 * period (core's `RemoteProcess.stop`), then confirm through `nvidia-smi` that no process of
 * the group still holds GPU memory (a server is only stopped when its VRAM is free). The
 * deployment directory and its log stay on the host.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Duration, Effect, Schedule, Schema } from "effect"
import * as Deployment from "./Deployment.js"
import * as Placement from "./Placement.js"

/** No deployment of that name on the host. @category errors */
export class DeploymentNotFound extends Schema.TaggedError<DeploymentNotFound>()("DeploymentNotFound", {
  host: Schema.String,
  name: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    return `no deployment ${this.name} on ${this.host}; known: ${this.known.join(", ") || "(none)"}`
  }
}

/** The group is gone but some of its pids still hold GPU memory. @category errors */
export class GpuMemoryStillHeld extends Schema.TaggedError<GpuMemoryStillHeld>()("GpuMemoryStillHeld", {
  host: Schema.String,
  name: Schema.String,
  pids: Schema.Array(Schema.Number),
  usedMiB: Schema.Number,
  fix: Schema.String
}) {
  override get message() {
    return `${this.name} on ${this.host} was stopped but pid(s) ${this.pids.join(", ")} still hold ${this.usedMiB} MiB of GPU memory; ${this.fix}`
  }
}

/** @category models */
export interface StopResult {
  readonly host: string
  readonly name: string
  readonly pid: number
  readonly outcome: Placement.StopOutcome
}

/**
 * The pids of a process group (`pgrep -g`); just the leader when the tool is missing.
 *
 * @category inspecting
 */
export const groupPids = (conn: Connection, proc: { readonly pid: number; readonly pgid: number }) =>
  conn.exec(RemoteCommand.make(["pgrep", "-g", String(proc.pgid)]), { timeout: "10 seconds" }).pipe(
    Effect.map((result) => {
      const pids = result.stdout
        .split("\n")
        .map((line) => Number(line.trim()))
        .filter((n) => Number.isInteger(n) && n > 0)
      return [...new Set([proc.pid, proc.pgid, ...pids])]
    })
  )

/**
 * GPU memory (MiB) held by the given pids, and which of them hold some.
 *
 * @category inspecting
 */
export const gpuMemoryOf = (conn: Connection, pids: ReadonlyArray<number>) =>
  Effect.map(Probes.gpuProcesses(conn), (apps) => {
    const mine = apps.filter((app) => pids.includes(app.pid))
    return {
      pids: [...new Set(mine.map((app) => app.pid))],
      usedMiB: mine.reduce((sum, app) => sum + (app.usedMemoryMiB ?? 0), 0)
    }
  })

/**
 * Stop a deployment and confirm its GPU memory is free.
 *
 * @category programs
 */
export const stop = Effect.fn("Stop.stop")(function* (
  host: string,
  name: string,
  options: { readonly grace?: Duration.DurationInput; readonly confirmWithin?: Duration.DurationInput } = {}
) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const state = yield* Deployment.read(conn, name)
  const proc = state === undefined ? undefined : Deployment.processOf(host, state)
  if (state === undefined || proc === undefined) {
    return yield* new DeploymentNotFound({ host, name, known: yield* Deployment.names(conn) })
  }
  const placement = Placement.of(state)
  // a batch job's processes and GPUs are on its compute node: the scheduler's end of the job
  // (which `stop` waits for) is the confirmation there
  if (proc.job !== undefined) {
    const outcome = yield* placement.stop(conn, proc, options.grace)
    return { host, name, pid: proc.pid, outcome } satisfies StopResult
  }
  const pids = yield* groupPids(conn, proc)
  const outcome = yield* placement.stop(conn, proc, options.grace)
  // drivers release VRAM a moment after the process is gone: poll briefly before deciding
  const within = Duration.decode(options.confirmWithin ?? "10 seconds")
  const held = yield* gpuMemoryOf(conn, pids).pipe(
    Effect.filterOrFail(
      (h) => h.pids.length === 0,
      (h) => h
    ),
    Effect.retry(Schedule.spaced("500 millis").pipe(Schedule.upTo(within))),
    Effect.catchIf(
      (e): e is { readonly pids: Array<number>; readonly usedMiB: number } => "usedMiB" in e,
      (h) => Effect.succeed(h)
    )
  )
  if (held.pids.length > 0) {
    return yield* new GpuMemoryStillHeld({
      host,
      name,
      pids: held.pids,
      usedMiB: held.usedMiB,
      fix: `kill them (ssh ${host} kill -9 ${held.pids.join(" ")}) and check nvidia-smi`
    })
  }
  return { host, name, pid: proc.pid, outcome } satisfies StopResult
})
