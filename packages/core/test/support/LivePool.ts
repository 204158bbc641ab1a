/** The live ConnectionPool over the harness sshd: `Hosts` knows only its "testhost". */
import { Effect, Layer } from "effect"
import * as ConnectionPool from "../../src/ConnectionPool.js"
import { HostNotFound } from "../../src/Errors.js"
import { Hosts } from "../../src/Hosts.js"
import { TestSshd } from "./Sshd.js"

export const hosts: Layer.Layer<Hosts, never, TestSshd> = Layer.effect(
  Hosts,
  Effect.map(TestSshd, (sshd) => ({
    resolve: (alias: string) =>
      alias === sshd.hostConfig.alias
        ? Effect.succeed(sshd.hostConfig)
        : Effect.fail(new HostNotFound({ alias, known: [sshd.hostConfig.alias], sources: ["test"] })),
    list: Effect.succeed([sshd.hostConfig]),
    groups: Effect.succeed(new Map())
  }))
)

/** A fresh pool per use (provide it inside the test); `remoteHelperPersist` as given. */
export const layer = (
  remoteHelperPersist?: ConnectionPool.ConnectionOptions["remoteHelperPersist"]
): Layer.Layer<ConnectionPool.ConnectionPool | Hosts, never, TestSshd> =>
  Layer.scoped(
    ConnectionPool.ConnectionPool,
    ConnectionPool.make(remoteHelperPersist === undefined ? {} : { remoteHelperPersist })
  ).pipe(Layer.provideMerge(hosts))
