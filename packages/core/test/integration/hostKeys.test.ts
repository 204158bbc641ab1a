import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { HostConfig } from "../../src/HostConfig.js"
import * as Hosts from "../../src/Hosts.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import { failureOf, failureTag } from "../support/exits.js"
import * as Sshd from "../support/Sshd.js"

/** `[127.0.0.1]:port ssh-ed25519 AAAA...` lines of a known_hosts file, comments dropped. */
const entries = (file: string) =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    : []

/** A known_hosts holding both harness sshds' keys (what a user who trusts both would have). */
const combinedKnownHosts = (dir: string, ...sshds: ReadonlyArray<Sshd.Sshd>) => {
  const file = path.join(dir, "known_hosts_both")
  fs.writeFileSync(file, sshds.map((s) => fs.readFileSync(s.knownHostsPath, "utf8")).join(""))
  return file
}

/** Let `from`'s client key log in on `to` too. */
const authorize = (from: Sshd.Sshd, to: Sshd.Sshd) =>
  fs.appendFileSync(path.join(to.dir, "authorized_keys"), fs.readFileSync(`${from.clientKeyPath}.pub`))

describe("live host keys", () => {
  it.scopedLive("accept-new records an unknown host, then knows it; strict refuses it and runs nothing", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const fresh = path.join(sshd.dir, "fresh", "known_hosts")
      const marker = path.join(sshd.dir, "must-not-exist")

      const strict = new HostConfig({ ...sshd.hostConfig, knownHostsFiles: [fresh], hostKeyPolicy: "strict" })
      const refused = yield* Effect.scoped(
        Effect.flatMap(makeConnection(strict), (conn) => conn.exec(cmd(["touch", marker])))
      ).pipe(Effect.exit)
      assert.strictEqual(failureTag(refused), "HostKeyUnknown")
      const unknown = failureOf(refused)
      if (unknown?._tag === "HostKeyUnknown") {
        assert.strictEqual(unknown.port, sshd.port)
        assert.include(unknown.fix, "ssh-keyscan")
      }
      assert.isFalse(fs.existsSync(marker))
      assert.deepStrictEqual(entries(fresh), [])

      const acceptNew = new HostConfig({ ...strict, hostKeyPolicy: "accept-new" })
      const first = yield* Effect.scoped(
        Effect.flatMap(makeConnection(acceptNew), (conn) => conn.exec(cmd(["echo", "first"])))
      )
      assert.strictEqual(first.stdout, "first\n")
      // the recorded line is the harness's own pre-seeded entry for this sshd
      assert.deepStrictEqual(entries(fresh), entries(sshd.knownHostsPath))

      // the key is now known: strict accepts it, and nothing is appended twice
      const second = yield* Effect.scoped(
        Effect.flatMap(makeConnection(strict), (conn) => conn.exec(cmd(["echo", "second"])))
      )
      assert.strictEqual(second.stdout, "second\n")
      assert.strictEqual(entries(fresh).length, 1)

      // a later key change is a mismatch even under accept-new
      yield* sshd.rotateHostKey
      const changed = yield* Effect.scoped(
        Effect.flatMap(makeConnection(acceptNew), (conn) => conn.exec(cmd(["touch", marker])))
      ).pipe(Effect.exit)
      assert.strictEqual(failureTag(changed), "HostKeyMismatch")
      assert.isFalse(fs.existsSync(marker))
    })
  )

  it.scopedLive("ProxyJump from ssh_config: connects through the jump host, checking both host keys", () =>
    Effect.gen(function* () {
      const jump = yield* Sshd.start()
      const target = yield* Sshd.start()
      authorize(jump, target)
      const knownHosts = combinedKnownHosts(target.dir, jump, target)
      const configPath = path.join(target.dir, "ssh_config_jump")
      fs.writeFileSync(
        configPath,
        [
          "Host jumpbox",
          "  HostName 127.0.0.1",
          `  Port ${jump.port}`,
          `  User ${jump.user}`,
          `  IdentityFile ${jump.clientKeyPath}`,
          "Host gpu",
          "  HostName 127.0.0.1",
          `  Port ${target.port}`,
          `  User ${target.user}`,
          `  IdentityFile ${jump.clientKeyPath}`,
          "  ProxyJump jumpbox",
          "Host *",
          `  UserKnownHostsFile ${knownHosts}`,
          "  StrictHostKeyChecking yes",
          "  IdentityAgent none",
          ""
        ].join("\n")
      )
      const hosts = yield* Hosts.make({
        sshConfig: configPath,
        hostsFile: path.join(target.dir, "hosts.json"),
        homeDir: target.dir
      })
      const host = yield* hosts.resolve("gpu")
      assert.deepStrictEqual(
        host.proxyJump.map((hop) => [hop.alias, hop.port]),
        [["jumpbox", jump.port]]
      )

      const conn = yield* makeConnection(host)
      // SSH_CONNECTION names the client's source port and the server port: the target's sshd.
      const result = yield* conn.exec(cmd(["sh", "-c", 'echo "$SSH_CONNECTION"']))
      assert.strictEqual(result.stdout.trim().split(" ")[3], String(target.port))

      // The jump host's key is checked too: a wrong key for it fails, naming the jump host.
      yield* jump.rotateHostKey
      const marker = path.join(target.dir, "must-not-exist")
      const exit = yield* Effect.scoped(
        Effect.flatMap(makeConnection(host), (c) => c.exec(cmd(["touch", marker])))
      ).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "HostKeyMismatch")
      const mismatch = failureOf(exit)
      if (mismatch?._tag === "HostKeyMismatch") assert.strictEqual(mismatch.port, jump.port)
      assert.isFalse(fs.existsSync(marker))
    })
  )

  it.scopedLive("ProxyJump: a wrong key on the target (behind a good jump host) is a mismatch too", () =>
    Effect.gen(function* () {
      const jump = yield* Sshd.start()
      const target = yield* Sshd.start()
      authorize(jump, target)
      const knownHosts = combinedKnownHosts(target.dir, jump, target)
      yield* target.rotateHostKey
      const host = new HostConfig({
        ...target.hostConfig,
        alias: "gpu",
        identityFiles: [jump.clientKeyPath],
        knownHostsFiles: [knownHosts],
        proxyJump: [
          {
            alias: "jumpbox",
            hostname: "127.0.0.1",
            port: jump.port,
            user: jump.user,
            identityFiles: [jump.clientKeyPath]
          }
        ]
      })
      const exit = yield* Effect.scoped(makeConnection(host)).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "HostKeyMismatch")
      const mismatch = failureOf(exit)
      if (mismatch?._tag === "HostKeyMismatch") assert.strictEqual(mismatch.port, target.port)
    })
  )

  it.scopedLive("authenticates with a key held only by ssh-agent", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.start()
      const socket = path.join(sshd.dir, "agent.sock")
      const agent = yield* Effect.acquireRelease(
        Effect.sync(() => spawn("ssh-agent", ["-D", "-a", socket], { stdio: "ignore" })),
        (child) => Effect.sync(() => child.kill("SIGTERM"))
      )
      assert.isDefined(agent.pid)
      yield* Effect.try(() => fs.statSync(socket)).pipe(
        Effect.retry(Schedule.spaced("20 millis").pipe(Schedule.upTo("5 seconds")))
      )
      execFileSync("ssh-add", ["-q", sshd.clientKeyPath], { env: { ...process.env, SSH_AUTH_SOCK: socket } })
      // no key file at all: only the agent can authenticate
      const host = new HostConfig({ ...sshd.hostConfig, identityFiles: [], agent: socket })
      const conn = yield* makeConnection(host)
      assert.strictEqual((yield* conn.exec(cmd(["echo", "via agent"]))).stdout, "via agent\n")

      const noAgent = new HostConfig({ ...sshd.hostConfig, identityFiles: [] })
      const exit = yield* Effect.scoped(makeConnection(noAgent)).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "AuthenticationFailed")
    })
  )
})
