import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Schedule, Scope } from "effect"
import * as ConnectionPool from "../../src/ConnectionPool.js"
import { HostNotFound } from "../../src/Errors.js"
import { HostConfig } from "../../src/HostConfig.js"
import { Hosts } from "../../src/Hosts.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { failureOf, failureTag } from "../support/exits.js"
import { isAlive } from "../support/local.js"
import * as Sshd from "../support/Sshd.js"

const hostsFor = (host: HostConfig) =>
  Layer.succeed(Hosts, {
    resolve: (alias) =>
      alias === host.alias
        ? Effect.succeed(host)
        : Effect.fail(new HostNotFound({ alias, known: [host.alias], sources: ["test"] })),
    list: Effect.succeed([host]),
    groups: Effect.succeed(new Map())
  })

describe("live connect", () => {
  it.scopedLive("a changed host key fails with HostKeyMismatch and runs nothing", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      yield* sshd.rotateHostKey
      const marker = path.join(sshd.dir, "must-not-exist")
      const exit = yield* Effect.scoped(
        Effect.flatMap(ConnectionPool.makeConnection(sshd.hostConfig), (conn) =>
          conn.exec(cmd(["touch", marker]))
        )
      ).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "HostKeyMismatch")
      assert.isFalse(fs.existsSync(marker))
    })
  )

  it.scopedLive("a port with nothing listening fails with ConnectionRefused", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const port = yield* Effect.promise(
        () =>
          new Promise<number>((resolve) => {
            const server = net.createServer().listen(0, "127.0.0.1", () => {
              const { port } = server.address() as net.AddressInfo
              server.close(() => resolve(port))
            })
          })
      )
      const host = new HostConfig({ ...sshd.hostConfig, port })
      const exit = yield* Effect.scoped(ConnectionPool.makeConnection(host)).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "ConnectionRefused")
    })
  )

  it.scopedLive("an unauthorized key fails with AuthenticationFailed listing what was tried", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const other = path.join(sshd.dir, "other_ed25519")
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other])
      const host = new HostConfig({ ...sshd.hostConfig, identityFiles: [other] })
      const exit = yield* Effect.scoped(ConnectionPool.makeConnection(host)).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "AuthenticationFailed")
      const failed = failureOf(exit)
      if (failed?._tag === "AuthenticationFailed")
        assert.deepStrictEqual(failed.tried, [`publickey ${other}`])
    })
  )

  it.scopedLive("an encrypted key needs a passphrase: ConfigFileError without, connected with", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const locked = path.join(sshd.dir, "locked_ed25519")
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "s3cret", "-f", locked])
      fs.appendFileSync(path.join(sshd.dir, "authorized_keys"), fs.readFileSync(`${locked}.pub`))
      const host = new HostConfig({ ...sshd.hostConfig, identityFiles: [locked] })
      const without = yield* Effect.scoped(ConnectionPool.makeConnection(host)).pipe(Effect.exit)
      assert.strictEqual(failureTag(without), "ConfigFileError")
      const keyError = failureOf(without)
      if (keyError?._tag === "ConfigFileError") {
        assert.strictEqual(keyError.path, locked)
        assert.include(keyError.fix ?? "", "MLOPS_SSH_PASSPHRASE")
      }
      const conn = yield* ConnectionPool.makeConnection(host, { passphrase: Redacted.make("s3cret") })
      assert.strictEqual((yield* conn.exec(cmd(["echo", "in"]))).stdout, "in\n")
    })
  )

  it.scopedLive("the pool shares one connection per host and replaces one that dropped", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const pool = yield* ConnectionPool.make().pipe(Effect.provide(hostsFor(sshd.hostConfig)))
      const [a, b] = yield* Effect.all([pool.get("testhost"), pool.get("testhost")], { concurrency: 2 })
      assert.strictEqual(a, b)
      yield* sshd.killSessionProcesses
      const lost = yield* a.closed.pipe(Effect.timeout("5 seconds"))
      assert.strictEqual(lost._tag, "ConnectionLost")
      const c = yield* pool.get("testhost")
      assert.notStrictEqual(c, a)
      assert.strictEqual((yield* c.exec(cmd(["echo", "back"]))).stdout, "back\n")
      const unknown = yield* pool.get("nope").pipe(Effect.exit)
      assert.strictEqual(failureTag(unknown), "HostNotFound")
    })
  )

  it.scopedLive("a detached process survives the client disconnecting and records its signal", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const hosts = hostsFor(sshd.hostConfig)
      const runDir = path.join(sshd.dir, "runs", "one")
      const poolScope = yield* Scope.make()
      const pool = yield* ConnectionPool.make().pipe(Effect.provide(hosts), Scope.extend(poolScope))
      const conn = yield* pool.get("testhost")
      const info = yield* conn.spawnDetached(cmd(["sh", "-c", "echo started; exec sleep 60"]), { runDir })
      assert.strictEqual(info.runDir, runDir)
      assert.strictEqual(info.logPath, path.join(runDir, "log"))
      yield* Scope.close(poolScope, Exit.void)
      assert.isTrue(isAlive(info.pid))
      assert.isTrue(isAlive(info.pgid))

      const again = yield* ConnectionPool.make().pipe(Effect.provide(hosts))
      const conn2 = yield* again.get("testhost")
      const kill = yield* conn2.exec(cmd(["kill", "-s", "TERM", "--", `-${info.pgid}`]))
      assert.strictEqual(kill.exitCode, 0)
      const exitFile = yield* conn2.files
        .read(path.join(runDir, "exit"))
        .pipe(Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("5 seconds"))))
      assert.strictEqual(new TextDecoder().decode(exitFile).trim(), "signal TERM")
      assert.strictEqual(fs.readFileSync(info.logPath, "utf8"), "started\n")
      assert.isFalse(isAlive(info.pid))
    })
  )
})
