/**
 * Several network-namespace test hosts running the stand-in SGLang (core's `Cluster`, with this
 * package's stand-in installed once for all of them).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import * as SampleModels from "@mlops/serve/SampleModels"
import { Effect, type Scope } from "effect"
import * as CoreCluster from "../../../core/test/support/Cluster.js"
import type { NetHostsError } from "../../../core/test/support/NetHosts.js"
import type { SshdError } from "../../../core/test/support/Sshd.js"
import * as Standin from "./standin/install.js"

export {
  gpuHolders,
  killRank,
  on,
  processesOf,
  rankHosts,
  rankPid,
  registryHolders,
  slurmNodes
} from "../../../core/test/support/Cluster.js"

/** The hosts, their sshds, state and GPU directories, and the layer that reaches them. */
export type Cluster = CoreCluster.Cluster<Standin.Standin>

/** `count` hosts running the stand-in SGLang. */
export const make = (
  count: number
): Effect.Effect<Cluster, Standin.StandinError | NetHostsError | SshdError, Scope.Scope> =>
  Effect.flatMap(Standin.install, (standin) => CoreCluster.on(count, standin))

/**
 * A Llama-like model whose attention heads split 2, 4 and 6 ways (48 heads, 6 KV heads):
 * Qwen3.6-27B's GDN dimension does not split six ways, three hosts of two ranks need one that
 * does. Written under the stand-in's directory; its path.
 */
export const sixWayModel = (cluster: Cluster): string => {
  const model = path.join(cluster.standin.dir, "models", "Llama-48-heads")
  fs.mkdirSync(model, { recursive: true })
  fs.writeFileSync(
    path.join(model, "config.json"),
    JSON.stringify({
      ...SampleModels.llama3_8b,
      num_attention_heads: 48,
      num_key_value_heads: 6,
      hidden_size: 6144
    })
  )
  return model
}
