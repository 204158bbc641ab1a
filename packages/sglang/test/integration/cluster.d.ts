import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import { Effect, Layer } from "effect"
import * as NetHosts from "../../../core/test/support/NetHosts.js"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as Standin from "./standin/install.js"
/**
 * The hosts (`node-a`, `node-b`, ... in rank order), their namespaces and sshds, each host's
 * state directory (its deployments under `deployments/<name>`) and GPU registry, and the layer
 * that reaches them.
 */
export type Cluster<S extends StandinInstall = Standin.Standin> = Effect.Effect.Success<
  ReturnType<typeof on<S>>
>
/** What a stand-in engine install gives the hosts: its venv, the sshd lines for it, the client's mlops home and a state directory. */
export interface StandinInstall {
  readonly venv: string
  readonly sshdConfig: ReadonlyArray<string>
  readonly mlopsHome: string
  readonly stateDir: string
}
/** `count` hosts running the stand-in SGLang. */
export declare const make: (count: number) => Effect.Effect<
  {
    standin: Standin.Standin
    aliases: string[]
    hosts: readonly NetHosts.NetHost[]
    sshds: Sshd.Sshd[]
    stateDirs: string[]
    gpuDirs: string[]
    layer: Layer.Layer<
      ConnectionPool.ConnectionPool | Hosts.Hosts,
      import("effect/ConfigError").ConfigError,
      never
    >
    sshConfig: string
  },
  Standin.StandinError | NetHosts.NetHostsError | Sshd.SshdError,
  import("effect/Scope").Scope
>
/** `count` hosts running the given stand-in install (one venv for all, as a shared image would be). */
export declare const on: <S extends StandinInstall>(
  count: number,
  standin: S
) => Effect.Effect<
  {
    standin: S
    aliases: string[]
    hosts: readonly NetHosts.NetHost[]
    sshds: Sshd.Sshd[]
    stateDirs: string[]
    gpuDirs: string[]
    layer: Layer.Layer<
      ConnectionPool.ConnectionPool | Hosts.Hosts,
      import("effect/ConfigError").ConfigError,
      never
    >
    sshConfig: string
  },
  NetHosts.NetHostsError | Sshd.SshdError,
  import("effect/Scope").Scope
>
/** The live processes (`pid args`) of this deployment's process group on each host (its `pgid` file), zombies aside. */
export declare const processesOf: (
  cluster: {
    readonly stateDirs: ReadonlyArray<string>
  },
  name: string
) => ReadonlyArray<ReadonlyArray<string>>
/**
 * On each host, the processes holding fake GPU memory: registry files whose process still runs
 * (the same start time, not a zombie), as the stand-in `nvidia-smi` counts them.
 */
export declare const gpuHolders: (cluster: {
  readonly gpuDirs: ReadonlyArray<string>
}) => ReadonlyArray<number>
//# sourceMappingURL=cluster.d.ts.map
