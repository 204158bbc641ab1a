/**
 * Several test hosts for a deployment across hosts: each a network namespace of its own (its
 * own address, its own sshd), all running a stand-in engine from one venv (the same install on
 * every host, as a cluster's shared image would be) with a GPU registry of its own (bind-mounted
 * over the venv's, for the host's sshd and what it starts only), so each host's stand-in
 * `nvidia-smi` sees its own ranks' memory. hosts.json gives each its Python environment and a
 * state directory of its own.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { type ConfigError, Effect, Layer, type Scope } from "effect"
import * as ConnectionPool from "../../src/ConnectionPool.js"
import * as Hosts from "../../src/Hosts.js"
import * as NetHosts from "./NetHosts.js"
import { withSetEnv } from "./Slurm.js"
import * as Sshd from "./Sshd.js"

/** What a stand-in engine install gives the hosts: its venv, the sshd lines for it, the client's mlops home and a state directory. */
export interface StandinInstall {
  readonly venv: string
  readonly sshdConfig: ReadonlyArray<string>
  readonly mlopsHome: string
  readonly stateDir: string
}

/** The hosts (`node-a`, `node-b`, ... in rank order), their namespaces and sshds, each host's state directory (its deployments under `deployments/<name>`) and GPU registry, and the layer that reaches them. */
export interface Cluster<S extends StandinInstall> {
  readonly standin: S
  readonly aliases: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<NetHosts.NetHost>
  readonly sshds: ReadonlyArray<Sshd.Sshd>
  readonly stateDirs: ReadonlyArray<string>
  /** Each host's GPU registry (bind-mounted over the venv's `standin-gpu` for that host). */
  readonly gpuDirs: ReadonlyArray<string>
  readonly layer: Layer.Layer<ConnectionPool.ConnectionPool | Hosts.Hosts, ConfigError.ConfigError>
  /** An ssh_config naming every host. */
  readonly sshConfig: string
}

/** What a host gets besides the stand-in: more of its hosts.json entry and its sessions' environment. */
export interface HostSetup {
  /** More fields of its hosts.json entry (`image`, `runtime`), replacing `python` when `image` is given. */
  readonly entry?: Readonly<Record<string, unknown>>
  /** Its ssh sessions' environment (sshd `SetEnv`), e.g. the `DOCKER_HOST` of its own daemon. */
  readonly env?: Readonly<Record<string, string>>
}

/** A host's part of a cluster, before its sshd starts: its namespace, its index and its GPU registry. */
export type Setup<E> = (
  host: NetHosts.NetHost,
  index: number,
  gpuDir: string
) => Effect.Effect<HostSetup, E, Scope.Scope>

/**
 * `count` hosts running the given stand-in install (one venv for all, as a shared image would
 * be); `setup` gives each host more (a container engine of its own, started in its namespace).
 */
export const on = <S extends StandinInstall, E = never>(
  count: number,
  standin: S,
  setup?: Setup<E>
): Effect.Effect<Cluster<S>, NetHosts.NetHostsError | Sshd.SshdError | E, Scope.Scope> =>
  Effect.gen(function* () {
    const hosts = yield* NetHosts.make(count)
    const aliases = hosts.map((_, i) => `node-${String.fromCharCode(97 + i)}`)
    const registry = path.join(standin.venv, "standin-gpu")
    fs.mkdirSync(registry, { recursive: true })
    const gpuDirs = aliases.map((alias) => {
      const dir = path.join(path.dirname(standin.stateDir), "gpu", alias)
      fs.mkdirSync(dir, { recursive: true })
      return dir
    })
    const stateDirs = aliases.map((alias) => path.join(standin.stateDir, alias))
    const setups = yield* Effect.forEach(hosts, (host, i) =>
      setup === undefined ? Effect.succeed<HostSetup>({}) : setup(host, i, gpuDirs[i]!)
    )
    const sshds = yield* Effect.forEach(hosts, (host, i) => {
      const env = Object.entries(setups[i]!.env ?? {}).map(([key, value]) => `${key}=${value}`)
      return Sshd.start({
        alias: aliases[i]!,
        namespace: host,
        extraConfig: env.length === 0 ? standin.sshdConfig : withSetEnv(standin.sshdConfig, env),
        binds: [{ from: gpuDirs[i]!, to: registry }]
      })
    })
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({
        hosts: Object.fromEntries(
          aliases.map((alias, i) => {
            const entry = setups[i]!.entry ?? {}
            return [
              alias,
              { ...("image" in entry ? {} : { python: standin.venv }), stateDir: stateDirs[i], ...entry }
            ]
          })
        )
      })
    )
    const config = path.join(sshds[0]!.dir, "ssh_config.all")
    fs.writeFileSync(config, sshds.map((s) => fs.readFileSync(s.sshConfigPath, "utf8")).join("\n"))
    const layer = ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: standin.mlopsHome }))
    )
    return { standin, aliases, hosts, sshds, stateDirs, gpuDirs, layer, sshConfig: config }
  })

/** The live processes (`pid args`) of this deployment's process group on each host (its `pgid` file), zombies aside. */
export const processesOf = (
  cluster: { readonly stateDirs: ReadonlyArray<string> },
  name: string
): ReadonlyArray<ReadonlyArray<string>> => {
  const table = execFileSync("ps", ["-A", "-o", "pid=", "-o", "pgid=", "-o", "stat=", "-o", "args="], {
    encoding: "utf8"
  })
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
  return cluster.stateDirs.map((dir) => {
    const pgidFile = path.join(dir, "deployments", name, "pgid")
    if (!fs.existsSync(pgidFile)) return []
    const pgid = fs.readFileSync(pgidFile, "utf8").trim()
    return table
      .filter(([, group, stat]) => group === pgid && !stat?.startsWith("Z"))
      .map((words) => `${words[0]} ${words.slice(3).join(" ")}`)
  })
}

/**
 * On each host, the processes holding fake GPU memory: registry files whose process still runs
 * (the same start time, not a zombie), as the stand-in `nvidia-smi` counts them.
 */
export const gpuHolders = (cluster: { readonly gpuDirs: ReadonlyArray<string> }): ReadonlyArray<number> =>
  cluster.gpuDirs.map(
    (dir) =>
      fs.readdirSync(dir).filter((pid) => {
        try {
          const started = fs.readFileSync(path.join(dir, pid), "utf8").trim().split(/\s+/)[2]
          const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
          const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
          return fields[0] !== "Z" && fields[19] === started
        } catch {
          return false
        }
      }).length
  )

/**
 * Kill rank `rank`'s whole process group (its `pgid` file on its host), as a node dies: SIGKILL,
 * supervisor included, so no exit status is written. The moment of the kill, epoch ms.
 */
export const killRank = (
  cluster: { readonly stateDirs: ReadonlyArray<string> },
  rank: number,
  name: string
): number => {
  const pgid = Number(
    fs.readFileSync(path.join(cluster.stateDirs[rank]!, "deployments", name, "pgid"), "utf8").trim()
  )
  const at = Date.now()
  process.kill(-pgid, "SIGKILL")
  return at
}
