/**
 * Real container engines for integration tests, on this machine only: a Docker Engine (Debian's
 * `docker.io`, dockerd 20.10) started per test scope in a throwaway directory, podman (4.3) with
 * its configuration and storage in a throwaway directory (both on overlay storage where the
 * kernel mounts it on /tmp, as here, else vfs: see `overlayWorks`), a local registry (Debian's
 * `docker-registry`, distribution 2.8) on 127.0.0.1, and images holding this machine's own
 * Python (no registry on the internet is ever needed). Needs root; `.ci/run` installs the
 * packages (`docker.io podman runc catatonit docker-registry`).
 *
 * ```ts
 * const docker = yield* Containers.startDocker({ gpuHook: true })
 * const image = yield* Containers.buildImage(docker, { name: "mlops-test/sglang:v0.5.11", packages })
 * const out = yield* Containers.run(docker, ["run", "--rm", "--network", "host", "--gpus", '"device=1"',
 *   image.name, "python3", "-c", "import os; print(os.environ['NVIDIA_VISIBLE_DEVICES'])"])
 * // out.code 0, out.stdout "1\n"; the daemon, its containers and its directory go with the scope
 * ```
 *
 * Network: every container a test starts must use `--network host` (dockerd runs with
 * `--bridge=none`, podman's bridge networking does not work here). Nothing may reach a
 * non-loopback address: `docker run` of an image that exists locally never pulls (the default
 * pull policy is `missing`), so tests name absent images only as `127.0.0.1:<port>/...` of a
 * `startRegistry()` registry. As a guard, dockerd and podman get `HTTP(S)_PROXY` pointing at a
 * listener in this process that answers 403 and records the attempt (`networkAttempts()`):
 * an accidental pull of `docker.io/...` fails at once instead of going out (`NO_PROXY` lets
 * 127.0.0.0/8 through; Go never proxies loopback anyway). podman's registries.conf has no
 * unqualified-search registries, so a short name never leads to a lookup at all.
 */

import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Data, Duration, Effect, Schedule, type Scope } from "effect"

export class ContainersError extends Data.TaggedError("ContainersError")<{ readonly reason: string }> {
  override get message() {
    return `test containers: ${this.reason}`
  }
}

const fail = (reason: string) => new ContainersError({ reason })

// ---- commands -------------------------------------------------------------------------------

/** Where a container command goes: the tool and the environment that points it at one engine. */
export interface Target {
  readonly tool: "docker" | "podman"
  readonly env: Readonly<Record<string, string>>
}

export interface Output {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const execOutput = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: Readonly<Record<string, string>>; readonly timeout?: Duration.DurationInput } = {}
): Effect.Effect<Output, ContainersError> =>
  Effect.async<Output, ContainersError>((resume) => {
    const timeout = Duration.toMillis(options.timeout ?? "2 minutes")
    execFile(
      file,
      [...args],
      {
        env: { ...process.env, ...options.env },
        timeout,
        maxBuffer: 64 * 1024 * 1024,
        killSignal: "SIGKILL"
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          const why = error.killed ? `timed out after ${timeout} ms` : error.message
          resume(Effect.fail(fail(`${file} ${args.join(" ")}: ${why} ${stderr}`.trim())))
        } else resume(Effect.succeed({ code: error ? Number(error.code) : 0, stdout, stderr }))
      }
    )
  })

/**
 * `docker ARGS` / `podman ARGS` against the target's engine; a non-zero exit is an `Output`, not
 * an error (tests look at the engine's own failure text). `bin` picks another client, e.g.
 * `/usr/bin/docker` (Debian's 20.10 client) instead of the first `docker` on PATH.
 */
export const run = (
  target: Target,
  args: ReadonlyArray<string>,
  options: { readonly timeout?: Duration.DurationInput; readonly bin?: string } = {}
): Effect.Effect<Output, ContainersError> =>
  execOutput(options.bin ?? target.tool, args, {
    env: target.env,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout })
  })

/** `run`, failing unless the command exits 0; its stdout. */
export const runOk = (
  target: Target,
  args: ReadonlyArray<string>,
  options: { readonly timeout?: Duration.DurationInput; readonly bin?: string } = {}
): Effect.Effect<string, ContainersError> =>
  Effect.flatMap(run(target, args, options), (out) =>
    out.code === 0
      ? Effect.succeed(out.stdout)
      : Effect.fail(fail(`${target.tool} ${args.join(" ")} exited ${out.code}: ${out.stderr.trim()}`))
  )

// ---- processes and mounts ---------------------------------------------------------------------

interface Proc {
  readonly pid: number
  readonly ppid: number
  readonly cmdline: string
}

const processes = (): Array<Proc> =>
  fs.readdirSync("/proc").flatMap((entry) => {
    if (!/^\d+$/.test(entry)) return []
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8")
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").trim()
      return [{ pid: Number(entry), ppid, cmdline }]
    } catch {
      return [] // ended while we looked
    }
  })

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    // a zombie is gone for our purposes
    return !/^\S+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return false
  }
}

const kill = (pid: number, signal: NodeJS.Signals) => {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

/** Poll every 100 ms until `check` holds, at most `within`; false if it never did. */
const waitUntil = (check: () => boolean, within: Duration.DurationInput) =>
  Effect.suspend(() => (check() ? Effect.succeed(true) : Effect.fail("not yet" as const))).pipe(
    Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo(within))),
    Effect.orElseSucceed(() => false)
  )

/** TERM, wait up to `grace`, then KILL and wait again (bounded). */
const stopPids = (pids: ReadonlyArray<number>, grace: Duration.DurationInput) =>
  Effect.gen(function* () {
    for (const pid of pids) kill(pid, "SIGTERM")
    if (yield* waitUntil(() => pids.every((pid) => !alive(pid)), grace)) return
    for (const pid of pids) kill(pid, "SIGKILL")
    yield* waitUntil(() => pids.every((pid) => !alive(pid)), "5 seconds")
  })

/** Mount points at or under `dir` (this process' mount namespace), deepest first. */
export const mountsUnder = (dir: string): Array<string> =>
  fs
    .readFileSync("/proc/self/mounts", "utf8")
    .split("\n")
    .map((line) =>
      (line.split(" ")[1] ?? "").replace(/\\([0-7]{3})/g, (_, o) =>
        String.fromCharCode(Number.parseInt(o, 8))
      )
    )
    .filter((point) => point === dir || point.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length)

