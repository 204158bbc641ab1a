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
import * as RendezvousProbe from "../../src/RendezvousProbe.js"
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

  it.live(
    "the rendezvous probe, from the hosts themselves: reached from both others; a taken port and an address nobody has, each named",
    () =>
      Effect.gen(function* () {
        const [a, b, c] = yield* NetHosts.make(3)
        const sshds = [
          yield* Sshd.start({ alias: "node-a", namespace: a! }),
          yield* Sshd.start({ alias: "node-b", namespace: b! }),
          yield* Sshd.start({ alias: "node-c", namespace: c! })
        ]
        const config = path.join(sshds[0]!.dir, "ssh_config.all")
        fs.writeFileSync(config, sshds.map((s) => fs.readFileSync(s.sshConfigPath, "utf8")).join("\n"))
        const live = ConnectionPool.layer().pipe(
          Layer.provideMerge(Hosts.layer({ sshConfig: config, mlopsHome: path.join(sshds[0]!.dir, "mlops") }))
        )
        yield* Effect.gen(function* () {
          const pool = yield* ConnectionPool.ConnectionPool
          const [head, ...others] = yield* Effect.forEach(["node-a", "node-b", "node-c"], (h) => pool.get(h))
          const check = { head: head!, others, timeout: "2 seconds" } as const
          assert.deepStrictEqual(
            yield* RendezvousProbe.probe({ ...check, address: a!.address, port: 29500 }),
            []
          )
          // the head's sshd holds its own port on its address: taken, said once, by the head
          const taken = yield* RendezvousProbe.probe({ ...check, address: a!.address, port: sshds[0]!.port })
          assert.deepStrictEqual(
            taken.map((p) => [p._tag, p._tag === "PortTaken" ? p.host : p.from]),
            [["PortTaken", "node-a"]]
          )
          assert.match(taken[0]!.detail, /in use/)
          // an address on the subnet that no host has: the head cannot even bind it
          const nobody = a!.address.replace(/\.\d+$/, ".99")
          const wrong = yield* RendezvousProbe.probe({ ...check, address: nobody, port: 29500 })
          assert.deepStrictEqual(
            wrong.map((p) => p._tag),
            ["PortTaken"]
          )
          assert.match(wrong[0]!.detail, /[Cc]annot assign requested address/)
          // the head listens on its loopback only: the others are refused, each named
          const loopback = yield* RendezvousProbe.probe({ ...check, address: "127.0.0.1", port: 29501 })
          assert.deepStrictEqual(
            loopback.map((p) => (p._tag === "Unreachable" ? [p.from, p.how] : [p._tag])),
            [
              ["node-b", "refused"],
              ["node-c", "refused"]
            ]
          )
        }).pipe(Effect.provide(live))
      }).pipe(Effect.scoped)
  )
})
