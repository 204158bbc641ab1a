/**
 * The fake counterparts of the scripts mlops sends (`shellScripts.ts`, the kill script of
 * `groupLiveness.ts`): each does what its script does, with the same positional arguments and
 * the same stdin, through the same programs of the host (`kill`, `ps`, `sh -c <line>`), so
 * that a registered program overriding one of them is honoured as on a real host.
 *
 * @internal
 */
import { Effect } from "effect"
import type { ProcessInfo } from "../FakeProgram.js"
import { decodeLossy } from "./fakeFs.js"
import type { ProcessSpec, Stdio, SystemContext, SystemProgram } from "./fakeProcesses.js"
import { basename, discard, shellStatus } from "./fakeProcesses.js"
import { evalEnvScript, shellProgram, type Wrapper } from "./fakeShell.js"
import { groupRuns, killAndConfirmScript } from "./groupLiveness.js"
import { formatStat } from "./procStat.js"
import { LIFELINE, SPAWN, SPAWN_LOCKED, SPAWN_RUNNING, SUPERVISOR } from "./shellScripts.js"

/** The start time a fake process records and its `/proc/<pid>/stat` reports. */
export const startTimeOf = (process: ProcessInfo): string => String(process.startedAtMs)

/** `/proc/<pid>/stat` of a fake process. */
export const statOf = (process: ProcessInfo): string =>
  formatStat({
    pid: process.pid,
    ppid: process.ppid,
    pgid: process.pgid,
    comm: basename(process.argv[0] ?? ""),
    startTime: startTimeOf(process)
  })

/** The signals the lifeline re-raises (its FATAL_SIGNALS). */
const FATAL = new Set("HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM".split(" "))

const PRIVATE = { mode: 0o600 } as const
const PRIVATE_DIR = { mode: 0o700 } as const
/** The login umask the supervisor hands back to the command (not modelled beyond this). */
const LOGIN_UMASK = "0022"

const absolute = (ctx: SystemContext, path: string) =>
  ctx.fs.resolve(path.startsWith("/") ? path : `${ctx.cwd}/${path}`)

const lineOf = (ctx: SystemContext, line: string): ProcessSpec => ({
  argv: ["sh", "-c", line],
  env: ctx.env,
  cwd: ctx.cwd
})

/** The environment after the first `count` bytes of stdin (an env script) are evaluated. */
const withEnv = (ctx: SystemContext, stdin: Uint8Array, count: number) =>
  count > 0 ? evalEnvScript(ctx, decodeLossy(stdin.slice(0, count)), ctx.env) : Effect.succeed({ ...ctx.env })

/** LIFELINE: `$1` line, `$2` env bytes, `$3` stdin bytes; the command is a child in this group. */
const lifeline: Wrapper = (ctx, [, line = "", envBytes = "0", stdinBytes = "0"], stdio) =>
  Effect.gen(function* () {
    const e = Number(envBytes)
    const env = yield* withEnv(ctx, stdio.stdin, e)
    if (typeof env === "string") return 125
    const stdin = stdio.stdin.slice(e, e + Number(stdinBytes))
    const child = yield* ctx.startChild({ ...lineOf(ctx, line), env }, { ...stdio, stdin })
    const status = yield* child.exit
    if (status.signal !== null && FATAL.has(status.signal)) return yield* ctx.raise(status.signal)
    return shellStatus(status)
  })

/** The supervisor; `child` fixes the command's pid and start time (a restored process). */
export const supervise = (
  child: { readonly pid?: number; readonly startedAtMs?: number } = {}
): SystemProgram => ({
  match: () => false,
  run: () => Effect.dieMessage("the fake supervisor runs as a system program"),
  runSystem: (ctx) => supervisor(ctx, ctx.argv.slice(3), ctx.stdio, child)
})

const supervisor = (
  ctx: SystemContext,
  [, dir = "", log = "", line = ""]: ReadonlyArray<string>,
  stdio: Stdio,
  fixed: { readonly pid?: number; readonly startedAtMs?: number } = {}
) =>
  Effect.gen(function* () {
    yield* ctx.onSignal("TERM", Effect.void)
    yield* ctx.onSignal("INT", Effect.void)
    const self = ctx.table.process(ctx.pid)
    yield* ctx.fs.write(`${dir}/start`, `${self === undefined ? "" : startTimeOf(self)}\n`, PRIVATE)
    yield* ctx.fs.write(`${dir}/pgid`, `${ctx.pid}\n`, PRIVATE)
    const command = yield* ctx.startChild(lineOf(ctx, line), stdio, {
      runDir: dir,
      logPath: log,
      ...(fixed.pid === undefined ? {} : { pid: fixed.pid }),
      ...(fixed.startedAtMs === undefined ? {} : { startedAtMs: fixed.startedAtMs })
    })
    yield* ctx.fs.write(`${dir}/pid`, `${command.pid}\n`, PRIVATE)
    const status = yield* command.exit
    const record = status.signal !== null ? `signal ${status.signal}` : `code ${status.exitCode}`
    yield* ctx.fs.write(`${dir}/exit`, `${record}\n`, PRIVATE)
    return shellStatus(status)
  })

const text = (ctx: SystemContext, path: string) => Effect.map(ctx.fs.readText(path), (t) => (t ?? "").trim())

