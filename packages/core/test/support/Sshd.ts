/**
 * A real OpenSSH sshd on 127.0.0.1 for integration tests and benches: throwaway host and
 * client keys in a temp directory, a free port, login as the current user with the client key.
 *
 * ```ts
 * layer(Sshd.layer(), { excludeTestServices: true })((it) => {
 *   it.effect("...", () => Effect.gen(function*() { const sshd = yield* Sshd.Sshd; ... }))
 * })
 * ```
 */

import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Context, Data, Duration, Effect, Layer, Schedule, type Scope } from "effect"
import { HostConfig } from "../../src/HostConfig.js"

export class SshdError extends Data.TaggedError("SshdError")<{ readonly reason: string }> {
  override get message() {
    return `test sshd: ${this.reason}`
  }
}

export interface SshdOptions {
  /** sshd MaxSessions; default: sshd's own default (10). */
  readonly maxSessions?: number
  /** The sftp `Subsystem` command; default `internal-sftp`. */
  readonly sftpSubsystem?: string
  /** Extra sshd_config lines. */
  readonly extraConfig?: ReadonlyArray<string>
  /** The ssh_config alias it answers to; default `testhost`. */
  readonly alias?: string
  /**
   * Run it inside a network namespace the test made (`NetHosts`), listening on that
   * namespace's address instead of 127.0.0.1: a host with a network stack of its own.
   */
  readonly namespace?: { readonly name: string; readonly address: string }
  /**
   * Directories bind-mounted for this sshd and what it starts only (a mount namespace of its
   * own): a host whose files at a path differ from another's (`{ from: "/tmp/x", to: "/srv/m" }`;
   * `to` must exist).
   */
  readonly binds?: ReadonlyArray<{ readonly from: string; readonly to: string }>
}

export interface Sshd {
  readonly port: number
  readonly dir: string
  readonly user: string
  readonly clientKeyPath: string
  /** Pre-seeded with `[127.0.0.1]:port <host key>`. */
  readonly knownHostsPath: string
  /** An ssh_config with `Host testhost` (BatchMode, strict host keys, the client key only). */
  readonly sshConfigPath: string
  /** alias "testhost", strict host-key policy, the harness known_hosts and key. */
  readonly hostConfig: HostConfig
  /** Kill the sshd processes serving connections (not the listener): cuts every live connection. */
  readonly killSessionProcesses: Effect.Effect<void>
  /** Replace the host key and restart the listener on the same port; known_hosts keeps the old key. */
  readonly rotateHostKey: Effect.Effect<void, SshdError>
  /** Stop the listener and cut every connection: the host is unreachable until `resume`. */
  readonly pause: Effect.Effect<void>
  /** Start the listener again on the same port, with the same host key. */
  readonly resume: Effect.Effect<void, SshdError>
  readonly stop: Effect.Effect<void>
  /**
   * The remote helpers started through this sshd and still running (they outlive their
   * connections; the scope's end kills them).
   */
  readonly helpers: () => ReadonlyArray<number>
  /** What sshd printed on stderr so far (for failing-test diagnostics). */
  readonly log: () => string
}

export class TestSshd extends Context.Tag("@mlops/core/test/Sshd")<TestSshd, Sshd>() {}

const SSHD = "/usr/sbin/sshd"