/** Unmount everything under `dir` (lazily if busy), then remove it. */
const removeTree = (dir: string) =>
  Effect.gen(function* () {
    for (const point of mountsUnder(dir)) {
      const out = yield* Effect.orElseSucceed(
        execOutput("umount", [point], { timeout: "20 seconds" }),
        () => ({
          code: 1,
          stdout: "",
          stderr: ""
        })
      )
      if (out.code !== 0) yield* Effect.ignore(execOutput("umount", ["-l", point], { timeout: "20 seconds" }))
    }
    yield* Effect.sync(() => {
      try {
        fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
      } catch {
        // reported by the test that checks for leftovers
      }
    })
  })

const tempDir = (prefix: string) =>
  Effect.acquireRelease(
    Effect.try({
      // under /tmp itself: a unix socket path must stay under ~107 bytes
      try: () => fs.mkdtempSync(path.join("/tmp", prefix)),
      catch: (e) => fail(`mkdtemp: ${String(e)}`)
    }),
    removeTree
  )

const needRoot = (what: string) =>
  process.getuid?.() === 0 ? Effect.void : Effect.fail(fail(`${what} needs root`))

let overlayProbe: boolean | undefined

/**
 * Whether the kernel mounts overlayfs on /tmp's filesystem (a throwaway mount under /tmp):
 * then dockerd's overlay2 and podman's overlay work, and a container starts in ~0.3 s instead of
 * the 2-4 s vfs needs to copy the whole image twice (its init layer and its own). Where /tmp is
 * itself an overlay (a container) it does not: vfs. Probed once per process.
 */
export const overlayWorks: Effect.Effect<boolean> = Effect.suspend(() => {
  if (overlayProbe !== undefined) return Effect.succeed(overlayProbe)
  return Effect.gen(function* () {
    const dir = fs.mkdtempSync(path.join("/tmp", "mlops-ovl-"))
    const merged = path.join(dir, "merged")
    for (const sub of ["lower", "upper", "work", "merged"]) fs.mkdirSync(path.join(dir, sub))
    fs.writeFileSync(path.join(dir, "lower", "probe"), "ok")
    const mounted = yield* Effect.orElseSucceed(
      execOutput(
        "mount",
        [
          "-t",
          "overlay",
          "overlay",
          "-o",
          `lowerdir=${path.join(dir, "lower")},upperdir=${path.join(dir, "upper")},workdir=${path.join(dir, "work")}`,
          merged
        ],
        { timeout: "10 seconds" }
      ),
      () => ({ code: 1, stdout: "", stderr: "" })
    )
    const works = mounted.code === 0 && fs.existsSync(path.join(merged, "probe"))
    yield* removeTree(dir)
    overlayProbe = works
    return works
  }).pipe(Effect.catchAllDefect(() => Effect.succeed(false)))
})

