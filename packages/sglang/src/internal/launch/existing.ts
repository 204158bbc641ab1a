/**
 * Idempotence: a deployment of the same name that is alive. Same args and healthy → it is
 * the result (`AlreadyRunning`); otherwise `DeploymentExists`, unless `replace` (then it is
 * stopped first).
 *
 * @internal
 */

import type { Connection } from "@mlops/core/Connection"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import { Effect } from "effect"
import * as Deployment from "../../Deployment.js"
import { isHealthy } from "./readiness.js"
import { DeploymentExists, type LaunchProgress, type LaunchRequest } from "./types.js"

const sameArgs = (
  state: Deployment.State,
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
) =>
  state.argv !== undefined &&
  (JSON.stringify(state.argv.requestedArgv) === JSON.stringify(argv) ||
    JSON.stringify(state.argv.argv) === JSON.stringify(argv)) &&
  JSON.stringify(Object.entries(state.meta?.env ?? {}).sort()) === JSON.stringify(Object.entries(env).sort())

const healthy = (conn: Connection, port: number) => isHealthy(conn, port, "10 seconds")

/** The running deployment to return, or undefined when a new one must be started. */
export const check = Effect.fn("Launch.existing")(function* (
  conn: Connection,
  o: {
    readonly request: LaunchRequest
    readonly name: string
    readonly port: number
    readonly env: Readonly<Record<string, string>>
    readonly emit: (p: LaunchProgress) => Effect.Effect<void>
  }
) {
  const { request, name, port, env, emit } = o
  const host = conn.host.alias
  const existing = yield* Deployment.read(conn, name)
  const existingAlive =
    existing?.pgid !== undefined ? yield* RemoteProcess.isAlive(conn, { pgid: existing.pgid }) : false
  if (existing !== undefined && existingAlive) {
    const same = sameArgs(existing, request.argv, env)
    const port0 = existing.meta?.port ?? port
    if (same && (yield* healthy(conn, port0))) {
      const deployment = Deployment.fromState(host, existing)
      if (deployment !== undefined) {
        yield* emit({ _tag: "AlreadyRunning", deployment })
        return deployment
      }
    }
    if (request.replace !== true) {
      return yield* new DeploymentExists({
        host,
        name,
        pid: existing.pid ?? existing.pgid ?? 0,
        reason: same ? "it runs with these args but is not healthy (yet)" : "it runs with different args",
        runningArgv: existing.argv?.argv ?? [],
        fix: `pass replace (--replace) to stop it first, or choose another name (--name ${name}-2)`
      })
    }
    // the pid files were just read: attach (which reads them again) only to report a broken record
    const proc = Deployment.processOf(host, existing) ?? (yield* RemoteProcess.attach(conn, existing.runDir))
    const outcome = yield* RemoteProcess.stop(conn, proc)
    yield* emit({ _tag: "Replacing", name, pid: proc.pid, outcome })
  }

  return undefined
})