const run = (file: string, args: ReadonlyArray<string>) =>
  Effect.async<string, SshdError>((resume) => {
    execFile(file, [...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error)
        resume(
          Effect.fail(new SshdError({ reason: `${file} ${args.join(" ")}: ${error.message} ${stderr}` }))
        )
      else resume(Effect.succeed(stdout))
    })
  })

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export const freePort = Effect.async<number, SshdError>((resume) => {
  const server = net.createServer()
  server.once("error", (e) => resume(Effect.fail(new SshdError({ reason: `no free port: ${e.message}` }))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Resolves once something on the port answers with an SSH banner. */
const banner = (port: number, address = "127.0.0.1") =>
  Effect.async<void, SshdError>((resume) => {
    const socket = net.connect(port, address)
    let data = ""
    const done = (result: Effect.Effect<void, SshdError>) => {
      socket.destroy()
      resume(result)
    }
    socket.setTimeout(1000, () => done(Effect.fail(new SshdError({ reason: "no banner" }))))
    socket.on("data", (chunk) => {
      data += chunk.toString("latin1")
      if (data.startsWith("SSH-")) done(Effect.void)
    })
    socket.on("error", (e) => done(Effect.fail(new SshdError({ reason: e.message }))))
  })

const keygen = (file: string) =>
  run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "mlops-test", "-f", file])

const pubKey = (file: string) =>
  fs.readFileSync(`${file}.pub`, "utf8").trim().split(/\s+/).slice(0, 2).join(" ")

/** Direct and indirect children of `pid`, read from /proc. */
const descendants = (pid: number): Array<{ pid: number; comm: string }> => {
  const all: Array<{ pid: number; ppid: number; comm: string }> = []
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const close = stat.lastIndexOf(")")
      const comm = stat.slice(stat.indexOf("(") + 1, close)
      const ppid = Number(stat.slice(close + 2).split(" ")[1])
      all.push({ pid: Number(entry), ppid, comm })
    } catch {
      // the process ended while we looked
    }
  }
  const out: Array<{ pid: number; comm: string }> = []
  const walk = (parent: number) => {
    for (const p of all) {
      if (p.ppid === parent) {
        out.push({ pid: p.pid, comm: p.comm })
        walk(p.pid)
      }
    }
  }
  walk(pid)
  return out
}

/**
 * The persistent remote helpers (`python3 -I -c <helper>`) started through the sshd on `port`:
 * a helper keeps the SSH_CONNECTION of the connection that started it.
 */
export const helpersOn = (port: number): Array<number> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0")
      if (
        !/python3$/.test(cmdline[0] ?? "") ||
        cmdline[1] !== "-I" ||
        !cmdline[3]?.includes("mlops-helper 2")
      )
        return []
      const environ = fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0")
      const connection = environ.find((v) => v.startsWith("SSH_CONNECTION="))
      return connection?.endsWith(` ${port}`) ? [Number(entry)] : []
    } catch {
      return [] // ended while we looked
    }
  })

const kill = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

const waitExit = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  }).pipe(Effect.timeout("5 seconds"), Effect.ignore)