/** A TCP port on 127.0.0.1 that was free a moment ago. */
const freePort = Effect.async<number, ContainersError>((resume) => {
  const server = net.createServer()
  server.once("error", (e) => resume(Effect.fail(fail(`no free port: ${e.message}`))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

// ---- the network guard ------------------------------------------------------------------------

interface Guard {
  readonly url: string
  readonly attempts: Array<string>
}

/**
 * An HTTP proxy on 127.0.0.1 that refuses everything (403) and remembers what was asked
 * (`CONNECT registry-1.docker.io:443`): the engines' HTTP(S)_PROXY, so that nothing they do
 * reaches past this machine.
 */
const networkGuard: Effect.Effect<Guard, ContainersError, Scope.Scope> = Effect.acquireRelease(
  Effect.async<{ guard: Guard; server: net.Server }, ContainersError>((resume) => {
    const attempts: Array<string> = []
    const server = net.createServer((socket) => {
      let head = ""
      socket.on("data", (chunk) => {
        head += chunk.toString("latin1")
        if (!head.includes("\r\n")) return
        attempts.push(head.split("\r\n")[0] ?? "")
        socket.end("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
      })
      socket.on("error", () => {})
    })
    server.once("error", (e) => resume(Effect.fail(fail(`network guard: ${e.message}`))))
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ guard: { url: `http://127.0.0.1:${port}`, attempts }, server }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ guard }) => guard))

const proxyEnv = (guard: Guard) => ({
  HTTP_PROXY: guard.url,
  HTTPS_PROXY: guard.url,
  http_proxy: guard.url,
  https_proxy: guard.url,
  NO_PROXY: "127.0.0.1,127.0.0.0/8,localhost",
  no_proxy: "127.0.0.1,127.0.0.0/8,localhost"
})

// ---- Docker Engine ------------------------------------------------------------------------------

export interface DockerOptions {
  /**
   * A stand-in `nvidia-container-runtime-hook` first on dockerd's PATH at its start, so that it
   * registers its GPU device driver and accepts `--gpus` (the container then gets
   * `NVIDIA_VISIBLE_DEVICES=<the devices>`). `"requirement-check"`: the hook also refuses, as
   * nvidia-container-cli does, a container whose `NVIDIA_REQUIRE_CUDA` (`cuda>=X.Y`, with its
   * `brand=`/`driver` alternatives) the stand-in driver does not meet (CUDA 12.4, driver
   * 550.54.15, brand nvidiartx: an RTX A6000 on driver 550; `NVIDIA_DISABLE_REQUIRE=true` skips
   * it). Without the hook, `docker run --gpus ...` fails with the real
   * `could not select device driver "" with capabilities: [[gpu]]`.
   */
  readonly gpuHook?: boolean | "requirement-check"
  /** The stand-in driver's CUDA version (file `cuda-version` next to the hook; change it any time). */
  readonly driverCudaVersion?: string
  /**
   * The socket's group (`dockerd --group <gid>`). Default 0: the socket is `root:root 0660`,
   * so only root can use it; any other user gets the real
   * `permission denied while trying to connect to the Docker daemon socket at unix:///...`.
   * (Without `--group`, dockerd would make it `root:docker 0660` when a `docker` group exists,
   * as Debian's package creates, else `root:root`.)
   */
  readonly dockerGroupGid?: number
  /**
   * `vfs` (works everywhere; each container copies the whole image twice, 2-4 s for a 40 MB
   * image on 2 loaded cores), `overlay2`, or `auto` (default): overlay2 where `overlayWorks`.
   */
  readonly storageDriver?: "vfs" | "overlay2" | "auto"
  /**
   * Run dockerd inside this network namespace (`NetHosts`; joined with `nsenter`): its `--network host`
   * containers then live on that test host's network, as a daemon on another machine's would.
   * Its socket is a file, so clients reach it from anywhere on this machine. The guard proxy
   * (127.0.0.1 of this process's namespace) is not reachable from there: `networkAttempts()`
   * records nothing; the namespace's only route, the test's bridge, keeps everything here.
   */
  readonly namespace?: string
}

export interface DockerDaemon extends Target {
  readonly tool: "docker"
  /** The daemon's directory (`/tmp/mlops-dk-XXXXXX`, mode 0755): root/, exec/, docker.sock. */
  readonly dir: string
  readonly socket: string
  readonly env: { readonly DOCKER_HOST: string }
  /** dockerd's pid (its containerd is a child). */
  readonly pid: number
  /** The directory holding the stand-in hook and its `cuda-version` file (undefined without a hook). */
  readonly hookDir: string | undefined
  readonly storageDriver: "vfs" | "overlay2"
  /** What dockerd printed so far. */
  readonly logs: () => string
  /** Requests that tried to leave this machine through the guard proxy (`CONNECT host:443`). */
  readonly networkAttempts: () => ReadonlyArray<string>
}

const DOCKERD = "/usr/sbin/dockerd"

/** The stand-in hook without the requirement check: reads the OCI state, accepts. */
const plainHook = `#!/bin/sh
# Stand-in nvidia-container-runtime-hook (mlops tests): dockerd registers its GPU device driver
# when this program is on its PATH; runc runs it as a prestart hook with the OCI state on stdin.
cat >/dev/null
exit 0
`

/**
 * The stand-in hook with nvidia-container-cli's requirement check, written from its documented
 * behaviour: every NVIDIA_REQUIRE_* of the container is a predicate, alternatives separated by
 * spaces (OR), conditions of one alternative by commas (AND), over cuda / driver / brand;
 * NVIDIA_DISABLE_REQUIRE=true skips it. The OCI state on stdin names the bundle, whose
 * config.json holds process.env (Go writes `>`/`<`/`&` as \\u003e/\\u003c/\\u0026). On failure it
 * prints nvidia-container-cli's line; docker relays it as (docker.io 20.10.24, runc 1.1.5):
 *
 *   docker: Error response from daemon: failed to create shim task: OCI runtime create failed:
 *   runc create failed: unable to start container process: error during container init: error
 *   running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli:
 *   requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer
 *   version, or use an earlier cuda container: unknown
 *
 * (one line; the `: unknown` is containerd's, appended by the daemon, so the hook does not print
 * it; Debian's 20.10 client adds a final `.`; exit status 125).
 */
const requirementHook = `#!/bin/sh
# Stand-in nvidia-container-runtime-hook (mlops tests) with nvidia-container-cli's CUDA
# requirement check. Driver facts: files next to this script (cuda-version, driver-version, brand).
here=$(dirname "$0")
state=$(cat)
[ "\${1:-}" = prestart ] || exit 0
bundle=$(printf '%s' "$state" | sed -n 's/.*"bundle" *: *"\\([^"]*\\)".*/\\1/p')
[ -n "$bundle" ] && [ -f "$bundle/config.json" ] || exit 0
cuda=$(cat "$here/cuda-version" 2>/dev/null || echo 12.4)
driver=$(cat "$here/driver-version" 2>/dev/null || echo 550.54.15)
brand=$(cat "$here/brand" 2>/dev/null || echo nvidiartx)
env=$(grep -o '"NVIDIA_[A-Z_]*=[^"]*"' "$bundle/config.json" |
  sed 's/^"//; s/"$//; s/\\\\u003e/>/g; s/\\\\u003c/</g; s/\\\\u0026/\\&/g')
case "$(printf '%s\\n' "$env" | sed -n 's/^NVIDIA_DISABLE_REQUIRE=//p')" in
  1 | true | TRUE | True | yes) exit 0 ;;
esac
printf '%s\\n' "$env" | sed -n 's/^NVIDIA_REQUIRE_[A-Z0-9_]*=//p' |
  awk -v cuda="$cuda" -v driver="$driver" -v brand="$brand" '
function cmp(a, b,   x, y, n, m, i, d) {
  n = split(a, x, "."); m = split(b, y, ".")
  for (i = 1; i <= (n > m ? n : m); i++) { d = (x[i] + 0) - (y[i] + 0); if (d != 0) return d }
  return 0
}
function holds(c,   key, op, val, have, r) {
  if (!match(c, /(>=|<=|!=|>|<|=)/)) return 1
  key = substr(c, 1, RSTART - 1); op = substr(c, RSTART, RLENGTH); val = substr(c, RSTART + RLENGTH)
  if (key == "brand") { r = (brand == val); return op == "!=" ? !r : r }
  if (key == "cuda") have = cuda; else if (key == "driver") have = driver; else return 1
  r = cmp(have, val)
  if (op == ">=") return r >= 0; if (op == "<=") return r <= 0; if (op == ">") return r > 0
  if (op == "<") return r < 0; if (op == "=") return r == 0; return r != 0
}
{
  first = ""; ok = 0
  for (e = 1; e <= NF; e++) {
    n = split($e, conds, ","); all = 1
    for (i = 1; i <= n; i++) if (!holds(conds[i])) { all = 0; if (first == "") first = conds[i]; break }
    if (all) { ok = 1; break }
  }
  if (!ok && first != "") {
    printf "nvidia-container-cli: requirement error: unsatisfied condition: %s, please update your driver to a newer version, or use an earlier cuda container\\n", first > "/dev/stderr"
    failed = 1
    exit 1
  }
}
END { exit failed }'
`

/** Start a scoped Docker Engine; its containers, the daemon and its directory go when the scope closes. */
export const startDocker = (
  options: DockerOptions = {}
): Effect.Effect<DockerDaemon, ContainersError, Scope.Scope> =>
  Effect.gen(function* () {
    yield* needRoot("dockerd")
    if (!fs.existsSync(DOCKERD))
      return yield* fail("Docker Engine is not installed: apt-get install -y docker.io")
    const dir = yield* tempDir("mlops-dk-")
    fs.chmodSync(dir, 0o755) // the socket's own mode decides who may connect
    const socket = path.join(dir, "docker.sock")
    const env = { DOCKER_HOST: `unix://${socket}` }
    const logFile = path.join(dir, "dockerd.log")
    const logs = () => {
      try {
        return fs.readFileSync(logFile, "utf8")
      } catch {
        return ""
      }
    }
    let hookDir: string | undefined
    if (options.gpuHook) {
      hookDir = path.join(dir, "hook")
      fs.mkdirSync(hookDir, { mode: 0o755 })
      const hook = path.join(hookDir, "nvidia-container-runtime-hook")
      fs.writeFileSync(hook, options.gpuHook === "requirement-check" ? requirementHook : plainHook, {
        mode: 0o755
      })
      fs.writeFileSync(path.join(hookDir, "cuda-version"), `${options.driverCudaVersion ?? "12.4"}\n`)
      fs.writeFileSync(path.join(hookDir, "driver-version"), "550.54.15\n")
      fs.writeFileSync(path.join(hookDir, "brand"), "nvidiartx\n")
    }
    const guard = yield* networkGuard
    const storageDriver =
      options.storageDriver === "vfs" || options.storageDriver === "overlay2"
        ? options.storageDriver
        : (yield* overlayWorks)
          ? "overlay2"
          : "vfs"
    const target: DockerDaemon = {
      tool: "docker",
      dir,
      socket,
      env,
      pid: 0,
      hookDir,
      storageDriver,
      logs,
      networkAttempts: () => [...guard.attempts]
    }

    const child = yield* Effect.try({
      try: () => {
        const fd = fs.openSync(logFile, "a")
        try {
          // nsenter joins the network namespace only (`ip netns exec` would also remount /sys,
          // hiding the cgroup mounts dockerd needs) and execs dockerd: the child's pid is dockerd's
          const inNamespace =
            options.namespace === undefined ? [] : [`--net=/var/run/netns/${options.namespace}`, DOCKERD]
          return spawn(
            options.namespace === undefined ? DOCKERD : "nsenter",
            [
              ...inNamespace,
              "--iptables=false",
              "--ip6tables=false",
              "--bridge=none",
              `--storage-driver=${storageDriver}`,
              `--data-root=${path.join(dir, "root")}`,
              `--exec-root=${path.join(dir, "exec")}`,
              `--host=unix://${socket}`,
              `--pidfile=${path.join(dir, "dockerd.pid")}`,
              `--group=${options.dockerGroupGid ?? 0}`,
              "--shutdown-timeout=5"
            ],
            {
              stdio: ["ignore", fd, fd],
              env: {
                ...process.env,
                PATH: [
                  ...(hookDir ? [hookDir] : []),
                  process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin"
                ].join(":"),
                ...proxyEnv(guard)
              }
            }
          )
        } finally {
          fs.closeSync(fd)
        }
      },
      catch: (e) => fail(`spawning dockerd: ${String(e)}`)
    })
    child.on("error", (e) => fs.appendFileSync(logFile, `spawning dockerd failed: ${e.message}\n`))
    const pid = child.pid ?? 0
    yield* Effect.addFinalizer(() => stopDocker(target, child))

    const exited = () => child.exitCode !== null || child.signalCode !== null
    const up = yield* Effect.suspend(() =>
      exited()
        ? Effect.succeed(false)
        : Effect.map(
            Effect.orElseSucceed(
              runOk(target, ["version", "--format", "{{.Server.Version}}"], { timeout: "10 seconds" }),
              () => ""
            ),
            (v) => v.trim() !== ""
          )
    ).pipe(
      Effect.flatMap((ok) => (ok || exited() ? Effect.succeed(ok) : Effect.fail("not yet" as const))),
      Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("45 seconds"))),
      Effect.orElseSucceed(() => false)
    )
    if (!up)
      return yield* fail(
        `dockerd did not answer within 45 s${exited() ? ` (it exited: ${child.exitCode ?? child.signalCode})` : ""}; its log:\n${logs().split("\n").slice(-25).join("\n")}`
      )
    return { ...target, pid }
  })

/** Remove every container, TERM dockerd (KILL after 10 s), and make sure containerd and the shims are gone too. */
const stopDocker = (daemon: DockerDaemon, child: ChildProcess) =>
  Effect.gen(function* () {
    if (child.pid === undefined) return
    // the pid dockerd wrote (its own: the same as the child's)
    const written = Number.parseInt(
      (() => {
        try {
          return fs.readFileSync(path.join(daemon.dir, "dockerd.pid"), "utf8")
        } catch {
          return ""
        }
      })(),
      10
    )
    const pid = Number.isInteger(written) && written > 0 ? written : child.pid
    const running = child.exitCode === null && child.signalCode === null
    if (running) {
      const ids = yield* Effect.orElseSucceed(
        runOk(daemon, ["ps", "-aq"], { timeout: "15 seconds" }),
        () => ""
      )
      const list = ids.split("\n").filter(Boolean)
      if (list.length > 0) yield* Effect.ignore(run(daemon, ["rm", "-f", ...list], { timeout: "30 seconds" }))
    }
    const address = `${daemon.dir}/exec/containerd/containerd.sock`
    const theirs = () =>
      processes()
        .filter((p) => p.ppid === pid || p.cmdline.includes(address) || p.cmdline.includes(daemon.dir))
        .map((p) => p.pid)
        .filter((p) => p !== process.pid)
    const others = theirs()
    kill(pid, "SIGTERM")
    const exited = () => child.exitCode !== null || child.signalCode !== null
    const done = yield* waitUntil(() => !alive(pid) && exited(), "10 seconds")
    if (!done) kill(pid, "SIGKILL")
    yield* waitUntil(exited, "5 seconds")
    // containerd ends after its parent; shims of containers that outlived `rm -f` end here
    yield* stopPids([...new Set([...others, ...theirs()])], "10 seconds")
  })

// ---- podman ----------------------------------------------------------------------------------

export interface PodmanOptions {
  /**
   * Write the stand-in CDI spec (`nvidia.com/gpu=0`, `=1`, `=all`) so that `--device
   * nvidia.com/gpu=N` works; default true. podman 4.3 reads CDI specs only from /etc/cdi and
   * /var/run/cdi (its containers.conf has no `cdi_spec_dirs`), so the spec goes to
   * /var/run/cdi/mlops-test-standin-gpu.yaml, shared by every podmanEnv on the machine and
   * removed when the last one (of live processes) closes.
   */
  readonly cdi?: boolean
  /** As for docker: `vfs`, `overlay` or `auto` (default: overlay where `overlayWorks`). */
  readonly storageDriver?: "vfs" | "overlay" | "auto"
}

export interface Podman extends Target {
  readonly tool: "podman"
  readonly dir: string
  /** CONTAINERS_CONF, CONTAINERS_STORAGE_CONF, CONTAINERS_REGISTRIES_CONF and the guard's HTTP(S)_PROXY / NO_PROXY. */
  readonly env: Readonly<Record<string, string>> & {
    readonly CONTAINERS_CONF: string
    readonly CONTAINERS_STORAGE_CONF: string
    readonly CONTAINERS_REGISTRIES_CONF: string
  }
  /** The CDI spec file (undefined with `cdi: false`). */
  readonly cdiSpec: string | undefined
  readonly storageDriver: "vfs" | "overlay"
  readonly networkAttempts: () => ReadonlyArray<string>
}

const CDI_DIR = "/var/run/cdi"
const CDI_SPEC = path.join(CDI_DIR, "mlops-test-standin-gpu.yaml")
const CDI_USERS = "/run/mlops-test-cdi-users"

/**
 * The stand-in GPUs as CDI devices: each sets `NVIDIA_VISIBLE_DEVICES=<index>` and a
 * `/dev/nvidia<index>` node (a /dev/null stand-in) in the container. A container given several
 * (`--device nvidia.com/gpu=0 --device nvidia.com/gpu=1`) sees only the last device's
 * NVIDIA_VISIBLE_DEVICES but every node: the stand-in engines read the nodes first.
 */
const cdiSpec = `# mlops tests: stand-in GPUs (Containers.ts); removed when the tests end
cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits:
    env: ["NVIDIA_VISIBLE_DEVICES=0"]
    deviceNodes:
    - {path: /dev/nvidia0, hostPath: /dev/null}
- name: "1"
  containerEdits:
    env: ["NVIDIA_VISIBLE_DEVICES=1"]
    deviceNodes:
    - {path: /dev/nvidia1, hostPath: /dev/null}
- name: all
  containerEdits:
    env: ["NVIDIA_VISIBLE_DEVICES=0,1"]
    deviceNodes:
    - {path: /dev/nvidia0, hostPath: /dev/null}
    - {path: /dev/nvidia1, hostPath: /dev/null}
`

const useCdiSpec = Effect.acquireRelease(
  Effect.try({
    try: () => {
      fs.mkdirSync(CDI_USERS, { recursive: true })
      const marker = path.join(CDI_USERS, `${process.pid}-${crypto.randomBytes(4).toString("hex")}`)
      fs.writeFileSync(marker, "")
      fs.mkdirSync(CDI_DIR, { recursive: true })
      const current = fs.existsSync(CDI_SPEC) ? fs.readFileSync(CDI_SPEC, "utf8") : ""
      if (current !== cdiSpec) {
        const tmp = `${CDI_SPEC}.${process.pid}.tmp`
        fs.writeFileSync(tmp, cdiSpec)
        fs.renameSync(tmp, CDI_SPEC)
      }
      return marker
    },
    catch: (e) => fail(`writing the CDI spec ${CDI_SPEC}: ${String(e)}`)
  }),
  (marker) =>
    Effect.sync(() => {
      fs.rmSync(marker, { force: true })
      const users = fs.existsSync(CDI_USERS)
        ? fs.readdirSync(CDI_USERS).filter((name) => alive(Number(name.split("-")[0])))
        : []
      if (users.length === 0) {
        fs.rmSync(CDI_SPEC, { force: true })
        fs.rmSync(CDI_USERS, { recursive: true, force: true })
      }
    })
)

/**
 * podman with its own configuration and storage in a temp dir (`/tmp/mlops-pm-XXXXXX`): overlay
 * (or vfs), runc, cgroupfs, no default ulimits (what works here as root), registries.conf without
 * unqualified-search registries and with 127.0.0.1 registries insecure. Containers still
 * running when the scope closes are removed, then the directory.
 */
export const podmanEnv = (options: PodmanOptions = {}): Effect.Effect<Podman, ContainersError, Scope.Scope> =>
  Effect.gen(function* () {
    yield* needRoot("podman (as root, with runc)")
    const which = yield* execOutput("sh", ["-c", "command -v podman"])
    if (which.code !== 0)
      return yield* fail("podman is not installed: apt-get install -y podman runc catatonit")
    const dir = yield* tempDir("mlops-pm-")
    fs.chmodSync(dir, 0o755)
    const guard = yield* networkGuard
    const storageDriver =
      options.storageDriver === "vfs" || options.storageDriver === "overlay"
        ? options.storageDriver
        : (yield* overlayWorks)
          ? "overlay"
          : "vfs"
    const conf = path.join(dir, "containers.conf")
    const storage = path.join(dir, "storage.conf")
    const registries = path.join(dir, "registries.conf")
    fs.mkdirSync(path.join(dir, "tmp"))
    fs.writeFileSync(
      conf,
      [
        "[containers]",
        "# without it: crun/runc `setrlimit RLIMIT_NOFILE: Operation not permitted`",
        "default_ulimits = []",
        "# the guard proxy is podman's, not the containers' (podman passes its HTTP_PROXY in by default)",
        "http_proxy = false",
        "[engine]",
        'cgroup_manager = "cgroupfs"',
        'runtime = "runc"',
        'events_logger = "file"',
        `tmp_dir = "${path.join(dir, "tmp")}"`,
        ""
      ].join("\n")
    )
    fs.writeFileSync(
      storage,
      [
        "[storage]",
        `driver = "${storageDriver}"`,
        `graphroot = "${path.join(dir, "root")}"`,
        `runroot = "${path.join(dir, "run")}"`,
        ""
      ].join("\n")
    )
    fs.writeFileSync(
      registries,
      [
        "# no unqualified-search registries: a short name never leads to a network lookup",
        "unqualified-search-registries = []",
        'short-name-mode = "disabled"',
        "",
        "[[registry]]",
        'location = "127.0.0.1"',
        "insecure = true",
        ""
      ].join("\n")
    )
    let cdi: string | undefined
    if (options.cdi !== false) {
      yield* useCdiSpec
      cdi = CDI_SPEC
    }
    const target: Podman = {
      tool: "podman",
      dir,
      env: {
        CONTAINERS_CONF: conf,
        CONTAINERS_STORAGE_CONF: storage,
        CONTAINERS_REGISTRIES_CONF: registries,
        ...proxyEnv(guard)
      },
      cdiSpec: cdi,
      storageDriver,
      networkAttempts: () => [...guard.attempts]
    }
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* Effect.ignore(
          run(target, ["rm", "--all", "--force", "--time", "0"], { timeout: "60 seconds" })
        )
        // conmon or a container process that outlived `rm` (they name the directory)
        const left = processes()
          .filter((p) => p.cmdline.includes(dir) && p.pid !== process.pid)
          .map((p) => p.pid)
        yield* stopPids(left, "5 seconds")
      })
    )
    return target
  })

