/**
 * What the vLLM end-to-end tests share: the stand-in vLLM installed and served by a test sshd
 * as host `testhost`, the live connection layer over it, and a free port.
 */
import * as net from "node:net"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import { Context, Effect, Layer } from "effect"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as Standin from "./standin/install.js"

/** The alias the test sshd's ssh_config names. */
export const alias = "testhost"

export class E2E extends Context.Tag("test/VllmE2E")<E2E, { readonly standin: Standin.VllmStandin }>() {}

/** The stand-in and its sshd for the layer's life, with the live pool and hosts over them. */
export const TestLayer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const standin = yield* Standin.install(alias)
    const sshd = yield* Sshd.start({ extraConfig: standin.sshdConfig })
    return ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome })),
      Layer.merge(Layer.succeed(E2E, { standin }))
    )
  })
)

/** A port nothing listens on right now. */
export const freePort = Effect.async<number>((resume) => {
  const server = net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})
