/**
 * A real single-node Slurm (Debian's 22.05 packages) for integration tests and benches: munged,
 * slurmctld and slurmd started as root in the foreground under a throwaway directory, with a
 * generated munge key and slurm.conf (proctrack/linuxproc, task/none, jobcomp/filetxt,
 * cons_tres) and two fake GPUs (`File=/dev/null`, `File=/dev/zero`) on one node named after
 * this machine. Ports are free ones, so several clusters can run at once. Every daemon it
 * starts is stopped by pid when the scope closes (jobs are cancelled first: their slurmstepd
 * is not a child of slurmd).
 *
 * Clients find the cluster through `SLURM_CONF`; `loginNode` starts the harness sshd with
 * `SetEnv SLURM_CONF=...`, so commands over SSH see it as a login node's `/etc/slurm` would.
 *
 * ```ts
 * layer(Slurm.loginNode(), { excludeTestServices: true })((it) => { ... })
 * ```
 */

import { type ChildProcess, execFile, type SpawnOptions, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Context, Data, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import * as Sshd from "./Sshd.js"

export class SlurmClusterError extends Data.TaggedError("SlurmClusterError")<{ readonly reason: string }> {
  override get message() {
    return `test Slurm cluster: ${this.reason}`
  }
}

export interface SlurmClusterOptions {
  /** Seconds a finished job stays known to slurmctld (MinJobAge); default 300. */
  readonly minJobAge?: number
  /** Extra slurm.conf lines. */
  readonly extraConfig?: ReadonlyArray<string>
  /**
   * Compute nodes that are hosts of their own (`NetHosts`): a slurmd in each namespace (joined
   * with `nsenter`, so /sys and its cgroups stay), `NodeAddr` its address, slurmctld reached at
   * the bridge's; each node's `binds` mounted for its slurmd and the jobs' processes only (a
   * mount namespace of its own). Default: one node, this machine, at 127.0.0.2.
   */
  readonly nodes?: ReadonlyArray<NetNode>
}

/** A compute node in a network namespace. */
export interface NetNode {
  readonly name: string
  readonly namespace: string
  readonly address: string
  readonly binds?: ReadonlyArray<{ readonly from: string; readonly to: string }>
}

export interface SlurmCluster {
  readonly dir: string
  /** The generated slurm.conf (what `SLURM_CONF` names). */
  readonly confPath: string
  /** The (first) node: this machine's short hostname, or the first of `options.nodes`. */
  readonly node: string
  /** Every node, in the order given. */
  readonly nodes: ReadonlyArray<string>
  /**
   * The node's `NodeAddr`: a loopback address other than 127.0.0.1, so that a server on the node
   * (listening there) and the login node's own loopback are told apart, as on a real cluster.
   */
  readonly nodeAddress: string
  /** The default partition (no time limit). */
  readonly partition: string
  /** A partition with `MaxTime=00:10:00`. */
  readonly shortPartition: string
  /** GPUs of GRES `gpu` on the node. */
  readonly gpus: number
  /** What a client of this cluster needs in its environment. */
  readonly env: { readonly SLURM_CONF: string }
  /** sshd_config lines making the harness sshd a login node of this cluster. */
  readonly sshdConfig: ReadonlyArray<string>
  /** Run a Slurm client command locally against this cluster (test setup and assertions). */
  readonly client: (command: string, args: ReadonlyArray<string>) => Effect.Effect<string, SlurmClusterError>
  /** What the daemons printed so far (for failing-test diagnostics). */
  readonly log: () => string
}

export class TestSlurm extends Context.Tag("@mlops/core/test/Slurm")<TestSlurm, SlurmCluster>() {}

const PARTITION = "debug"
/** A second partition over the same node, with a 10-minute MaxTime. */
const SHORT_PARTITION = "short"
const GPU_FILES = ["/dev/null", "/dev/zero"]
/** Where the node is reached (its slurmd listens on every address of this machine). */
const NODE_ADDRESS = "127.0.0.2"

const userIds = (name: string): { uid: number; gid: number } | undefined => {
  const line = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((entry) => entry.startsWith(`${name}:`))
  if (line === undefined) return undefined
  const [, , uid, gid] = line.split(":")
  return { uid: Number(uid), gid: Number(gid) }
}

const slurmConf = (
  dir: string,
  controller: { readonly name: string; readonly address: string },
  nodes: ReadonlyArray<{ readonly name: string; readonly address: string }>,
  ports: { ctld: number; slurmd: number },
  options: SlurmClusterOptions
) =>
  [
    "ClusterName=mlopsci",
    `SlurmctldHost=${controller.name}(${controller.address})`,
    `SlurmctldPort=${ports.ctld}`,
    `SlurmdPort=${ports.slurmd}`,
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    "CredType=cred/munge",
    `AuthInfo=socket=${path.join(dir, "munge-run", "munge.sock")}`,
    `StateSaveLocation=${path.join(dir, "state")}`,
    // one slurmd per node on this machine: each its own (%n: the node's name)
    `SlurmdSpoolDir=${path.join(dir, "spool", "%n")}`,
    `SlurmctldPidFile=${path.join(dir, "slurmctld.pid")}`,
    `SlurmdPidFile=${path.join(dir, "slurmd.%n.pid")}`,
    `SlurmctldLogFile=${path.join(dir, "slurmctld.log")}`,
    `SlurmdLogFile=${path.join(dir, "slurmd.%n.log")}`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/filetxt",
    `JobCompLoc=${path.join(dir, "jobcomp.txt")}`,
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_Core",
    "MpiDefault=none",
    "ReturnToService=2",
    // scancel's SIGTERM → SIGKILL grace (default 30 s)
    "KillWait=2",
    `MinJobAge=${options.minJobAge ?? 300}`,
    "GresTypes=gpu",
    ...nodes.map(
      (node) =>
        `NodeName=${node.name} NodeAddr=${node.address} CPUs=2 RealMemory=2000 Gres=gpu:${GPU_FILES.length} State=UNKNOWN`
    ),
    `PartitionName=${PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP`,
    `PartitionName=${SHORT_PARTITION} Nodes=ALL MaxTime=00:10:00 State=UP`,
    ...(options.extraConfig ?? []),
    ""
  ].join("\n")

const gresConf = (nodes: ReadonlyArray<string>) =>
  [
    "AutoDetect=off",
    ...nodes.flatMap((node) => GPU_FILES.map((file) => `NodeName=${node} Name=gpu File=${file}`)),
    ""
  ].join("\n")

const kill = (pid: number | undefined, signal: NodeJS.Signals) => {
  if (pid === undefined) return
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

const waitExit = (child: ChildProcess, within: Duration.DurationInput) =>
  Effect.async<boolean>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.succeed(true))
    child.once("exit", () => resume(Effect.succeed(true)))
  }).pipe(
    Effect.timeout(within),
    Effect.orElseSucceed(() => false)
  )