// ---- the local registry ------------------------------------------------------------------------

export interface Registry {
  /** `127.0.0.1:<port>`: the prefix of image names pushed to it. */
  readonly host: string
  readonly port: number
  readonly dir: string
  readonly pid: number
  readonly logs: () => string
}

const httpStatus = (url: string) =>
  Effect.async<number, ContainersError>((resume) => {
    const request = http.get(url, { timeout: 2000 }, (response) => {
      response.resume()
      resume(Effect.succeed(response.statusCode ?? 0))
    })
    request.on("timeout", () => request.destroy(new Error("timeout")))
    request.on("error", (e) => resume(Effect.fail(fail(e.message))))
  })

/** Debian's `docker-registry` (distribution 2.8) on 127.0.0.1:<free port>, filesystem storage in a temp dir. */
export const startRegistry = (): Effect.Effect<Registry, ContainersError, Scope.Scope> =>
  Effect.gen(function* () {
    const which = yield* execOutput("sh", ["-c", "command -v docker-registry"])
    if (which.code !== 0)
      return yield* fail("docker-registry is not installed: apt-get install -y docker-registry")
    const dir = yield* tempDir("mlops-reg-")
    const port = yield* freePort
    const config = path.join(dir, "config.yml")
    fs.writeFileSync(
      config,
      [
        "version: 0.1",
        "log:",
        "  level: warn",
        "  accesslog:",
        "    disabled: true",
        "storage:",
        "  filesystem:",
        `    rootdirectory: ${path.join(dir, "data")}`,
        "  delete:",
        "    enabled: true",
        "http:",
        `  addr: 127.0.0.1:${port}`,
        `  secret: ${crypto.randomBytes(16).toString("hex")}`,
        ""
      ].join("\n")
    )
    let output = ""
    const child = yield* Effect.try({
      try: () => {
        const proc = spawn(which.stdout.trim(), ["serve", config], { stdio: ["ignore", "pipe", "pipe"] })
        const append = (chunk: Buffer) => {
          output += chunk.toString("utf8")
        }
        proc.stdout?.on("data", append)
        proc.stderr?.on("data", append)
        proc.on("error", (e) => append(Buffer.from(`spawn failed: ${e.message}\n`)))
        return proc
      },
      catch: (e) => fail(`spawning docker-registry: ${String(e)}`)
    })
    yield* Effect.addFinalizer(() =>
      child.pid === undefined ? Effect.void : stopPids([child.pid], "10 seconds")
    )
    const url = `http://127.0.0.1:${port}/v2/`
    yield* httpStatus(url).pipe(
      Effect.filterOrFail(
        (status) => status === 200,
        (status) => fail(`GET /v2/ answered ${status}`)
      ),
      Effect.retry(
        Schedule.spaced("100 millis").pipe(
          Schedule.whileInput(() => child.exitCode === null),
          Schedule.upTo("30 seconds")
        )
      ),
      Effect.mapError(() => fail(`docker-registry did not answer on ${url} within 30 s: ${output.trim()}`))
    )
    return { host: `127.0.0.1:${port}`, port, dir, pid: child.pid ?? 0, logs: () => output }
  })

