/**
 * Per-command latency on one host (the test sshd on 127.0.0.1), N sequential trivial commands:
 *   fresh      a new `ssh` process and connection per command
 *   master     `ssh` through an OpenSSH ControlMaster (multiplexed, client process per command)
 *   ours       Connection.exec on an open connection (socket with Nagle off, lifeline wrapper)
 *   ssh2-nagle plain ssh2 exec on its default socket (Nagle on), for contrast
 *   ssh2-bare  plain ssh2 exec on a socket with Nagle off, no wrapper: the floor ours builds on
 * Prints medians and ratios against `ours` measured in the same run. Target: ours <= master / 2.
 *
 * Every command starts the remote user's login shell; sshd runs it as `shell -c`, and bash then
 * reads ~/.bashrc (on this machine root's runs `pyenv init`, ~100 ms), which swamps the transport.
 * So there are two passes against the same sshd:
 *   raw    as the current user, with their shell and rc files (what a user of this machine gets)
 *   light  as a throwaway user whose shell is /bin/sh and whose home is a temp dir, so only the
 *          transport differs. Only when running as root with `useradd`; the user
 *          (`mlops-bench-<random>`) is deleted at the end. No other user is touched.
 */

import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import ssh2 from "ssh2"
import { makeConnection } from "../packages/core/src/ConnectionPool.js"
import { HostConfig } from "../packages/core/src/HostConfig.js"
import { make as cmd } from "../packages/core/src/RemoteCommand.js"
import * as Sshd from "../packages/core/test/support/Sshd.js"

const N = Number(process.env.MLOPS_BENCH_N ?? 50)

const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

const timeEach = (run: () => Promise<unknown>) =>
  Effect.promise(async () => {
    const times: Array<number> = []
    for (let i = 0; i < N; i++) {
      const start = performance.now()
      await run()
      times.push(performance.now() - start)
    }
    return median(times)
  })

const sshTrue = (args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) =>
    execFile("ssh", [...args], { timeout: 20_000 }, (error) => (error ? reject(error) : resolve()))
  )

const ssh2Plain = (sshd: Sshd.Sshd, username: string, noDelay: boolean) =>
  Effect.acquireRelease(
    Effect.async<ssh2.Client>((resume) => {
      const client = new ssh2.Client()
      client.on("error", (e) => console.error("ssh2:", e.message))
      client.once("ready", () => resume(Effect.succeed(client)))
      const auth = { username, privateKey: fs.readFileSync(sshd.clientKeyPath) }
      if (noDelay) {
        const sock = net.connect({ host: "127.0.0.1", port: sshd.port })
        sock.setNoDelay(true)
        client.connect({ ...auth, sock })
      } else client.connect({ ...auth, host: "127.0.0.1", port: sshd.port })
    }),
    (client) => Effect.sync(() => client.end())
  )

const execRaw = (client: ssh2.Client, line: string) =>
  new Promise<void>((resolve, reject) =>
    client.exec(line, (error, channel) => {
      if (error) return reject(error)
      channel.resume()
      channel.stderr.resume()
      channel.once("close", () => resolve())
    })
  )

interface Figures {
  readonly fresh: number
  readonly master: number
  readonly ours: number
  readonly nagle: number
  readonly bare: number
}

/** All four rows against `sshd`, logging in as `user` (the harness user when undefined). */
const measure = (sshd: Sshd.Sshd, user: string | undefined) =>
  Effect.gen(function* () {
    const as = user === undefined ? [] : ["-o", `User=${user}`]
    const controlPath = path.join(sshd.dir, "cm-%C")
    const masterOptions = [...as, "-o", `ControlPath=${controlPath}`]
    const fresh = yield* timeEach(() => sshTrue(Sshd.sshArgs(sshd, "true", as)))
    yield* Effect.acquireRelease(
      Effect.sync(() =>
        execFileSync(
          "ssh",
          Sshd.sshArgs(sshd, "", [
            "-o",
            "ControlMaster=yes",
            "-o",
            "ControlPersist=yes",
            "-N",
            "-f",
            ...masterOptions
          ]),
          { timeout: 20_000 }
        )
      ),
      () =>
        Effect.sync(() =>
          execFileSync("ssh", Sshd.sshArgs(sshd, "", ["-O", "exit", ...masterOptions]), { stdio: "ignore" })
        )
    )
    const master = yield* timeEach(() => sshTrue(Sshd.sshArgs(sshd, "true", masterOptions)))

    const host = user === undefined ? sshd.hostConfig : new HostConfig({ ...sshd.hostConfig, user })
    const conn = yield* makeConnection(host)
    yield* conn.exec(cmd(["true"]))
    const ours = yield* timeEach(() => Effect.runPromise(conn.exec(cmd(["true"]))))

    const plain = yield* ssh2Plain(sshd, host.user, false)
    const nagle = yield* timeEach(() => execRaw(plain, "true"))
    const noDelay = yield* ssh2Plain(sshd, host.user, true)
    const bare = yield* timeEach(() => execRaw(noDelay, "true"))
    return { fresh, master, ours, nagle, bare } satisfies Figures
  }).pipe(Effect.scoped)

