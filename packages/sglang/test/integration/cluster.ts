/**
 * Several network-namespace test hosts running the stand-in SGLang (core's `Cluster`, with this
 * package's stand-in installed once for all of them).
 */
import { Effect, type Scope } from "effect"
import * as CoreCluster from "../../../core/test/support/Cluster.js"
import type { NetHostsError } from "../../../core/test/support/NetHosts.js"
import type { SshdError } from "../../../core/test/support/Sshd.js"
import * as Standin from "./standin/install.js"

export { gpuHolders, on, processesOf } from "../../../core/test/support/Cluster.js"

/** The hosts, their sshds, state and GPU directories, and the layer that reaches them. */
export type Cluster = CoreCluster.Cluster<Standin.Standin>

/** `count` hosts running the stand-in SGLang. */
export const make = (
  count: number
): Effect.Effect<Cluster, Standin.StandinError | NetHostsError | SshdError, Scope.Scope> =>
  Effect.flatMap(Standin.install, (standin) => CoreCluster.on(count, standin))