// ---- images --------------------------------------------------------------------------------------

export interface ImageSpec {
  /** e.g. `mlops-test/sglang:v0.5.11` (podman stores it as `localhost/mlops-test/sglang:v0.5.11`). */
  readonly name: string
  /**
   * Directories (or files) to add: `site-packages` copies `from` into the image Python's
   * purelib (`sysconfig.get_paths()["purelib"]`) under its own name; `bin` copies a file into
   * /usr/local/bin (executable).
   */
  readonly packages: ReadonlyArray<{ readonly from: string; readonly into: "site-packages" | "bin" }>
  readonly env?: Readonly<Record<string, string>>
  readonly labels?: Readonly<Record<string, string>>
  /** The host Python copied into the image (default: `python3` on PATH). */
  readonly python?: string
}

export interface Image {
  readonly name: string
  /** The image id the engine gave it. */
  readonly id: string
  /** The interpreter inside the image (the host's own path; /usr/bin/python3 and /usr/local/bin/python3 point at it). */
  readonly python: string
  readonly purelib: string
  /** Bytes of the tarball imported. */
  readonly bytes: number
  /** Milliseconds: building the base rootfs (0 when this process had built it already), adding the packages, the import. */
  readonly timings: { readonly base: number; readonly packages: number; readonly import: number }
}