/** SIGTERM, then SIGKILL if it has not exited within 5 s. */
const stopDaemon = (child: ChildProcess) =>
  Effect.gen(function* () {
    kill(child.pid, "SIGTERM")
    if (!(yield* waitExit(child, "5 seconds"))) {
      kill(child.pid, "SIGKILL")
      yield* waitExit(child, "5 seconds")
    }
  })

/** Start a scoped cluster; stopped (and its directory removed) when the scope closes. Needs root. */
export const start = (
  options: SlurmClusterOptions = {}
): Effect.Effect<SlurmCluster, SlurmClusterError, Scope.Scope> =>
  Effect.gen(function* () {
    const fail = (reason: string) => new SlurmClusterError({ reason })
    if (process.getuid?.() !== 0) return yield* fail("needs root (it starts munged, slurmctld and slurmd)")
    const munge = userIds("munge")
    if (munge === undefined || !fs.existsSync("/usr/sbin/slurmctld"))
      return yield* fail("Slurm is not installed: apt-get install -y slurmctld slurmd slurm-client munge")

    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-slurm-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    const machine = os.hostname().split(".")[0]!
    const nodes =
      options.nodes === undefined
        ? [{ name: machine, address: NODE_ADDRESS }]
        : options.nodes.map((n) => ({ name: n.name, address: n.address }))
    const node = nodes[0]!.name
    // slurmctld on this machine: where nodes in namespaces reach it, the bridge (`.1` of their subnet)
    const controller = {
      name: machine,
      address: options.nodes === undefined ? "127.0.0.1" : options.nodes[0]!.address.replace(/\.\d+$/, ".1")
    }
    const port = Effect.mapError(Sshd.freePort, (e) => fail(e.reason))
    const ctld = yield* port
    // a port just released can be handed out again at once: the two daemons need two
    const slurmd = yield* port.pipe(
      Effect.filterOrFail(
        (p) => p !== ctld,
        () => fail("no second free port")
      ),
      Effect.retry({ times: 20 })
    )
    const ports = { ctld, slurmd }
    const confPath = path.join(dir, "slurm.conf")
    const mungeDir = path.join(dir, "munge")
    const socketDir = path.join(dir, "munge-run")
    const socket = path.join(socketDir, "munge.sock")
    yield* Effect.sync(() => {
      // munged refuses a socket directory others cannot enter, and a key others can read
      fs.chmodSync(dir, 0o755)
      fs.mkdirSync(mungeDir, { mode: 0o700 })
      fs.mkdirSync(socketDir, { mode: 0o755 })
      fs.writeFileSync(path.join(mungeDir, "munge.key"), crypto.randomBytes(128), { mode: 0o600 })
      for (const p of [mungeDir, socketDir, path.join(mungeDir, "munge.key")])
        fs.chownSync(p, munge.uid, munge.gid)
      fs.mkdirSync(path.join(dir, "state"), { mode: 0o700 })
      for (const n of nodes) fs.mkdirSync(path.join(dir, "spool", n.name), { recursive: true, mode: 0o700 })
      fs.writeFileSync(confPath, slurmConf(dir, controller, nodes, ports, options))
      fs.writeFileSync(path.join(dir, "gres.conf"), gresConf(nodes.map((n) => n.name)))
    })

    let output = ""
    const env = { ...process.env, SLURM_CONF: confPath }
    const daemons: Array<ChildProcess> = []
    const daemon = (file: string, args: ReadonlyArray<string>, extra: SpawnOptions = {}) =>
      Effect.sync(() => {
        const child = spawn(file, [...args], { stdio: ["ignore", "pipe", "pipe"], env, ...extra })
        const name = path.basename(file)
        const append = (chunk: Buffer) => {
          output += chunk
            .toString("utf8")
            .split("\n")
            .filter(Boolean)
            .map((line) => `[${name}] ${line}\n`)
            .join("")
        }
        child.stdout?.on("data", append)
        child.stderr?.on("data", append)
        child.on("error", (e) => append(Buffer.from(`spawn failed: ${e.message}`)))
        daemons.push(child)
        return child
      })

    const client = (command: string, args: ReadonlyArray<string>) =>
      Effect.async<string, SlurmClusterError>((resume) => {
        execFile(command, [...args], { env, timeout: 20_000 }, (error, stdout, stderr) => {
          if (error)
            resume(Effect.fail(fail(`${command} ${args.join(" ")}: ${stderr.trim() || error.message}`)))
          else resume(Effect.succeed(stdout))
        })
      })

    const until = <A>(what: string, check: Effect.Effect<A, SlurmClusterError>) =>
      check.pipe(
        Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo(Duration.seconds(30)))),
        Effect.mapError(() =>
          fail(`${what} within 30 s; daemon output:\n${output.split("\n").slice(-30).join("\n")}`)
        )
      )

    // cancel every job (its slurmstepd outlives slurmd), then stop the daemons, last started first
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        if (daemons.length === 2 + nodes.length) {
          yield* Effect.ignore(client("scancel", ["--full", "--user=root"]))
          yield* Effect.ignore(
            until(
              "jobs ended",
              Effect.flatMap(client("squeue", ["-h", "-o", "%i"]), (out) =>
                out.trim() === "" ? Effect.void : Effect.fail(fail("jobs remain"))
              )
            )
          )
        }
        for (const child of [...daemons].reverse()) yield* stopDaemon(child)
      })
    )

    yield* daemon(
      "/usr/sbin/munged",
      [
        "--foreground",
        `--socket=${socket}`,
        `--key-file=${path.join(mungeDir, "munge.key")}`,
        `--log-file=${path.join(mungeDir, "munged.log")}`,
        `--pid-file=${path.join(mungeDir, "munged.pid")}`,
        `--seed-file=${path.join(mungeDir, "munged.seed")}`
      ],
      { uid: munge.uid, gid: munge.gid }
    )
    yield* until(
      "munged did not create its socket",
      Effect.suspend(() => (fs.existsSync(socket) ? Effect.void : Effect.fail(fail("no socket"))))
    )
    yield* daemon("/usr/sbin/slurmctld", ["-D", "-i", "-f", confPath])
    yield* until("slurmctld did not answer", client("scontrol", ["ping"]))
    for (const n of options.nodes ?? []) {
      const binds = n.binds ?? []
      // nsenter joins the network namespace only; unshare gives the binds a mount namespace of their own
      yield* daemon("nsenter", [
        `--net=/var/run/netns/${n.namespace}`,
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        `${binds.map((_, i) => `mount --bind "\${${2 * i + 1}}" "\${${2 * i + 2}}" && `).join("")}exec /usr/sbin/slurmd -D -N "$0" -f "${confPath}"`,
        n.name,
        ...binds.flatMap((b) => [b.from, b.to])
      ])
    }
    if (options.nodes === undefined) yield* daemon("/usr/sbin/slurmd", ["-D", "-N", node, "-f", confPath])
    for (const n of nodes)
      yield* until(
        `node ${n.name} was not idle`,
        Effect.flatMap(client("sinfo", ["-h", "-n", n.name, "-o", "%t"]), (out) =>
          out.trim() === "idle" ? Effect.void : Effect.fail(fail(`node is ${out.trim()}`))
        )
      )

    return {
      dir,
      confPath,
      node,
      nodes: nodes.map((n) => n.name),
      nodeAddress: nodes[0]!.address,
      partition: PARTITION,
      shortPartition: SHORT_PARTITION,
      gpus: GPU_FILES.length,
      sshdConfig: [`SetEnv SLURM_CONF=${confPath}`],
      env: { SLURM_CONF: confPath },
      client,
      log: () => output
    } satisfies SlurmCluster
  })

