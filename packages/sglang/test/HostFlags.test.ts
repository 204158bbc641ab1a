import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as FakeHost from "@mlops/core/FakeHost"
import { pythonJson } from "@mlops/serve/SimHost"
import { Effect, Layer } from "effect"
import * as Argv from "../src/Argv.js"
import * as Check from "../src/Check.js"
import * as HostFlags from "../src/HostFlags.js"
import * as Installed from "../src/Installed.js"
import { MARKER } from "../src/internal/hostFlags/script.js"
import * as Upgrade from "../src/Upgrade.js"
import { dumpOf, type ExtraAction, readFixture } from "./support/releaseData.js"

const prefix = "/opt/sgl"

/**
 * A host whose Python answers the discovery probe and the flag dump the way a real
 * interpreter with that SGLang would (the dump built from the release data plus `extra`), and
 * counts the dumps.
 */
const hostWith = (o: {
  readonly version: string
  readonly data: string
  readonly sha256?: string
  readonly dumpFails?: string
  readonly extra?: ReadonlyArray<ExtraAction>
}) => {
  const dumps = { count: 0 }
  const sha256 = o.sha256 ?? "ab".repeat(32)
  const python: FakeHost.Program = {
    match: `${prefix}/bin/python`,
    run: (ctx) =>
      Effect.gen(function* () {
        const script = ctx.argv[2] ?? ""
        if (script.includes(MARKER)) {
          dumps.count++
          if (o.dumpFails !== undefined) {
            yield* ctx.stderr.line("Traceback (most recent call last):")
            yield* ctx.stderr.line(o.dumpFails)
            return 1
          }
          yield* ctx.stdout.line(JSON.stringify(dumpOf(readFixture(o.data), sha256, o.extra)))
          return 0
        }
        const hashes = ctx.argv.slice(4)
        yield* ctx.stdout.line(
          pythonJson({
            executable: `${prefix}/bin/python`,
            version: "3.11.9",
            found: true,
            packageVersion: o.version,
            versionSource: "metadata",
            location: `${prefix}/lib/python3.11/site-packages/sglang`,
            fileHashes: Object.fromEntries(hashes.map((h) => [h, sha256]))
          })
        )
        return 0
      })
  }
  // the interpreter exists on the host (a shell runs only what is there)
  const layer = FakeHost.layer([
    {
      alias: "gpu",
      python: prefix,
      files: { [`${prefix}/bin/python`]: "#!python\n" },
      programs: [python, FakeHost.nvidiaSmi([], [])]
    }
  ])
  return { dumps, layer }
}

// found as a launch finds it (the host's configured environment, through the discovery script)
const catalogueOnHost = (fromHost?: boolean) =>
  Installed.onHost({ host: "gpu", ...(fromHost === undefined ? {} : { fromHost }) })

const newFlag: ExtraAction = {
  option_strings: ["--standin-future-flag"],
  dest: "standin_future_flag",
  type_fn: "int",
  default: 3
}

