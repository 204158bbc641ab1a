/**
 * SGLang versions end to end over a real sshd: stand-in installs of several releases, built
 * by the test setup from the release data (./releases/standins.ts), each behind its own ssh
 * alias. `check --host` reads the flags the way each host's own SGLang would; a release mlops
 * does not ship is read from the host's parser, once per install; a broken install falls back
 * to the nearest shipped release, saying so; a launch on an unverified version runs the host's
 * own validation before anything starts.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import type * as Launch from "@mlops/serve/Launch"
import { Context, Effect, Layer, Stream } from "effect"
import * as Sshd from "../../../core/test/support/Sshd.js"
import * as Catalogue from "../../src/Catalogue.js"
import * as Check from "../../src/Check.js"
import * as HostFlags from "../../src/HostFlags.js"
import * as Installed from "../../src/Installed.js"
import { MARKER } from "../../src/internal/hostFlags/script.js"
import { type ExtraAction, readFixture } from "../support/releaseData.js"
import * as Serving from "../support/serving.js"
import * as Standins from "./releases/standins.js"

const futureFlag: ExtraAction = {
  option_strings: ["--standin-future-flag"],
  dest: "standin_future_flag",
  type_fn: "int",
  default: 3
}

const releases: ReadonlyArray<Standins.Release> = [
  { alias: "sgl-0-4-9", version: "0.4.9", flags: readFixture("args-0.4.9.json") },
  { alias: "sgl-0-5-4", version: "0.5.4", flags: readFixture("args-0.5.4.json") },
  { alias: "sgl-0-5-15", version: "0.5.15", flags: readFixture("args-0.5.15.json") },
  {
    alias: "sgl-0-6-0",
    version: "0.6.0",
    flags: readFixture("args-0.5.15.json"),
    extra: [futureFlag],
    limit: { field: "standin_future_flag", max: 10 }
  },
  { alias: "sgl-0-5-21", version: "0.5.21", flags: readFixture("args-0.5.15.json"), brokenImport: "torch" }
]

/** Every remote command mlops runs, by alias (the argv words), as the live connections see them. */
class Commands extends Context.Tag("test/Commands")<Commands, Map<string, Array<ReadonlyArray<string>>>>() {}

const counting = Layer.effect(
  ConnectionPool.ConnectionPool,
  Effect.gen(function* () {
    const pool = yield* ConnectionPool.ConnectionPool
    const seen = yield* Commands
    return ConnectionPool.ConnectionPool.of({
      invalidate: pool.invalidate,
      get: (alias) =>
        Effect.map(pool.get(alias), (conn) => ({
          ...conn,
          exec: (command, options) => {
            const list = seen.get(alias) ?? []
            list.push(command.argv.map(RemoteCommand.wordText))
            seen.set(alias, list)
            return conn.exec(command, options)
          }
        }))
    })
  })
)

const hostLayer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const installed = yield* Standins.install(releases)
    const tools = path.join(installed.dir, "tools", "bin")
    fs.mkdirSync(tools, { recursive: true })
    fs.copyFileSync(path.join(import.meta.dirname, "standin", "nvidia-smi"), path.join(tools, "nvidia-smi"))
    fs.chmodSync(path.join(tools, "nvidia-smi"), 0o755)
    const sshd = yield* Sshd.start({ extraConfig: [`SetEnv PATH=${tools}:/usr/local/bin:/usr/bin:/bin`] })
    const sshConfig = Standins.sshConfigFor(
      sshd.sshConfigPath,
      releases.map((r) => r.alias),
      installed.dir
    )
    return counting.pipe(
      Layer.provideMerge(ConnectionPool.layer()),
      Layer.provideMerge(Hosts.layer({ sshConfig, mlopsHome: installed.mlopsHome })),
      Layer.provideMerge(Layer.succeed(Commands, new Map())),
      Layer.provideMerge(HostFlags.layerDirectory(path.join(installed.mlopsHome, "flags")))
    )
  })
)

const commandsOn = (alias: string) => Effect.map(Commands, (seen) => seen.get(alias)?.length ?? 0)
const dumpsOn = (alias: string) =>
  Effect.map(
    Commands,
    (seen) => (seen.get(alias) ?? []).filter((argv) => argv.some((w) => w.includes(MARKER))).length
  )

const model = ["--model-path", "Qwen/Qwen3-8B"]
const check = (host: string, ...flags: ReadonlyArray<string>) =>
  Check.host({ host, argv: [...model, ...flags] })

