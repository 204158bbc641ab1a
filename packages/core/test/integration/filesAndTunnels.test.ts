import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import { assert, layer } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as RemoteFiles from "../../src/RemoteFiles.js"
import * as Tunnel from "../../src/Tunnel.js"
import { failureTag } from "../support/exits.js"
import { filesContract } from "../support/filesContract.js"
import * as Sshd from "../support/Sshd.js"

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })

layer(Sshd.layer(), { excludeTestServices: true, timeout: "30 seconds" })("live files and tunnels", (it) => {
  const connect = Effect.flatMap(Sshd.TestSshd, (sshd) => makeConnection(sshd.hostConfig))

  it.scoped("writes (creating parents), stats, reads from an offset, and expands ~/", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      yield* filesContract(yield* connect, sshd.dir)
    })
  )

  it.scoped("uploads a local file with its bytes and permission bits", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const conn = yield* connect
      const local = path.join(sshd.dir, "upload-src.sh")
      fs.writeFileSync(local, "#!/bin/sh\necho ok\n", { mode: 0o750 })
      fs.chmodSync(local, 0o750)
      const remote = path.join(sshd.dir, "uploaded", "run.sh")
      yield* RemoteFiles.upload(conn, local, remote)
      assert.strictEqual(fs.readFileSync(remote, "utf8"), "#!/bin/sh\necho ok\n")
      assert.strictEqual(fs.statSync(remote).mode & 0o777, 0o750)
      const ran = yield* conn.exec(cmd([remote]))
      assert.strictEqual(ran.stdout, "ok\n")
    })
  )

  it.scoped("forwards to an HTTP server that listens only on the host's loopback", () =>
    Effect.gen(function* () {
      const sshd = yield* Sshd.TestSshd
      const conn = yield* connect
      const root = path.join(sshd.dir, "www")
      fs.mkdirSync(root, { recursive: true })
      fs.writeFileSync(path.join(root, "hello.txt"), "hi through ssh\n")
      const port = yield* Effect.promise(freePort)
      const server = yield* Effect.acquireRelease(
        conn.spawnDetached(
          cmd(["python3", "-m", "http.server", String(port), "--bind", "127.0.0.1"], { cwd: root }),
          {
            runDir: path.join(sshd.dir, "run-http")
          }
        ),
        (info) => conn.exec(cmd(["kill", "-s", "TERM", "--", `-${info.pgid}`])).pipe(Effect.ignore)
      )
      assert.isTrue(server.pid > 0)

      const get = Tunnel.request(conn, { port, method: "GET", path: "/hello.txt", timeout: "5 seconds" })
      const response = yield* get.pipe(
        Effect.retry(Schedule.spaced("100 millis").pipe(Schedule.upTo("10 seconds")))
      )
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.body, "hi through ssh\n")
      const notFound = yield* Tunnel.request(conn, { port, method: "GET", path: "/nope" })
      assert.strictEqual(notFound.status, 404)

      const listener = yield* Tunnel.listen(conn, port)
      const viaFetch = yield* Effect.promise(() => fetch(`${listener.url}/hello.txt`).then((r) => r.text()))
      assert.strictEqual(viaFetch, "hi through ssh\n")

      const raw = yield* Effect.scoped(
        Effect.flatMap(conn.forward(port), (duplex) =>
          Effect.promise(
            () =>
              new Promise<string>((resolve) => {
                let text = ""
                duplex.on("data", (chunk: Buffer) => {
                  text += chunk.toString("utf8")
                })
                duplex.on("end", () => resolve(text))
                duplex.write("GET /hello.txt HTTP/1.0\r\n\r\n")
              })
          )
        )
      )
      assert.match(raw, /^HTTP\/1\.0 200/)
    })
  )

  it.scoped("a forward to a closed port fails with ForwardFailed", () =>
    Effect.gen(function* () {
      const conn = yield* connect
      const port = yield* Effect.promise(freePort)
      const exit = yield* Effect.scoped(conn.forward(port)).pipe(Effect.exit)
      assert.strictEqual(failureTag(exit), "ForwardFailed")
      const viaTunnel = yield* Tunnel.request(conn, { port, method: "GET", path: "/" }).pipe(Effect.exit)
      assert.strictEqual(failureTag(viaTunnel), "ForwardFailed")
    })
  )
})