/** SPAWN: `$1` run dir, `$2` log, `$3` line, `$4` supervisor script, `$5` token, `$6` env bytes. */
const spawn: Wrapper = (ctx, args, stdio) =>
  Effect.gen(function* () {
    const [, runDir = "", logPath = "", line = "", script = SUPERVISOR, token = "", envBytes = "0"] = args
    const dir = absolute(ctx, runDir)
    yield* ctx.fs.mkdir(dir, PRIVATE_DIR)
    const lock = `${dir}/spawn.lock`
    if (yield* ctx.fs.exists(lock)) {
      const holder = (yield* text(ctx, `${lock}/pid`)) || "-"
      yield* ctx.stdout.line(`locked ${lock} ${holder}`)
      return SPAWN_LOCKED
    }
    yield* ctx.fs.mkdir(lock, PRIVATE_DIR)
    yield* ctx.fs.write(`${lock}/pid`, `${ctx.pid}\n`, PRIVATE)
    return yield* spawnLocked(
      ctx,
      { dir, logPath, line, script, token, envBytes: Number(envBytes) },
      stdio
    ).pipe(Effect.ensuring(ctx.fs.remove(lock)))
  })

const spawnLocked = (
  ctx: SystemContext,
  o: {
    readonly dir: string
    readonly logPath: string
    readonly line: string
    readonly script: string
    readonly token: string
    readonly envBytes: number
  },
  stdio: Stdio
) =>
  Effect.gen(function* () {
    const { dir } = o
    const pgidText = yield* text(ctx, `${dir}/pgid`)
    if (pgidText !== "" && (yield* text(ctx, `${dir}/exit`)) === "") {
      const pgid = Number(pgidText)
      const members = (yield* ctx.processes).filter((p) => p.pgid === pgid)
      const leader = ctx.table.process(pgid)
      const recorded = yield* text(ctx, `${dir}/start`)
      const ours = leader === undefined || recorded === "" || startTimeOf(leader) === recorded
      if (members.length > 0 && ours) {
        yield* ctx.stdout.line(`running ${pgid}`)
        return SPAWN_RUNNING
      }
    }
    const env = yield* withEnv(ctx, stdio.stdin, o.envBytes)
    if (typeof env === "string") {
      yield* ctx.stderr.line(env)
      return 2
    }
    for (const name of ["pid", "pgid", "exit", "start", "token", "stopped"])
      yield* ctx.fs.remove(`${dir}/${name}`)
    const log = absolute(ctx, o.logPath)
    yield* ctx.fs.mkdir(log.replace(/\/[^/]*$/, "") || "/", PRIVATE_DIR)
    if (yield* ctx.fs.exists(log)) yield* ctx.fs.rename(log, `${log}.1`)
    yield* ctx.fs.write(log, "", PRIVATE)
    yield* ctx.fs.write(`${dir}/token`, `${o.token}\n`, PRIVATE)
    const toLog = (bytes: Uint8Array) => ctx.fs.append(log, bytes)
    yield* ctx.startChild(
      { argv: ["sh", "-c", o.script, "mlops-supervisor", dir, log, o.line, LOGIN_UMASK], env, cwd: ctx.cwd },
      { stdin: new Uint8Array(), stdout: toLog, stderr: toLog },
      { newGroup: true, detached: true, runDir: dir, logPath: log }
    )
    let waited = 0
    while (!(yield* ctx.fs.exists(`${dir}/pid`)) || !(yield* ctx.fs.exists(`${dir}/pgid`))) {
      if (++waited > 10_000) {
        yield* ctx.stderr.line(`pid files did not appear in ${dir}`)
        return 3
      }
      yield* Effect.yieldNow()
    }
    const pid = yield* text(ctx, `${dir}/pid`)
    // the program runs (its `exec` done) before the spawn returns: deterministic tests
    yield* ctx.table.whenLaunched(Number(pid))
    yield* ctx.fs.remove(`${dir}/spawn.lock`)
    for (const out of [dir, log, pid, yield* text(ctx, `${dir}/pgid`), yield* text(ctx, `${dir}/start`)])
      yield* ctx.stdout.line(out)
    return 0
  })

/** `killAndConfirmScript`: `$1` pgid, `$2` polls of 50 ms. */
const killAndConfirm: Wrapper = (ctx, [, pgid = "", polls = "1"]) =>
  Effect.gen(function* () {
    const run = (argv: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const out: Array<Uint8Array> = []
        const child = yield* ctx.startChild(
          { argv, env: ctx.env, cwd: ctx.cwd },
          { stdin: new Uint8Array(), stdout: (b) => Effect.sync(() => void out.push(b)), stderr: discard }
        )
        const status = yield* child.exit
        return { code: shellStatus(status), stdout: decodeLossy(Buffer.concat(out)) }
      })
    const groupRunning = Effect.gen(function* () {
      const table = yield* run(["ps", "-A", "-o", "pgid=", "-o", "stat="])
      if (table.code === 0) return groupRuns(table.stdout, Number(pgid)) ?? false
      return (yield* run(["kill", "-s", "0", "--", `-${pgid}`])).code === 0
    })
    if ((yield* run(["kill", "-s", "KILL", "--", `-${pgid}`])).code !== 0) return 0
    for (let i = 0; yield* groupRunning; ) {
      i++
      if (i >= Number(polls)) return 3
      yield* Effect.sleep("50 millis")
    }
    return 0
  })

/** The host's `sh`, knowing mlops' scripts. */
export const shell: SystemProgram = shellProgram(
  new Map<string, Wrapper>([
    [LIFELINE, lifeline],
    [SPAWN, spawn],
    [SUPERVISOR, (ctx, args, stdio) => supervisor(ctx, args, stdio)],
    [killAndConfirmScript, killAndConfirm]
  ])
)