/** A system user with /bin/sh and a temp home holding `authorizedKey`; removed by the scope. */
const lightUser = (name: string, authorizedKey: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-home-"))
      // "*" (not the default "!"): without PAM, sshd refuses accounts whose password is locked
      execFileSync("useradd", ["--system", "--no-create-home", "-d", home, "-s", "/bin/sh", "-p", "*", name])
      const uid = Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim())
      const gid = Number(execFileSync("id", ["-g", name], { encoding: "utf8" }).trim())
      fs.writeFileSync(path.join(home, "authorized_keys"), authorizedKey, { mode: 0o600 })
      fs.chownSync(path.join(home, "authorized_keys"), uid, gid)
      fs.chownSync(home, uid, gid)
      return home
    }),
    (home) =>
      Effect.sync(() => {
        try {
          execFileSync("userdel", [name], { stdio: "ignore" })
        } catch (error) {
          console.error(`userdel ${name} failed: ${String(error)}`)
        }
        fs.rmSync(home, { recursive: true, force: true })
      })
  )

const canMakeUsers = () => {
  if (process.getuid?.() !== 0) return false
  try {
    execFileSync("sh", ["-c", "command -v useradd && command -v userdel"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

const print = (label: string, f: Figures) => {
  const row = (name: string, ms: number) =>
    `  ${name.padEnd(11)} ${ms.toFixed(1).padStart(8)} ms   ${(ms / f.ours).toFixed(2)}x ours`
  console.log(label)
  console.log(row("fresh", f.fresh))
  console.log(row("master", f.master))
  console.log(row("ours", f.ours))
  console.log(row("ssh2-nagle", f.nagle))
  console.log(row("ssh2-bare", f.bare))
  const verdict = f.master / f.ours >= 2 && f.fresh / f.ours > 50 ? "target met" : "target NOT met"
  console.log(
    `  fresh/ours = ${(f.fresh / f.ours).toFixed(1)} (target > 50), master/ours = ${(f.master / f.ours).toFixed(2)} (target >= 2): ${verdict}`
  )
}

const bench = Effect.gen(function* () {
  const light = canMakeUsers() ? `mlops-bench-${Math.random().toString(36).slice(2, 8)}` : undefined
  const home = light === undefined ? undefined : path.join(os.tmpdir(), `mlops-bench-keys-${light}`)
  const sshd = yield* Sshd.start(
    light === undefined
      ? {}
      : { extraConfig: [`Match User ${light}`, `  AuthorizedKeysFile ${home}/authorized_keys`] }
  )
  console.log(`ssh: median of ${N} sequential \`true\` commands on 127.0.0.1`)
  print(
    `raw: as ${sshd.user} with the login shell ${process.env.SHELL ?? "?"} and its rc files`,
    yield* measure(sshd, undefined)
  )
  if (light === undefined || home === undefined) {
    console.log("light: skipped (needs root and useradd): the raw figures include the remote shell's startup")
    return
  }
  const created = yield* lightUser(light, fs.readFileSync(`${sshd.clientKeyPath}.pub`, "utf8"))
  fs.symlinkSync(created, home)
  yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(home, { force: true })))
  print(`light: as ${light}, login shell /bin/sh, empty home (transport only)`, yield* measure(sshd, light))
})

Effect.runPromise(Effect.scoped(bench).pipe(Effect.timeout("4 minutes"))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
