/**
 * The placements the serving programs know, in order of preference: a Slurm job from a login
 * node (hosts whose hosts.json entry has `"slurm"`), then a container on the SSH host (for an
 * image runtime), then a detached process group on the SSH host (for a command on the host). A service with this default: provide another registry
 * (`Effect.provideService(Placements.Placements, [...])`) to add a placement. Adding one is one
 * module and one entry here.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { HostConfig } from "@mlops/core/HostConfig"
import { Context, Effect } from "effect"
import * as ContainerPlacement from "./ContainerPlacement.js"
import * as Deployment from "./Deployment.js"
import * as Placement from "./Placement.js"
import * as ProcessGroupPlacement from "./ProcessGroupPlacement.js"
import type * as Runtime from "./Runtime.js"
import * as SlurmPlacement from "./SlurmPlacement.js"

/** What the registry's placements fail with (one member per placement). @category models */
export type PlacementError = SlurmPlacement.Error | ContainerPlacement.Error | ProcessGroupPlacement.Error

/** The built-in placements, in order. @category registries */
export const builtIn: Placement.Registry<PlacementError> = [
  SlurmPlacement.kind,
  ContainerPlacement.kind,
  ProcessGroupPlacement.kind
]

/** The registry the programs use. @category services */
export class Placements extends Context.Reference<Placements>()("@mlops/serve/Placements", {
  defaultValue: (): Placement.Registry<PlacementError> => builtIn
}) {}

/**
 * The placement for a launch on `host` of what a runtime of `form` makes (what `asked` names,
 * else what the host's entry makes it).
 *
 * @category resolving
 */
export const resolve = (
  host: HostConfig,
  form: Runtime.Form,
  asked?: Placement.Spec
): Effect.Effect<Placement.Placement<PlacementError>, Placement.InvalidPlacement> =>
  Effect.flatMap(Placements, (registry) => Placement.resolve(registry, host, form, asked))

/** The placement a deployment's record names, on the host `conn` reaches. @category resolving */
export const ofRecord = (
  conn: Connection,
  spec: Placement.Spec
): Effect.Effect<Placement.Placement<PlacementError>, Placement.InvalidPlacement> =>
  Effect.flatMap(Placements, (registry) => Placement.fromRecord(registry, spec, conn.host))

/**
 * The placement a deployment's record names (a record without `meta.json`: what the host's
 * entry makes it) and the server it records (undefined when none was started).
 *
 * @category reading
 */
export const ofDeployment = (conn: Connection, state: Deployment.State) =>
  Effect.gen(function* () {
    // a record from before specs were stored ran a command on the host
    const placement =
      state.meta === undefined
        ? yield* resolve(conn.host, "OnHost")
        : yield* ofRecord(conn, Deployment.placementOf(state.meta))
    const placed = yield* placement.attach(conn, { runDir: state.runDir, logPath: state.logPath })
    return { placement, placed }
  })

/**
 * The servers of the host's deployments that were not stopped, by deployment name (a record
 * that cannot be read is left out): what "is this process one of ours" asks.
 *
 * @category reading
 */
export const liveServers = (conn: Connection) =>
  Effect.gen(function* () {
    const states = (yield* Deployment.list(conn)).filter((state) => state.stopped === undefined)
    const found = yield* Effect.forEach(
      states,
      (state) =>
        ofDeployment(conn, state).pipe(
          Effect.map(({ placed }) => (placed === undefined ? [] : [{ name: state.name, placed }])),
          Effect.orElseSucceed(() => [])
        ),
      { concurrency: 4 }
    )
    return found.flat()
  })
