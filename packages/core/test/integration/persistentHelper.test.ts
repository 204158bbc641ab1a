/**
 * The persistent remote helper on the real sshd: it outlives the connection that started it,
 * so a later connection (a later `mlops` run, here with the sockets remembered in a local
 * directory) runs commands without the login shell; it leaves after its idle time, is started
 * again when the rc files changed or it was killed, and stays attached (ending with its
 * connection) when its directory on the host could be tampered with by others.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type ConnectionOptions, makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { isAlive, pgrep, selfExcluding } from "../support/local.js"
import * as ShellUsers from "../support/ShellUsers.js"
import * as Sshd from "../support/Sshd.js"
import { launcherOf } from "../support/transports.js"

// its own user: these tests rewrite its rc and its home's mode
const spec = {
  name: "mlops-rc-persist",
  alias: "rcpersist",
  // what conda prints on activation: the helper's ready line comes after it
  rc: 'echo "(base) conda activated"\necho run >> "$HOME/rc-runs"\nexport MLOPS_RC_VAR=first\n'
}

const setUp = Effect.gen(function* () {
  const sshd = yield* Sshd.start({
    extraConfig: [`Match User ${spec.name}`, "  AuthorizedKeysFile .ssh/authorized_keys"]
  })
  const user = yield* ShellUsers.ensure(sshd, spec)
  fs.chmodSync(user.home, 0o755)
  fs.rmSync(path.join(user.home, "rc-runs"), { force: true })
  fs.rmSync(path.join(user.home, ".mlops"), { recursive: true, force: true })
  const sockets = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-helper-sockets-"))
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(sockets, { recursive: true, force: true })))
  const rcRuns = () => {
    const file = path.join(user.home, "rc-runs")
    return fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").length - 1 : 0
  }
  /** A fresh connection (scoped to `use`) with the sockets remembered in `sockets`. */
  const withConnection = <A, E>(
    use: (conn: Effect.Effect.Success<ReturnType<typeof makeConnection>>) => Effect.Effect<A, E>,
    options: ConnectionOptions = {}
  ) =>
    Effect.scoped(
      Effect.flatMap(
        makeConnection(ShellUsers.hostConfig(sshd, user), { remoteHelperSockets: sockets, ...options }),
        use
      )
    )
  const rcVar = (conn: Effect.Effect.Success<ReturnType<typeof makeConnection>>) =>
    Effect.map(conn.exec(cmd(["printenv", "MLOPS_RC_VAR"])), (r) => r.stdout.trim())
  /** What the rc exported, and the name of the process that launched the command (python3: the helper). */
  const rcVarAndLauncher = (conn: Effect.Effect.Success<ReturnType<typeof makeConnection>>) =>
    Effect.all([rcVar(conn), Effect.map(launcherOf(conn), (name) => name.slice(0, 7))])
  return { sshd, user, sockets, rcRuns, withConnection, rcVar, rcVarAndLauncher }
})

/** Poll `check` every 100 ms for up to `seconds`. */
const eventually = (check: () => boolean, seconds: number) =>
  Effect.gen(function* () {
    for (let i = 0; i < seconds * 10 && !check(); i++) yield* Effect.sleep("100 millis")
    return check()
  })

const modeOf = (file: string) => fs.statSync(file).mode & 0o777