describe("HostFlags", () => {
  it.effect("a shipped release uses its shipped catalogue and runs no dump", () => {
    const host = hostWith({ version: "0.5.4", data: "args-0.5.4.json" })
    return Effect.gen(function* () {
      const found = yield* catalogueOnHost()
      assert.strictEqual(found.source, "shipped")
      assert.strictEqual(found.catalogue.version, "0.5.4")
      assert.strictEqual(host.dumps.count, 0)
    }).pipe(Effect.provide(host.layer))
  })

  it.effect("an unshipped version is read from the host: its own new flag decodes, typed", () => {
    const host = hostWith({ version: "0.6.0", data: "args-0.5.15.json", extra: [newFlag] })
    return Effect.gen(function* () {
      const found = yield* catalogueOnHost()
      assert.strictEqual(found.source, "dumped")
      assert.strictEqual(found.catalogue.version, "0.6.0")
      assert.strictEqual(found.catalogue.origin, "host")
      const decoded = yield* Argv.decodeArgv(
        ["--model-path", "/m", "--standin-future-flag", "5"],
        found.catalogue
      )
      assert.strictEqual((decoded.args as unknown as Record<string, unknown>).standin_future_flag, 5)
      const typo = yield* Effect.flip(
        Argv.decodeArgv(["--model-path", "/m", "--standin-futur-flg", "5"], found.catalogue)
      )
      assert.strictEqual(typo._tag, "UnknownFlag")
      if (typo._tag === "UnknownFlag") {
        assert.strictEqual(typo.version, "0.6.0")
        assert.include(typo.suggestions, "--standin-future-flag")
      }
      const bad = yield* Effect.flip(
        Argv.decodeArgv(["--model-path", "/m", "--standin-future-flag", "x"], found.catalogue)
      )
      assert.strictEqual(bad._tag, "InvalidValue")
      // our summaries survive for flags the nearest shipped release has
      assert.isAbove(found.catalogue.byFlag.get("--tp-size")!.summary.length, 0)
    }).pipe(Effect.provide(host.layer))
  })

  it.effect("the cache: the second read of one install runs no dump; another install dumps again", () => {
    const first = hostWith({ version: "0.6.0", data: "args-0.5.15.json", sha256: "11".repeat(32) })
    const reinstalled = hostWith({ version: "0.6.0", data: "args-0.5.15.json", sha256: "22".repeat(32) })
    return Effect.gen(function* () {
      const cache = yield* HostFlags.FlagCache
      const withCache = <A, E>(effect: Effect.Effect<A, E, HostFlags.FlagCache | ConnectionPool>) =>
        effect.pipe(Effect.provideService(HostFlags.FlagCache, cache))
      assert.strictEqual(
        (yield* withCache(catalogueOnHost()).pipe(Effect.provide(first.layer))).source,
        "dumped"
      )
      assert.strictEqual(
        (yield* withCache(catalogueOnHost()).pipe(Effect.provide(first.layer))).source,
        "cached"
      )
      assert.strictEqual(first.dumps.count, 1)
      assert.strictEqual(
        (yield* withCache(catalogueOnHost()).pipe(Effect.provide(reinstalled.layer))).source,
        "dumped"
      )
      assert.strictEqual(reinstalled.dumps.count, 1)
    }).pipe(Effect.provide(HostFlags.layerMemory))
  })

  it.effect(
    "a failed dump: the nearest shipped release stands in, the warning names both versions and why",
    () => {
      const host = hostWith({
        version: "0.5.21",
        data: "args-0.5.15.json",
        dumpFails: "ModuleNotFoundError: No module named 'torch'"
      })
      return Effect.gen(function* () {
        const found = yield* catalogueOnHost()
        assert.strictEqual(found.source, "nearest")
        assert.strictEqual(found.catalogue.version, "0.5.15")
        assert.include(found.warning ?? "", "0.5.21")
        assert.include(found.warning ?? "", "0.5.15")
        assert.include(found.warning ?? "", "No module named 'torch'")
      }).pipe(Effect.provide(host.layer))
    }
  )

  it.effect(
    "a failed dump: a flag the stand-in does not know is refused by check --host and the upgrade check saying why that release's flags were used",
    () => {
      const host = hostWith({
        version: "0.5.21",
        data: "args-0.5.15.json",
        dumpFails: "ModuleNotFoundError: No module named 'torch'"
      })
      return Effect.gen(function* () {
        const argv = ["--model-path", "org/model", "--not-a-flag-anywhere", "1"]
        for (const refused of [
          yield* Effect.flip(Check.host({ host: "gpu", argv })),
          yield* Effect.flip(Upgrade.fromHost({ host: "gpu", argv, to: "0.5.15" }))
        ]) {
          assert.strictEqual(refused._tag, "UnknownFlag", refused.message)
          if (refused._tag !== "UnknownFlag") continue
          assert.strictEqual(refused.version, "0.5.15")
          // the version it names is explained: the host's own, why its flags could not be read
          assert.include(refused.note ?? "", "could not read the flags of SGLang 0.5.21 from gpu")
          assert.include(refused.note ?? "", "No module named 'torch'")
          assert.include(refused.message, "nearest shipped release 0.5.15")
        }
      }).pipe(Effect.provide(host.layer))
    }
  )

  it.effect("fromHost reads the host even for a shipped release", () => {
    const host = hostWith({ version: "0.5.4", data: "args-0.5.4.json", extra: [newFlag] })
    return Effect.gen(function* () {
      const found = yield* catalogueOnHost(true)
      assert.strictEqual(found.source, "dumped")
      assert.isTrue(found.catalogue.byFlag.has("--standin-future-flag"))
      assert.strictEqual(host.dumps.count, 1)
    }).pipe(Effect.provide(host.layer))
  })

  it.effect(
    "layerDirectory keeps dumps in 0600 files under 0700 directories; a corrupt file is a miss",
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-flags-"))
      const host = hostWith({ version: "0.6.0", data: "args-0.5.15.json", sha256: "cd".repeat(32) })
      const cached = Layer.merge(host.layer, HostFlags.layerDirectory(path.join(dir, "flags")))
      return Effect.gen(function* () {
        assert.strictEqual((yield* catalogueOnHost().pipe(Effect.provide(cached))).source, "dumped")
        const file = path.join(dir, "flags", "gpu", `0.6.0-${"cd".repeat(8)}.json`)
        assert.strictEqual(fs.statSync(file).mode & 0o777, 0o600)
        assert.strictEqual(fs.statSync(path.dirname(file)).mode & 0o777, 0o700)
        assert.strictEqual((yield* catalogueOnHost().pipe(Effect.provide(cached))).source, "cached")
        fs.writeFileSync(file, "{ not json")
        assert.strictEqual((yield* catalogueOnHost().pipe(Effect.provide(cached))).source, "dumped")
        assert.strictEqual(host.dumps.count, 2)
      }).pipe(Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))))
    }
  )
})
