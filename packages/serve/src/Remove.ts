/**
 * `rm`: forget deployments that have ended. Removes the deployment's directory on the host (its
 * files and log), so `status` stops listing it; across several hosts, every rank's directory on
 * its own host, once every rank has ended. Never a running one: a server its placement
 * says is alive, or a start under way, is `DeploymentRunning` (stop it first). A host that
 * cannot be reached is its connection error, never "nothing to remove".
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import { ConnectionPool, isTransient } from "@mlops/core/ConnectionPool"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Effect, Schema } from "effect"
import * as Deployment from "./Deployment.js"
import type * as Placement from "./Placement.js"
import * as Placements from "./Placements.js"

/** The deployment still runs (or is being started): its record stays. @category errors */
export class DeploymentRunning extends Schema.TaggedError<DeploymentRunning>()("DeploymentRunning", {
  host: Schema.String,
  name: Schema.String,
  /** What runs it (`pid 1012`, a batch job's id); absent while a start is under way. */
  server: Schema.optional(Schema.String),
  fix: Schema.String
}) {
  override get message() {
    return `${this.name} on ${this.host} is ${this.server === undefined ? "being started" : `running (${this.server})`}: its record stays; ${this.fix}`
  }
}

/** Its placement cannot tell whether it still runs (a record it cannot read, a scheduler that does not answer): its record stays. @category errors */
export class RecordUnreadable extends Schema.TaggedError<RecordUnreadable>()("RecordUnreadable", {
  host: Schema.String,
  name: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `${this.name} on ${this.host}: cannot tell whether it still runs (${this.reason}): its record stays; ${this.fix}`
  }
}

/** The directory could not be removed (permissions, a busy mount). @category errors */
export class RemoveFailed extends Schema.TaggedError<RemoveFailed>()("RemoveFailed", {
  host: Schema.String,
  name: Schema.String,
  path: Schema.String,
  stderr: Schema.String
}) {
  override get message() {
    return `could not remove ${this.path} on ${this.host}: ${this.stderr.trim() || "rm failed"}`
  }
}

/** @category models */
export interface Removed {
  readonly host: string
  readonly name: string
  /** What ran it (`pid 1012`, a batch job's id); undefined when nothing was started. */
  readonly server: string | undefined
  /** How it had ended: `stopped (terminated)`, `not running`, `never started`. */
  readonly ended: string
  readonly path: string
}

const endedOf = (state: Deployment.State, seen: Placement.Inspection | undefined): string =>
  state.stopped !== undefined
    ? `stopped (${state.stopped})`
    : seen === undefined
      ? "never started"
      : seen.exit === undefined
        ? "not running"
        : seen.exit.exitCode !== null
          ? `code ${seen.exit.exitCode}`
          : `signal ${seen.exit.signal}`

/** What its placement says of a deployment's record on one host: `DeploymentRunning` unless it ended. */
const endedOn = (conn: Connection, state: Deployment.State) =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const stopIt = `stop it first: mlops stop --host ${state.ranks?.hosts[0] ?? host} --name ${state.name}`
    // what its placement says of it; a record it cannot read is never removed on a guess
    const unreadable = (error: { readonly _tag: string; readonly message: string }) =>
      isTransient(error)
        ? Effect.fail(error)
        : Effect.fail(
            new RecordUnreadable({
              host,
              name: state.name,
              reason: `${error._tag}: ${error.message}`,
              fix: `look at ${state.runDir}, stop what it started by hand, then remove it (rm -r)`
            })
          )
    const { placement, placed } = yield* Placements.ofDeployment(conn, state).pipe(
      Effect.catchAll(unreadable)
    )
    const seen =
      placed === undefined ? undefined : yield* placed.inspect(conn).pipe(Effect.catchAll(unreadable))
    if (placed !== undefined && seen?.alive === true) {
      return yield* new DeploymentRunning({
        host,
        name: state.name,
        server: placed.server.label,
        fix: stopIt
      })
    }
    if (yield* placement.starting(conn, state.runDir)) {
      return yield* new DeploymentRunning({
        host,
        name: state.name,
        fix: `a launch is starting it; wait for it to end, then ${stopIt}`
      })
    }
    return { placed, seen, unreadable }
  })

const removeOne = (conn: Connection, state: Deployment.State) =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const { placed, seen, unreadable } = yield* endedOn(conn, state)
    // what the placement keeps of an ended server beside the record (an exited container)
    if (placed !== undefined) yield* placed.discard(conn).pipe(Effect.catchAll(unreadable))
    const rm = yield* conn.exec(RemoteCommand.make(["rm", "-rf", "--", state.runDir]), {
      timeout: "30 seconds"
    })
    if (rm.exitCode !== 0) {
      return yield* new RemoveFailed({ host, name: state.name, path: state.runDir, stderr: rm.stderr })
    }
    const removed: Removed = {
      host,
      name: state.name,
      server: placed?.server.label,
      ended: endedOf(state, seen),
      path: state.runDir
    }
    return removed
  })

/**
 * A deployment's records: on one host its own; across several, every rank's on its host, and
 * only once every rank has ended (nothing is removed while one runs).
 */
const removeDeployment = (conn: Connection, state: Deployment.State) =>
  Effect.gen(function* () {
    const hosts = state.ranks?.hosts ?? []
    if (hosts.length <= 1) return [yield* removeOne(conn, state)]
    const pool = yield* ConnectionPool
    const of = state.ranks!
    const records = yield* Effect.forEach(
      hosts,
      (h, rank) =>
        Effect.flatMap(pool.get(h), (c) =>
          Effect.map(Deployment.readRank(c, state.name, of, rank), (s) =>
            s === undefined ? [] : [{ conn: c, state: s }]
          )
        ),
      { concurrency: "unbounded" }
    ).pipe(Effect.map((lists) => lists.flat()))
    yield* Effect.forEach(records, (r) => endedOn(r.conn, r.state), { discard: true })
    return yield* Effect.forEach(records, (r) => removeOne(r.conn, r.state))
  })

/**
 * Remove the records of the named deployments (each must have ended). Stops at the first one
 * that cannot be removed; the ones before it are gone.
 *
 * @category removing
 */
export const remove = Effect.fn("Remove.remove")(function* (host: string, names: ReadonlyArray<string>) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const removed: Array<Removed> = []
  for (const name of names) {
    removed.push(...(yield* removeDeployment(conn, yield* Deployment.readExisting(conn, name))))
  }
  return removed
})

/**
 * Remove the records of every deployment on the host that has ended; running ones (and starts
 * in progress) are left and named.
 *
 * @category removing
 */
export const removeEnded = Effect.fn("Remove.removeEnded")(function* (host: string) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(host)
  const removed: Array<Removed> = []
  const kept: Array<DeploymentRunning | RecordUnreadable> = []
  for (const state of yield* Deployment.list(conn)) {
    const outcome = yield* Effect.either(removeDeployment(conn, state))
    if (outcome._tag === "Right") removed.push(...outcome.right)
    else if (outcome.left instanceof DeploymentRunning || outcome.left instanceof RecordUnreadable)
      kept.push(outcome.left)
    else return yield* Effect.fail(outcome.left)
  }
  return { removed, kept }
})