describe("persistent remote helper (real sshd)", () => {
  it.scopedLive(
    "a second connection reaches the first one's helper: no login shell, what the rc exported, private files",
    () =>
      Effect.gen(function* () {
        const { sshd, user, sockets, rcRuns, withConnection, rcVar } = yield* setUp
        assert.strictEqual(yield* withConnection(rcVar), "first")
        assert.strictEqual(rcRuns(), 1)
        const [helper] = sshd.helpers()
        assert.isDefined(helper, "the helper outlived its connection")
        const [second, launcher] = yield* withConnection((conn) =>
          Effect.all([Effect.forEach([1, 2, 3], () => rcVar(conn)), launcherOf(conn)])
        )
        assert.deepStrictEqual(second, ["first", "first", "first"])
        assert.match(launcher, /^python3/)
        assert.strictEqual(rcRuns(), 1, "the second connection ran no login shell")
        assert.deepStrictEqual(sshd.helpers(), [helper])
        // what it made is private, here and on the host
        const remembered = fs.readdirSync(sockets)
        assert.lengthOf(remembered, 1)
        assert.strictEqual(modeOf(sockets), 0o700)
        assert.strictEqual(modeOf(path.join(sockets, remembered[0]!)), 0o600)
        const socket = fs.readFileSync(path.join(sockets, remembered[0]!), "utf8").trim()
        assert.strictEqual(path.dirname(socket), path.join(user.home, ".mlops", "run"))
        assert.strictEqual(modeOf(path.dirname(socket)), 0o700)
        assert.strictEqual(modeOf(path.join(user.home, ".mlops")), 0o700)
        assert.strictEqual(modeOf(socket) & 0o077, 0)
        assert.strictEqual(fs.statSync(socket).uid, user.uid)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "with no connection for its idle time the helper exits and removes its socket",
    () =>
      Effect.gen(function* () {
        const { sshd, sockets, withConnection, rcVar } = yield* setUp
        yield* withConnection(rcVar, { remoteHelperPersist: "2 seconds" })
        const [helper] = sshd.helpers()
        assert.isDefined(helper)
        const socket = fs.readFileSync(path.join(sockets, fs.readdirSync(sockets)[0]!), "utf8").trim()
        // held by a connection, it stays past its idle time
        yield* withConnection((conn) => Effect.zipRight(Effect.sleep("4 seconds"), rcVar(conn)), {
          remoteHelperPersist: "2 seconds"
        })
        assert.isTrue(isAlive(helper!), "alive while a connection held it")
        assert.isTrue(yield* eventually(() => !isAlive(helper!), 10), "exited once idle")
        assert.isFalse(fs.existsSync(socket))
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "after the rc changed, the next connection starts a new helper and the old one leaves",
    () =>
      Effect.gen(function* () {
        const { sshd, user, rcRuns, withConnection, rcVar } = yield* setUp
        assert.strictEqual(yield* withConnection(rcVar), "first")
        const [old] = sshd.helpers()
        fs.writeFileSync(path.join(user.home, ".bashrc"), spec.rc.replace("first", "second"))
        assert.strictEqual(yield* withConnection(rcVar), "second")
        assert.strictEqual(rcRuns(), 2)
        assert.isTrue(yield* eventually(() => !isAlive(old!), 10), "the stale helper exited")
        assert.lengthOf(sshd.helpers(), 1)
        assert.notStrictEqual(sshd.helpers()[0], old)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a helper killed behind mlops' back (logind's KillUserProcesses): the next connection starts one",
    () =>
      Effect.gen(function* () {
        const { sshd, rcRuns, withConnection, rcVar, rcVarAndLauncher } = yield* setUp
        yield* withConnection(rcVar)
        const [old] = sshd.helpers()
        process.kill(old!, "SIGKILL")
        yield* eventually(() => !isAlive(old!), 5)
        assert.deepStrictEqual(yield* withConnection(rcVarAndLauncher), ["first", "python3"])
        assert.strictEqual(rcRuns(), 2)
        assert.lengthOf(sshd.helpers(), 1)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a stopped (hung) helper: the next connection starts one in its place, and the old one leaves once resumed",
    () =>
      Effect.gen(function* () {
        const { sshd, withConnection, rcVar, rcVarAndLauncher } = yield* setUp
        yield* withConnection(rcVar)
        const [old] = sshd.helpers()
        process.kill(old!, "SIGSTOP")
        yield* Effect.addFinalizer(() => Effect.sync(() => isAlive(old!) && process.kill(old!, "SIGCONT")))
        assert.deepStrictEqual(yield* withConnection(rcVarAndLauncher), ["first", "python3"])
        const fresh = sshd.helpers().filter((pid) => pid !== old)
        assert.lengthOf(fresh, 1, "a new helper serves")
        process.kill(old!, "SIGCONT")
        assert.isTrue(yield* eventually(() => !isAlive(old!), 10), "the old one lost its socket and left")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a home others can write to: the helper stays attached, ends with its connection, and nothing is remembered",
    () =>
      Effect.gen(function* () {
        const { sshd, user, sockets, withConnection, rcVar } = yield* setUp
        fs.chmodSync(user.home, 0o777)
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.chmodSync(user.home, 0o755)))
        const launcher = yield* withConnection((conn) => Effect.zipRight(rcVar(conn), launcherOf(conn)))
        assert.match(launcher, /^python3/)
        assert.isTrue(yield* eventually(() => sshd.helpers().length === 0, 5), "no helper outlived it")
        assert.deepStrictEqual(fs.existsSync(sockets) ? fs.readdirSync(sockets) : [], [])
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "connections starting at once share one helper (its start is locked on the host)",
    () =>
      Effect.gen(function* () {
        const { sshd, withConnection } = yield* setUp
        const launchers = yield* Effect.all(
          Array.from({ length: 4 }, () => withConnection(launcherOf)),
          { concurrency: "unbounded" }
        )
        assert.deepStrictEqual(
          launchers.map((l) => l.slice(0, 7)),
          ["python3", "python3", "python3", "python3"]
        )
        assert.isTrue(yield* eventually(() => sshd.helpers().length === 1, 10), `helpers: ${sshd.helpers()}`)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a command's escaped child still holding its output does not keep the helper past its idle time",
    () =>
      Effect.gen(function* () {
        const { sshd, withConnection } = yield* setUp
        const marker = `mlops-pin-${process.pid}`
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            for (const pid of pgrep(selfExcluding(marker))) process.kill(Number(pid), "SIGKILL")
          })
        )
        // the child keeps the command's stdout open (as on an exec channel, the command ends at EOF)
        const timedOut = yield* withConnection(
          (conn) =>
            Effect.flip(
              conn.exec(cmd(["sh", "-c", `setsid sh -c 'sleep 30; : ${marker}' & echo started`]), {
                timeout: "1 second"
              })
            ),
          { remoteHelperPersist: "2 seconds" }
        )
        assert.strictEqual(timedOut._tag, "CommandTimeout")
        assert.lengthOf(pgrep(selfExcluding(marker)), 1, "the escaped child runs")
        assert.isTrue(yield* eventually(() => sshd.helpers().length === 0, 10), "the helper left")
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "remoteHelperPersist 0: the helper ends with its connection",
    () =>
      Effect.gen(function* () {
        const { sshd, rcRuns, withConnection, rcVar } = yield* setUp
        for (let i = 0; i < 2; i++)
          assert.strictEqual(yield* withConnection(rcVar, { remoteHelperPersist: 0 }), "first")
        assert.strictEqual(rcRuns(), 2)
        assert.isTrue(yield* eventually(() => sshd.helpers().length === 0, 5))
      }),
    { timeout: 60_000 }
  )
})