/**
 * sshd takes only its first `SetEnv` line: `lines` with `vars` (`NAME=value`) added to that
 * line (or as a new one).
 */
export const withSetEnv = (lines: ReadonlyArray<string>, vars: ReadonlyArray<string>): Array<string> => {
  const at = lines.findIndex((line) => line.startsWith("SetEnv "))
  if (at === -1) return [...lines, `SetEnv ${vars.join(" ")}`]
  return lines.map((line, i) => (i === at ? `${line} ${vars.join(" ")}` : line))
}

/** A fresh cluster per layer build. */
export const layer = (options: SlurmClusterOptions = {}): Layer.Layer<TestSlurm, SlurmClusterError> =>
  Layer.scoped(TestSlurm, start(options))

/** A cluster and the harness sshd as its login node (`SLURM_CONF` set for every session). */
export const loginNode = (
  options: SlurmClusterOptions & { readonly sshd?: Sshd.SshdOptions } = {}
): Layer.Layer<TestSlurm | Sshd.TestSshd, SlurmClusterError | Sshd.SshdError> =>
  Layer.unwrapEffect(
    Effect.map(TestSlurm, (cluster) =>
      Sshd.layer({
        ...options.sshd,
        extraConfig: [...cluster.sshdConfig, ...(options.sshd?.extraConfig ?? [])]
      })
    )
  ).pipe(Layer.provideMerge(layer(options)))