interface Base {
  readonly tarball: string
  readonly python: string
  readonly purelib: string
  readonly version: string
  readonly ms: number
}

/**
 * Builds the tarballs. `base OUT`: the host Python at its own absolute paths (the resolved
 * interpreter, its stdlib minus test/idlelib/tkinter/ensurepip/lib2to3/turtledemo/pydoc_data/
 * distutils/sqlite3/curses and site-packages, the compiled caches of this version only,
 * lib-dynload minus the test, tk, sqlite, dbm, nis, readline and curses modules, every library `ldd` lists for them and the loader; ELF files without their debug
 * sections when binutils' `strip` is here), every symlink on those paths
 * kept as a symlink (usr-merged /lib, /lib64 and /bin), /bin/sh (the host's dash), python3 links
 * in /usr/bin and /usr/local/bin, /tmp 1777, /etc/passwd and /etc/group with root.
 * `append TAR SPEC.json`: adds files and directories to an existing tarball.
 */
const ROOTFS_PY = String.raw`
import io, json, os, shutil, stat, subprocess, sys, sysconfig, tarfile

SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "ensurepip", "lib2to3", "turtledemo", "pydoc_data",
             "distutils", "sqlite3", "curses", "site-packages", "dist-packages"}
# modules a server never needs, some with large libraries (libdb, libsqlite3, krb5 via nis)
SKIP_MODULES = ("_tkinter", "_test", "_ctypes_test", "xxlimited", "_xxtestfuzz", "xxsubtype", "_sqlite3", "_dbm",
                "_gdbm", "nis", "readline", "_curses", "ossaudiodev", "spwd", "_crypt")
TAG = ".%s.pyc" % sys.implementation.cache_tag


def tarinfo(name, kind, mode, size=0, link="", mtime=0):
    info = tarfile.TarInfo(name.lstrip("/") or ".")
    info.type, info.mode, info.size, info.linkname, info.mtime = kind, mode, size, link, mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


STRIP = shutil.which("strip")


def stripped(path, st):
    """An ELF file without its debug sections (pyenv builds keep them: libpython 23 MB -> 6 MB),
    when binutils' strip is here; else None."""
    if STRIP is None or st.st_size < 65536:
        return None
    with open(path, "rb") as f:
        if f.read(4) != b"\x7fELF":
            return None
    out = os.path.join(os.environ["ROOTFS_TMP"], "stripped-%d" % os.getpid())
    if subprocess.run([STRIP, "--strip-debug", "-o", out, path], capture_output=True).returncode != 0:
        return None
    return out


def add_file(tar, path, name, mode=None, strip=False):
    st = os.stat(path)
    source = (stripped(path, st) if strip else None) or path
    with open(source, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        info = tarinfo(name, tarfile.REGTYPE, mode or stat.S_IMODE(st.st_mode), size, mtime=int(st.st_mtime))
        tar.addfile(info, f)


class Tree:
    def __init__(self):
        self.entries = {}
        self.real = {"/": "/"}

    def real_dir(self, path):
        if path in self.real:
            return self.real[path]
        parent = self.real_dir(os.path.dirname(path))
        full = os.path.join(parent, os.path.basename(path))
        if os.path.islink(full):
            target = os.readlink(full)
            self.entries[full] = ("link", target)
            result = self.real_dir(os.path.normpath(os.path.join(parent, target)))
        else:
            self.entries.setdefault(full, ("dir", None))
            result = full
        self.real[path] = result
        return result

    def add(self, path):
        parent = self.real_dir(os.path.dirname(path))
        full = os.path.join(parent, os.path.basename(path))
        mode = os.lstat(full).st_mode
        if stat.S_ISLNK(mode):
            target = os.readlink(full)
            self.entries[full] = ("link", target)
            self.add(os.path.normpath(os.path.join(parent, target)))
        elif stat.S_ISDIR(mode):
            self.entries.setdefault(full, ("dir", None))
        elif stat.S_ISREG(mode):
            self.entries[full] = ("file", None)

    def write(self, tar):
        for path in sorted(self.entries):
            kind, link = self.entries[path]
            if kind == "dir":
                tar.addfile(tarinfo(path, tarfile.DIRTYPE, 0o755))
            elif kind == "link":
                tar.addfile(tarinfo(path, tarfile.SYMTYPE, 0o777, link=link))
            else:
                add_file(tar, path, path, strip=True)


def libraries(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        words = line.split()
        if "=>" in words:
            at = words.index("=>") + 1
            if at < len(words) and words[at].startswith("/"):
                found.append(words[at])
        elif words and words[0].startswith("/"):
            found.append(words[0])
    return found


def base(out):
    exe = os.path.realpath(sys.executable)
    paths = sysconfig.get_paths()
    stdlib, purelib = paths["stdlib"], paths["purelib"]
    dynload = os.path.join(paths["platstdlib"], "lib-dynload")
    tree = Tree()
    tree.add(exe)
    binaries = [exe, os.path.realpath("/bin/sh")]
    for root, dirs, files in os.walk(stdlib):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("config-")
                   and os.path.join(root, d) not in (purelib, paths["platlib"])]
        for name in files:
            if name.endswith(".a") or (root == dynload and name.startswith(SKIP_MODULES)):
                continue
            if name.endswith(".pyc") and not (os.path.basename(root) == "__pycache__" and name.endswith(TAG)):
                continue
            path = os.path.join(root, name)
            tree.add(path)
            if root == dynload and ".so" in name:
                binaries.append(path)
    tree.add("/bin/sh")
    for binary in binaries:
        for lib in libraries(binary):
            if os.path.exists(lib):
                tree.add(lib)
    for link in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if link != exe and link not in tree.entries:
            parent = os.path.dirname(link)
            while parent != "/" and parent not in tree.entries:
                tree.entries[parent] = ("dir", None)
                parent = os.path.dirname(parent)
            tree.entries[link] = ("link", exe)
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
        tree.write(tar)
        tar.addfile(tarinfo("tmp", tarfile.DIRTYPE, 0o1777))
        if "/etc" not in tree.entries:
            tar.addfile(tarinfo("etc", tarfile.DIRTYPE, 0o755))
        for path, text in [("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"), ("etc/group", "root:x:0:\n")]:
            data = text.encode()
            tar.addfile(tarinfo(path, tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    print(json.dumps({"python": exe, "purelib": purelib, "version": "%d.%d.%d" % sys.version_info[:3]}))


def append(tar_path, spec_path):
    with open(spec_path) as f:
        spec = json.load(f)
    with tarfile.open(tar_path, "a", format=tarfile.GNU_FORMAT) as tar:
        # docker refuses a layer holding a path twice: only directories the tarball lacks
        made = set("/" + name.rstrip("/") for name in tar.getnames())

        def parents(path):
            parent = os.path.dirname(path)
            if parent in ("/", "") or parent in made:
                return
            parents(parent)
            made.add(parent)
            tar.addfile(tarinfo(parent, tarfile.DIRTYPE, 0o755))

        for item in spec["items"]:
            source, dest, mode = os.path.realpath(item["from"]), item["to"], item.get("mode")
            parents(dest)
            if not os.path.isdir(source):
                add_file(tar, source, dest, mode)
                continue
            for root, dirs, files in os.walk(source):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                at = os.path.normpath(os.path.join(dest, os.path.relpath(root, source)))
                made.add(at)
                tar.addfile(tarinfo(at, tarfile.DIRTYPE, 0o755))
                for name in sorted(files):
                    if not name.endswith(".pyc"):
                        add_file(tar, os.path.join(root, name), os.path.join(at, name), mode)


if sys.argv[1] == "base":
    base(sys.argv[2])
else:
    append(sys.argv[2], sys.argv[3])
`