describe("SGLang versions end to end (real sshd, stand-in releases)", () => {
  layer(hostLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect("check --host types the flags by the host's version, with no dump for a shipped release", () =>
      Effect.gen(function* () {
        const ok = yield* check("sgl-0-5-4", "--tp-size", "2", "--schedule-policy", "lpm")
        assert.strictEqual(ok.version, "0.5.4")
        assert.deepStrictEqual(ok.flags, { version: "0.5.4", source: "shipped" })
        assert.strictEqual(ok.effective.tp_size, 2)
        const later = yield* Effect.flip(check("sgl-0-5-4", "--mamba-track-interval", "128"))
        assert.strictEqual(later._tag, "UnknownFlag")
        if (later._tag === "UnknownFlag") assert.strictEqual(later.version, "0.5.4")
        const typed = yield* Effect.flip(check("sgl-0-4-9", "--tp-size", "two"))
        assert.strictEqual(typed._tag, "InvalidValue")
        assert.strictEqual(yield* dumpsOn("sgl-0-5-4"), 0)
        assert.strictEqual(yield* dumpsOn("sgl-0-4-9"), 0)
      })
    )

    it.effect("a flag the host's release removed is an UnknownFlag naming that release", () =>
      Effect.gen(function* () {
        // --record-nolora-graph: 0.5.11 has it, 0.5.15 no longer does
        assert.isTrue(Catalogue.V0_5_11.byFlag.has("--record-nolora-graph"))
        const removed = yield* Effect.flip(check("sgl-0-5-15", "--record-nolora-graph"))
        assert.strictEqual(removed._tag, "UnknownFlag")
        if (removed._tag === "UnknownFlag") {
          assert.strictEqual(removed.version, "0.5.15")
          assert.include(removed.message, "SGLang 0.5.15")
        }
      })
    )

    it.effect("the host's own parser, dumped, gives exactly the shipped catalogue of its release", () =>
      Effect.gen(function* () {
        for (const alias of ["sgl-0-4-9", "sgl-0-5-4", "sgl-0-5-15"]) {
          const found = yield* Installed.onHost({ host: alias, fromHost: true })
          assert.strictEqual(found.source, "dumped", alias)
          const shipped = Catalogue.get(found.version)!
          const facts = (c: Catalogue.Catalogue) =>
            c.flags.map(
              ({ flag, field, aliases, type, default: d, choices, nargs, deprecated, negatable }) => ({
                flag,
                field,
                aliases,
                type,
                default: d,
                choices,
                nargs,
                deprecated,
                negatable
              })
            )
          assert.deepStrictEqual(facts(found.catalogue), facts(shipped), alias)
        }
      })
    )

    it.effect("a release mlops does not ship works through the host dump, cached: one command fewer", () =>
      Effect.gen(function* () {
        const before = yield* commandsOn("sgl-0-6-0")
        const first = yield* check("sgl-0-6-0", "--standin-future-flag", "4", "--tp", "2")
        const afterFirst = yield* commandsOn("sgl-0-6-0")
        assert.deepStrictEqual(first.flags, { version: "0.6.0", source: "dumped" })
        assert.isFalse(first.rulesVerified)
        assert.isTrue(first.warnings.some((w) => w.includes("not verified") && w.includes("0.6.0")))
        assert.strictEqual((first.effective as unknown as Record<string, unknown>).standin_future_flag, 4)

        const second = yield* check("sgl-0-6-0", "--standin-future-flag", "5")
        const afterSecond = yield* commandsOn("sgl-0-6-0")
        assert.strictEqual(second.flags.source, "cached")
        assert.strictEqual(afterSecond - afterFirst, afterFirst - before - 1)
        assert.strictEqual(yield* dumpsOn("sgl-0-6-0"), 1)

        const typo = yield* Effect.flip(check("sgl-0-6-0", "--standin-futur-flag", "5"))
        assert.strictEqual(typo._tag, "UnknownFlag")
        if (typo._tag === "UnknownFlag") {
          assert.strictEqual(typo.version, "0.6.0")
          assert.include(typo.suggestions, "--standin-future-flag")
        }
        const wrongType = yield* Effect.flip(check("sgl-0-6-0", "--standin-future-flag", "four"))
        assert.strictEqual(wrongType._tag, "InvalidValue")
      })
    )

    it.effect("an install whose parser cannot be read: the nearest shipped release, and why", () =>
      Effect.gen(function* () {
        const result = yield* check("sgl-0-5-21", "--tp", "2")
        assert.deepStrictEqual(result.flags, { version: "0.5.15", source: "nearest" })
        const warning = result.warnings.find((w) => w.includes("nearest")) ?? ""
        assert.include(warning, "0.5.21")
        assert.include(warning, "0.5.15")
        assert.include(warning, "No module named 'torch'")
      })
    )

    it.effect("a launch on an unverified version runs the host's own validation first and stops there", () =>
      Effect.gen(function* () {
        const events: Array<Launch.LaunchProgress> = []
        const failure = yield* Serving.launch({
          host: "sgl-0-6-0",
          name: `versions-${process.pid}`,
          argv: [...model, "--standin-future-flag", "11", "--port", "39517"]
        }).pipe(
          Stream.runForEach((event) => Effect.sync(() => events.push(event))),
          Effect.flip
        )
        const preflight = events.find((e) => e._tag === "Preflight")
        assert.strictEqual(preflight?._tag === "Preflight" && preflight.facts.rulesVerified, false)
        assert.isFalse(events.some((e) => e._tag === "Spawned"))
        assert.strictEqual(failure._tag, "InvalidArgument")
        assert.include(failure.message, "standin_future_flag must be at most 10")
      })
    )
  })
})
