import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import { ConfigFileError, HostNotFound } from "@mlops/core/Errors"
import { HostConfig } from "@mlops/core/HostConfig"
import * as Hosts from "@mlops/core/Hosts"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import * as Layers from "../src/Layers.js"

const withHome = <A, E, R>(program: Effect.Effect<A, E, R>) =>
  Effect.withConfigProvider(
    program,
    ConfigProvider.fromMap(new Map([["MLOPS_HOME", fs.mkdtempSync(path.join(os.tmpdir(), "mlops-layers-"))]]))
  )

const labBox = HostConfig.make({
  ...Layers.simListing,
  alias: "lab-box",
  hostname: "127.0.0.1",
  tags: [],
  source: "ssh_config"
})

/** A real side of one host, at the service boundary: `lab-box`, never connected to. */
const realSide = Layer.succeedContext(
  Context.make(
    Hosts.Hosts,
    Hosts.Hosts.of({
      resolve: (alias) =>
        alias === labBox.alias
          ? Effect.succeed(labBox)
          : Effect.fail(new HostNotFound({ alias, known: [labBox.alias], sources: ["test"] })),
      list: Effect.succeed([labBox]),
      groups: Effect.succeed(new Map())
    })
  ).pipe(
    Context.add(
      ConnectionPool.ConnectionPool,
      ConnectionPool.ConnectionPool.of({
        get: (alias) => Effect.die(`no connection to ${alias} in this test`),
        invalidate: () => Effect.void
      })
    )
  )
)

describe("Layers", () => {
  it.scoped("simListing is the sim as the built simulator lists it", () =>
    withHome(
      Effect.gen(function* () {
        const context = yield* Layer.build(Layers.sim)
        const listed = yield* Context.get(context, Hosts.Hosts).list
        assert.deepStrictEqual(listed, [Layers.simListing])
      })
    )
  )

  it.scoped("listing the hosts does not build the simulated side; resolving sim does", () =>
    Effect.gen(function* () {
      let builds = 0
      const simulated = Layer.unwrapEffect(
        Effect.sync(() => {
          builds++
          return Layer.fail(new ConfigFileError({ path: "sim", reason: "built", fix: "-" }))
        })
      )
      const routed = yield* Layers.makeRouted(simulated, realSide)
      const hosts = Context.get(routed, Hosts.Hosts)
      const listed = yield* hosts.list
      assert.deepStrictEqual(
        listed.map((host) => host.alias),
        ["sim", "lab-box"]
      )
      assert.strictEqual(builds, 0)
      const resolved = yield* Effect.flip(hosts.resolve("sim"))
      assert.strictEqual(resolved._tag, "ConfigFileError")
      assert.strictEqual(builds, 1)
    })
  )
})