/** Start a scoped sshd; stopped (and its directory removed) when the scope closes. */
export const start = (options: SshdOptions = {}): Effect.Effect<Sshd, SshdError, Scope.Scope> =>
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sshd-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    // sshd's privilege-separation directory, normally created by the service unit
    yield* Effect.sync(() => fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 }))
    const user = os.userInfo().username
    const address = options.namespace?.address ?? "127.0.0.1"
    const alias = options.alias ?? "testhost"
    const hostKeyPath = path.join(dir, "host_ed25519")
    const clientKeyPath = path.join(dir, "client_ed25519")
    yield* keygen(hostKeyPath)
    yield* keygen(clientKeyPath)
    fs.writeFileSync(path.join(dir, "authorized_keys"), `${pubKey(clientKeyPath)}\n`, { mode: 0o600 })

    let stderr = ""
    let child: ChildProcess | undefined

    const writeConfig = (port: number) => {
      const lines = [
        `Port ${port}`,
        `ListenAddress ${address}`,
        `HostKey ${hostKeyPath}`,
        `PidFile ${path.join(dir, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(dir, "authorized_keys")}`,
        "UsePAM no",
        "StrictModes no",
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "AllowTcpForwarding yes",
        `Subsystem sftp ${options.sftpSubsystem ?? "internal-sftp"}`,
        "LogLevel ERROR",
        ...(options.maxSessions === undefined ? [] : [`MaxSessions ${options.maxSessions}`]),
        ...(options.extraConfig ?? [])
      ]
      const file = path.join(dir, "sshd_config")
      fs.writeFileSync(file, `${lines.join("\n")}\n`)
      return file
    }

    const launch = (port: number) =>
      Effect.gen(function* () {
        const config = writeConfig(port)
        // `nsenter`, `unshare -m` (private propagation) and `sh -c '... exec'` each exec the next:
        // the pid is sshd's. nsenter joins the network namespace only (`ip netns exec` would also
        // remount /sys, hiding the cgroup mounts a container engine in a session needs)
        const binds = options.binds ?? []
        const sshd =
          binds.length === 0
            ? [SSHD, "-D", "-e", "-f", config]
            : [
                "unshare",
                "-m",
                "sh",
                "-c",
                `${binds.map((_, i) => `mount --bind "\${${2 * i + 1}}" "\${${2 * i + 2}}" && `).join("")}exec ${SSHD} -D -e -f ${config}`,
                "sh",
                ...binds.flatMap((b) => [b.from, b.to])
              ]
        const argv =
          options.namespace === undefined
            ? sshd
            : ["nsenter", `--net=/var/run/netns/${options.namespace.name}`, ...sshd]
        const proc = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] })
        proc.stderr?.on("data", (chunk: Buffer) => {
          stderr += chunk.toString("utf8")
        })
        child = proc
        yield* banner(port, address).pipe(
          Effect.retry(
            Schedule.spaced("20 millis").pipe(
              Schedule.whileInput(() => proc.exitCode === null && proc.signalCode === null),
              Schedule.upTo(Duration.seconds(10))
            )
          ),
          Effect.mapError(
            () =>
              new SshdError({ reason: `sshd did not start on port ${port}: ${stderr.trim() || "no output"}` })
          ),
          Effect.tapError(() => Effect.sync(() => kill(proc.pid!, "SIGKILL")))
        )
      })

    const stopListener = Effect.suspend(() => {
      const proc = child
      if (proc?.pid === undefined) return Effect.void
      for (const p of descendants(proc.pid)) kill(p.pid, "SIGKILL")
      kill(proc.pid, "SIGTERM")
      return waitExit(proc)
    })

    // A free port can be taken between probing and binding: try a few.
    const port = yield* Effect.gen(function* () {
      const candidate = yield* freePort
      yield* launch(candidate)
      return candidate
    }).pipe(Effect.retry({ times: 4 }))
    yield* Effect.addFinalizer(() => stopListener)
    // after the listener: the helpers its connections left on this machine
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        for (const pid of helpersOn(port)) kill(pid, "SIGKILL")
      })
    )

    const knownHostsPath = path.join(dir, "known_hosts")
    fs.writeFileSync(knownHostsPath, `[${address}]:${port} ${pubKey(hostKeyPath)}\n`)
    const sshConfigPath = path.join(dir, "ssh_config")
    fs.writeFileSync(
      sshConfigPath,
      [
        `Host ${alias}`,
        `  HostName ${address}`,
        `  Port ${port}`,
        `  User ${user}`,
        `  IdentityFile ${clientKeyPath}`,
        "  IdentitiesOnly yes",
        "  IdentityAgent none",
        `  UserKnownHostsFile ${knownHostsPath}`,
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        "  LogLevel ERROR",
        ""
      ].join("\n")
    )

    const hostConfig = new HostConfig({
      alias,
      hostname: address,
      port,
      user,
      identityFiles: [clientKeyPath],
      proxyJump: [],
      knownHostsFiles: [knownHostsPath],
      hostKeyPolicy: "strict",
      keepaliveIntervalMs: 15_000,
      keepaliveCountMax: 3,
      connectTimeoutMs: 10_000,
      tags: [],
      source: sshConfigPath
    })

    const killSessionProcesses = Effect.sync(() => {
      if (child?.pid === undefined) return
      for (const p of descendants(child.pid)) if (p.comm.startsWith("sshd")) kill(p.pid, "SIGKILL")
    })

    const rotateHostKey = Effect.gen(function* () {
      yield* stopListener
      fs.rmSync(hostKeyPath, { force: true })
      fs.rmSync(`${hostKeyPath}.pub`, { force: true })
      yield* keygen(hostKeyPath)
      yield* launch(port)
    })

    const pause = stopListener
    const resume = launch(port)

    return {
      port,
      dir,
      pause,
      resume,
      user,
      clientKeyPath,
      knownHostsPath,
      sshConfigPath,
      hostConfig,
      killSessionProcesses,
      rotateHostKey,
      stop: stopListener,
      helpers: () => helpersOn(port),
      log: () => stderr
    } satisfies Sshd
  })

/** A fresh sshd per layer build. */
export const layer = (options: SshdOptions = {}): Layer.Layer<TestSshd, SshdError> =>
  Layer.scoped(TestSshd, start(options))

// ---- the OpenSSH client, for comparisons and benches ------------------------------------

/** `ssh -F <harness ssh_config> [options] testhost <remote command>`. */
export const sshArgs = (
  sshd: Pick<Sshd, "sshConfigPath">,
  remote: string,
  options: ReadonlyArray<string> = []
): Array<string> => ["-F", sshd.sshConfigPath, ...options, "testhost", remote]