/**
 * Per process: the directory holding the base tarballs, `mlops-rootfs-<pid>-XXXXXX`, removed when
 * the process exits; a test worker that is killed does not get to, so the directories of dead
 * processes are removed when the next one is made.
 */
let workDir: string | undefined
const processWorkDir = () => {
  if (workDir === undefined) {
    for (const entry of fs.readdirSync(os.tmpdir())) {
      const owner = /^mlops-rootfs-(\d+)-/.exec(entry)?.[1]
      if (owner !== undefined && !alive(Number(owner)))
        fs.rmSync(path.join(os.tmpdir(), entry), { recursive: true, force: true })
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `mlops-rootfs-${process.pid}-`))
    fs.writeFileSync(path.join(dir, "rootfs.py"), ROOTFS_PY)
    process.once("exit", () => fs.rmSync(dir, { recursive: true, force: true }))
    workDir = dir
  }
  return workDir
}

const bases = new Map<string, Promise<Base>>()
/** Pythons whose base build time an image already reported. */
const reported = new Set<string>()

/** The base rootfs tarball for `python`, built once per process. */
export const baseTarball = (python = "python3"): Effect.Effect<Base, ContainersError> =>
  Effect.tryPromise({
    try: () => {
      let pending = bases.get(python)
      if (pending === undefined) {
        pending = new Promise<Base>((resolve, reject) => {
          const dir = processWorkDir()
          const tarball = path.join(dir, `base-${bases.size}.tar`)
          const started = Date.now()
          execFile(
            python,
            [path.join(dir, "rootfs.py"), "base", tarball],
            { timeout: 300_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ROOTFS_TMP: dir } },
            (error, stdout, stderr) => {
              if (error) return reject(new Error(`${python} rootfs.py base: ${error.message} ${stderr}`))
              const info = JSON.parse(stdout.trim().split("\n").pop() ?? "{}")
              resolve({ tarball, ...info, ms: Date.now() - started })
            }
          )
        })
        bases.set(python, pending)
        pending.catch(() => bases.delete(python))
      }
      return pending
    },
    catch: (e) => fail(`building the base rootfs: ${String(e)}`)
  })

