/**
 * A forward to another machine than the host itself (a compute node behind a Slurm login node):
 * sshd connects to `target:port`. 127.0.0.2 stands for the other machine (Linux routes all of
 * 127.0.0.0/8 to loopback), with a server bound only there.
 */
import * as http from "node:http"
import type * as net from "node:net"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import * as Tunnel from "../../src/Tunnel.js"
import { failureTag } from "../support/exits.js"
import * as Sshd from "../support/Sshd.js"

const serveOn = (address: string) =>
  Effect.acquireRelease(
    Effect.async<http.Server & { port: number }>((resume) => {
      const server = http.createServer((_req, res) => res.end(`hello from ${address}`))
      server.listen(0, address, () =>
        resume(Effect.succeed(Object.assign(server, { port: (server.address() as net.AddressInfo).port })))
      )
    }),
    (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void)))
  )

layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })("forward to a target", (it) => {
  it.scoped(
    "a request reaches target:port through the host; without the target, the host's own loopback is asked",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.TestSshd
        const conn = yield* makeConnection(sshd.hostConfig)
        const server = yield* serveOn("127.0.0.2")
        const response = yield* Tunnel.request(conn, {
          port: server.port,
          target: "127.0.0.2",
          method: "GET",
          path: "/"
        })
        assert.deepStrictEqual([response.status, response.body], [200, "hello from 127.0.0.2"])
        const listener = yield* Tunnel.listen(conn, server.port, "127.0.0.2")
        const viaFetch = yield* Effect.promise(() => fetch(listener.url).then((r) => r.text()))
        assert.strictEqual(viaFetch, "hello from 127.0.0.2")
        const loopback = yield* Tunnel.request(conn, { port: server.port, method: "GET", path: "/" }).pipe(
          Effect.exit
        )
        assert.strictEqual(failureTag(loopback), "ForwardFailed")
      })
  )
})
