/**
 * The multi-host test bed (issue 22's ground): two hosts, each a network namespace with its
 * own address and its own real sshd, reached by alias through the live connection pool. Each
 * sees only its own network; a process on one reaches a listener on the other by address (as
 * ranks meet at a rendezvous), never through its own loopback.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as ConnectionPool from "../../src/ConnectionPool.js"
import * as Hosts from "../../src/Hosts.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"
import * as NetHosts from "../support/NetHosts.js"
import * as Sshd from "../support/Sshd.js"

const python = (code: string) => RemoteCommand.make(["python3", "-c", code])

describe("test hosts in network namespaces", () => {
  it.live("two hosts, two networks: each its own address; a listener on one reached from the other", () =>
    Effect.gen(function* () {
      const [a, b] = yield* NetHosts.make(2)
      const sshdA = yield* Sshd.start({ alias: "node-a", namespace: a! })
      const sshdB = yield* Sshd.start({ alias: "node-b", namespace: b! })
      // one ssh_config naming both, as a user's would
      const config = path.join(sshdA.dir, "ssh_config.both")
      fs.writeFileSync(
        config,
        `${fs.readFileSync(sshdA.sshConfigPath, "utf8")}\n${fs.readFileSync(sshdB.sshConfigPath, "utf8")}`
      )
      const live = ConnectionPool.layer().pipe(
        Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: path.join(sshdA.dir, "mlops") }))
      )
      yield* Effect.gen(function* () {
        const pool = yield* ConnectionPool.ConnectionPool
        const connA = yield* pool.get("node-a")
        const connB = yield* pool.get("node-b")
        const addresses = (conn: typeof connA) =>
          conn
            .exec(RemoteCommand.make(["ip", "-4", "-o", "addr", "show"]), { timeout: "10 seconds" })
            .pipe(
              Effect.map((r) => [...r.stdout.matchAll(/inet (\d+\.\d+\.\d+\.\d+)/g)].map((m) => m[1]!).sort())
            )
        assert.deepStrictEqual(yield* addresses(connA), ["127.0.0.1", a!.address].sort())
        assert.deepStrictEqual(yield* addresses(connB), ["127.0.0.1", b!.address].sort())

        // a rendezvous: a listens on its address, b connects to it and gets its word
        const port = 29500
        const listen = connA.exec(
          python(
            `import socket\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\ns.bind(("${a!.address}", ${port}))\ns.listen(1)\ns.settimeout(20)\nc, peer = s.accept()\nc.sendall(b"hello from a")\nprint(peer[0])`
          ),
          { timeout: "30 seconds" }
        )
        const connect = connB.exec(
          python(
            `import socket, time\nfor _ in range(200):\n    try:\n        c = socket.create_connection(("${a!.address}", ${port}), timeout=2)\n        break\n    except OSError:\n        time.sleep(0.05)\nprint(c.recv(100).decode())`
          ),
          { timeout: "30 seconds" }
        )
        const [accepted, received] = yield* Effect.all([listen, connect], { concurrency: 2 })
        assert.strictEqual(received.stdout.trim(), "hello from a", received.stderr)
        // a saw b's address, not a loopback or this machine's
        assert.strictEqual(accepted.stdout.trim(), b!.address, accepted.stderr)

        // b's loopback is b's own: nothing of a's listens there
        const loopback = yield* connB.exec(
          python(
            `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${sshdA.port}), timeout=2)\n    print("reached")\nexcept OSError as e:\n    print("refused")`
          ),
          { timeout: "10 seconds" }
        )
        assert.strictEqual(loopback.stdout.trim(), "refused")
      }).pipe(Effect.provide(live))
    }).pipe(Effect.scoped)
  )
})