const dockerfileValue = (value: string) => JSON.stringify(value)

/**
 * Build a root filesystem holding this machine's Python and `spec.packages`, and import it
 * into the target's engine as `spec.name` (with its ENV and LABELs). The base is built once
 * per process and reused across engines; each image copies it and appends its packages.
 */
export const buildImage = (target: Target, spec: ImageSpec): Effect.Effect<Image, ContainersError> =>
  Effect.gen(function* () {
    const base = yield* baseTarball(spec.python)
    const key = spec.python ?? "python3"
    const baseMs = reported.has(key) ? 0 : base.ms
    reported.add(key)
    const started = Date.now()
    return yield* Effect.acquireUseRelease(
      Effect.try({
        try: () => fs.mkdtempSync(path.join(processWorkDir(), "image-")),
        catch: (e) => fail(String(e))
      }),
      (dir) =>
        Effect.gen(function* () {
          const tarball = path.join(dir, "rootfs.tar")
          fs.copyFileSync(base.tarball, tarball)
          const items = spec.packages.map((p) =>
            p.into === "site-packages"
              ? { from: p.from, to: path.join(base.purelib, path.basename(p.from)) }
              : { from: p.from, to: path.join("/usr/local/bin", path.basename(p.from)), mode: 0o755 }
          )
          if (items.length > 0) {
            const specFile = path.join(dir, "spec.json")
            fs.writeFileSync(specFile, JSON.stringify({ items }))
            const out = yield* execOutput(
              spec.python ?? "python3",
              [path.join(processWorkDir(), "rootfs.py"), "append", tarball, specFile],
              { timeout: "2 minutes" }
            )
            if (out.code !== 0) return yield* fail(`adding the packages: ${out.stderr.trim()}`)
          }
          const packaged = Date.now()
          const changes = [
            ...Object.entries(spec.env ?? {}).map(([k, v]) => `ENV ${k}=${dockerfileValue(v)}`),
            ...Object.entries(spec.labels ?? {}).map(
              ([k, v]) => `LABEL ${dockerfileValue(k)}=${dockerfileValue(v)}`
            )
          ]
          const id = yield* runOk(
            target,
            ["import", ...changes.flatMap((c) => ["--change", c]), tarball, spec.name],
            { timeout: "3 minutes" }
          )
          return {
            name: spec.name,
            id: id.trim().split("\n").pop() ?? "",
            python: base.python,
            purelib: base.purelib,
            bytes: fs.statSync(tarball).size,
            timings: {
              base: baseMs,
              packages: packaged - started,
              import: Date.now() - packaged
            }
          } satisfies Image
        }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
  })

/** Tag `name` as `<registry>/<name>` and push it there (podman: `--tls-verify=false`); the pushed reference. */
export const pushImage = (
  target: Target,
  registry: Pick<Registry, "host">,
  name: string
): Effect.Effect<string, ContainersError> =>
  Effect.gen(function* () {
    const ref = `${registry.host}/${name.replace(/^localhost\//, "")}`
    yield* runOk(target, ["tag", name, ref])
    yield* runOk(target, ["push", ...(target.tool === "podman" ? ["--tls-verify=false"] : []), ref], {
      timeout: "3 minutes"
    })
    return ref
  })
