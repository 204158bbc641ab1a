/**
 * Per-command latency on one host (the test sshd on 127.0.0.1), N sequential trivial commands:
 *   fresh      a new `ssh` process and connection per command
 *   master     `ssh` through an OpenSSH ControlMaster (multiplexed, client process per command)
 *   ours       Connection.exec on an open connection (socket with Nagle off, lifeline wrapper)
 *   ssh2-nagle plain ssh2 exec on its default socket (Nagle on), for contrast
 * Prints medians and ratios against `ours` measured in the same run. Target: ours <= master / 2.
 * Every command also starts the remote user's shell (and its ~/.bashrc); that cost is in all rows.
 */

import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import ssh2 from "ssh2"
import { makeConnection } from "../packages/core/src/ConnectionPool.js"
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

const ssh2Default = (sshd: Sshd.Sshd) =>
  Effect.acquireRelease(
    Effect.async<ssh2.Client>((resume) => {
      const client = new ssh2.Client()
      client.on("error", (e) => console.error("ssh2:", e.message))
      client.once("ready", () => resume(Effect.succeed(client)))
      client.connect({
        host: "127.0.0.1",
        port: sshd.port,
        username: sshd.user,
        privateKey: fs.readFileSync(sshd.clientKeyPath)
      })
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

const bench = Effect.gen(function* () {
  const sshd = yield* Sshd.start()
  const controlPath = path.join(sshd.dir, "cm-%C")

  const fresh = yield* timeEach(() => sshTrue(Sshd.sshArgs(sshd, "true")))

  const masterOptions = ["-o", `ControlPath=${controlPath}`]
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
        {
          timeout: 20_000
        }
      )
    ),
    () =>
      Effect.sync(() =>
        execFileSync("ssh", Sshd.sshArgs(sshd, "", ["-O", "exit", ...masterOptions]), { stdio: "ignore" })
      )
  )
  const master = yield* timeEach(() => sshTrue(Sshd.sshArgs(sshd, "true", masterOptions)))

  const conn = yield* makeConnection(sshd.hostConfig)
  yield* conn.exec(cmd(["true"]))
  const ours = yield* timeEach(() => Effect.runPromise(conn.exec(cmd(["true"]))))

  const plain = yield* ssh2Default(sshd)
  const nagle = yield* timeEach(() => execRaw(plain, "true"))

  // The user's shell startup as sshd runs it (SSH_CLIENT set, stdin a socket: bash reads
  // ~/.bashrc), measured locally: the floor every row pays, whatever the transport.
  const shellFloor = yield* timeEach(
    () =>
      new Promise<void>((resolve) =>
        execFile(
          process.env.SHELL ?? "/bin/sh",
          ["-c", "true"],
          { env: { ...process.env, SSH_CLIENT: "127.0.0.1 1 22", SHLVL: "0" } },
          () => resolve()
        )
      )
  )
  const over = (ms: number) => Math.max(ms - shellFloor, 0.1)
  const row = (name: string, ms: number) =>
    `  ${name.padEnd(11)} ${ms.toFixed(1).padStart(8)} ms   ${(ms / ours).toFixed(2)}x ours   transport ${over(ms).toFixed(1).padStart(7)} ms`
  console.log(`ssh: median of ${N} sequential \`true\` commands on 127.0.0.1`)
  console.log(row("fresh", fresh))
  console.log(row("master", master))
  console.log(row("ours", ours))
  console.log(row("ssh2-nagle", nagle))
  console.log(
    `  remote shell startup (local, same shell and rc files): ${shellFloor.toFixed(1)} ms per command`
  )
  console.log(
    `  fresh/ours = ${(fresh / ours).toFixed(2)}, master/ours = ${(master / ours).toFixed(2)} (target >= 2)`
  )
  if (ours - shellFloor < 5) {
    console.log(
      `  beyond shell startup: ours adds < 5 ms (within noise), master ${(master - shellFloor).toFixed(1)} ms, fresh ${(fresh - shellFloor).toFixed(1)} ms`
    )
  } else {
    console.log(
      `  beyond shell startup: fresh/ours = ${(over(fresh) / over(ours)).toFixed(2)}, master/ours = ${(over(master) / over(ours)).toFixed(2)}`
    )
  }
})

Effect.runPromise(Effect.scoped(bench).pipe(Effect.timeout("4 minutes"))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
