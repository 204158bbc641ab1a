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
import * as TestSlurm from "./Slurm.js"
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

/** A Slurm cluster whose compute nodes are hosts of their own, and the login node that reaches it. */
export interface SlurmNodes<S extends StandinInstall> {
  readonly standin: S
  /** The compute nodes' namespaces and addresses (`node-a`, `node-b`, ... in order). */
  readonly hosts: ReadonlyArray<NetHosts.NetHost>
  readonly slurm: TestSlurm.SlurmCluster
  /** Each node's GPU registry (bind-mounted over the venv's `standin-gpu` for its slurmd and jobs). */
  readonly gpuDirs: ReadonlyArray<string>
  readonly layer: Layer.Layer<ConnectionPool.ConnectionPool | Hosts.Hosts, ConfigError.ConfigError>
}

/**
 * `count` Slurm compute nodes, each a network namespace with a slurmd and a GPU registry of its
 * own, running the stand-in install (one venv on the shared filesystem, as a cluster's would
 * be); the harness sshd on this machine is the login node `login` (hosts.json gives it the
 * venv and a state directory), with `SLURM_CONF` set for its sessions.
 */
export const slurmNodes = <S extends StandinInstall>(
  count: number,
  standin: S,
  login: string
): Effect.Effect<
  SlurmNodes<S>,
  NetHosts.NetHostsError | Sshd.SshdError | TestSlurm.SlurmClusterError,
  Scope.Scope
> =>
  Effect.gen(function* () {
    const hosts = yield* NetHosts.make(count)
    const names = hosts.map((_, i) => `node-${String.fromCharCode(97 + i)}`)
    const registry = path.join(standin.venv, "standin-gpu")
    fs.mkdirSync(registry, { recursive: true })
    const gpuDirs = names.map((name) => {
      const dir = path.join(path.dirname(standin.stateDir), "gpu", name)
      fs.mkdirSync(dir, { recursive: true })
      return dir
    })
    const slurm = yield* TestSlurm.start({
      minJobAge: 30,
      nodes: hosts.map((host, i) => ({
        name: names[i]!,
        namespace: host.name,
        address: host.address,
        binds: [{ from: gpuDirs[i]!, to: registry }]
      }))
    })
    const sshd = yield* Sshd.start({
      alias: login,
      extraConfig: withSetEnv(standin.sshdConfig, [`SLURM_CONF=${slurm.confPath}`])
    })
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({ hosts: { [login]: { python: standin.venv, stateDir: standin.stateDir } } })
    )
    const layer = ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome }))
    )
    return { standin, hosts, slurm, gpuDirs, layer }
  })

/** On each of these GPU registries, the live processes holding stand-in GPU memory (their pids). */
export const registryHolders = (gpuDirs: ReadonlyArray<string>): ReadonlyArray<ReadonlyArray<number>> =>
  gpuDirs.map((dir) =>
    fs
      .readdirSync(dir)
      .filter((entry) => /^\d+$/.test(entry))
      .flatMap((pid) => {
        try {
          const started = fs.readFileSync(path.join(dir, pid), "utf8").trim().split(/\s+/)[2]
          const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
          const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
          return fields[0] !== "Z" && fields[19] === started ? [Number(pid)] : []
        } catch {
          return []
        }
      })
  )

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
  registryHolders(cluster.gpuDirs).map((pids) => pids.length)

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

/** The live processes whose command line holds `marker` and `--node-rank N`: pid and rank, zombies aside. */
const rankProcesses = (marker: string): ReadonlyArray<{ readonly pid: number; readonly rank: number }> =>
  execFileSync("ps", ["-A", "-o", "pid=", "-o", "stat=", "-o", "args="], { encoding: "utf8" })
    .split("\n")
    .flatMap((line) => {
      const [pid, stat, ...args] = line.trim().split(/\s+/)
      const command = args.join(" ")
      const rank = /--node-rank (\d+)/.exec(command)
      return pid === undefined || stat?.startsWith("Z") || rank === null || !command.includes(marker)
        ? []
        : [{ pid: Number(pid), rank: Number(rank[1]) }]
    })

/** A live process of rank `rank` (its `--node-rank`) of a command holding `marker`, if one runs. */
export const rankPid = (rank: number, marker: string): number | undefined =>
  rankProcesses(marker).find((p) => p.rank === rank)?.pid

/**
 * Where each rank runs: the live processes whose command line holds `marker` and `--node-rank N`,
 * each rank's network namespace among `hosts` (by the inode of `/proc/<pid>/ns/net`), rank order.
 */
export const rankHosts = (
  hosts: ReadonlyArray<NetHosts.NetHost>,
  marker: string
): ReadonlyArray<{ readonly rank: number; readonly host: string | undefined }> => {
  const inode = (file: string) => {
    try {
      return fs.statSync(file).ino
    } catch {
      return undefined
    }
  }
  const namespaces = hosts.map((host) => ({ name: host.name, inode: inode(`/var/run/netns/${host.name}`) }))
  const found = new Map<number, string | undefined>()
  for (const { pid, rank } of rankProcesses(marker)) {
    const net = inode(`/proc/${pid}/ns/net`)
    found.set(rank, namespaces.find((n) => n.inode === net)?.name)
  }
  return [...found.entries()].sort(([a], [b]) => a - b).map(([rank, host]) => ({ rank, host }))
}
