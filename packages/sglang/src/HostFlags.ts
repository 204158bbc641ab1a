/**
 * The flags of the SGLang a host actually has, read from the install itself: one Python program
 * run by the runtime that found it (the environment's interpreter) builds the installed
 * SGLang's own argument parser (no model, no GPU) and prints its actions, which become a
 * catalogue exactly like a shipped one (the argv decoder, did-you-mean, choices and type checks
 * then work for that version). The dump is kept on this machine (`FlagCache`), keyed by the
 * install (its id, version and the sha256 of its `server_args.py`, which the runtime's probe
 * reports), so it runs once per install.
 *
 * `forHost` decides: a shipped release uses its shipped catalogue (no command) unless
 * `fromHost`; any other version uses the cached or a fresh dump; if the dump fails, the
 * nearest shipped release stands in, with a warning naming both versions and why.
 *
 * @since 0.1.0
 */
import { homedir } from "node:os"
import { join } from "node:path"
import type { CommandError } from "@mlops/core/Errors"
import type { FlagsRequest } from "@mlops/serve/Engine"
import { Clock, Config, Context, Effect, Layer, Option, Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import { toFlagSpecs } from "./internal/catalogue/fromParser.js"
import * as Cache from "./internal/hostFlags/cache.js"
import { DUMP_SCRIPT } from "./internal/hostFlags/script.js"

/** The file whose fingerprint keys the cache, relative to the sglang package. @category constants */
export const fingerprintFile = "srt/server_args.py"

/** A dump as the host printed it. @category models */
export type Dump = Cache.Dump

/** @category models */
export type CacheKey = Cache.Key

/** Where dumps are kept between runs. @category services */
export class FlagCache extends Context.Tag("@mlops/sglang/FlagCache")<
  FlagCache,
  {
    readonly read: (key: CacheKey) => Effect.Effect<Cache.Entry | undefined>
    readonly write: (entry: Cache.Entry) => Effect.Effect<void>
  }
>() {}

/** Files under `dir` (one per host, version and install). @category layers */
export const layerDirectory = (dir: string): Layer.Layer<FlagCache> =>
  Layer.succeed(FlagCache, {
    read: (key) => Cache.read(dir, key),
    write: (entry) => Cache.write(dir, entry)
  })

/** `$MLOPS_HOME/flags` (default `~/.mlops/flags`). @category layers */
export const layerConfig: Layer.Layer<FlagCache> = Layer.unwrapEffect(
  Config.string("MLOPS_HOME").pipe(
    Config.withDefault(join(homedir(), ".mlops")),
    Effect.orElseSucceed(() => join(homedir(), ".mlops")),
    Effect.map((home) => layerDirectory(join(home, "flags")))
  )
)

/** In memory, for tests and one-shot programs. @category layers */
export const layerMemory: Layer.Layer<FlagCache> = Layer.sync(FlagCache, () => {
  const entries = new Map<string, Cache.Entry>()
  const id = (key: CacheKey) => `${key.host}\u0000${key.version}\u0000${key.sha256}`
  return {
    read: (key) => Effect.sync(() => entries.get(id(key))),
    write: (entry) =>
      Effect.sync(() => {
        entries.set(id({ host: entry.host, version: entry.version, sha256: entry.dump.sha256 }), entry)
      })
  }
})

/** The host's parser could not be read. @category errors */
export class FlagDumpFailed extends Schema.TaggedError<FlagDumpFailed>()("FlagDumpFailed", {
  host: Schema.String,
  python: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not read SGLang's flags from ${this.python} on ${this.host}: ${this.reason}`
  }
}

const DUMP_TIMEOUT = "120 seconds"
const decodeDump = Schema.decodeUnknownEither(Schema.parseJson(Cache.Dump))
const tail = (text: string) => text.trim().split("\n").slice(-3).join(" | ")

/**
 * Run the dump with the install's Python (the runtime's command): one program.
 *
 * @category reading
 */
export const dump = Effect.fn("HostFlags.dump")(function* (
  request: Pick<FlagsRequest, "host" | "located" | "python">
): Effect.fn.Return<Dump, FlagDumpFailed | CommandError> {
  const fail = (reason: string) =>
    new FlagDumpFailed({ host: request.host, python: request.located.interpreter, reason })
  const result = yield* request
    .python(DUMP_SCRIPT, DUMP_TIMEOUT)
    .pipe(Effect.catchTag("CommandTimeout", () => Effect.fail(fail(`no answer within ${DUMP_TIMEOUT}`))))
  if (result.exitCode !== 0) {
    return yield* fail(
      `exit ${result.exitCode ?? result.signal}: ${tail(result.stderr) || tail(result.stdout)}`
    )
  }
  const decoded = decodeDump(result.stdout.trim().split("\n").at(-1) ?? "")
  if (decoded._tag === "Left") return yield* fail(`unexpected output: ${tail(result.stdout).slice(0, 200)}`)
  return decoded.right
})

/**
 * A dump as a catalogue of `version`. Flags that a shipped release near it also has keep our
 * summary and section from there.
 *
 * @category constructors
 */
export const catalogueOf = (version: string, dumped: Dump): Catalogue.Catalogue => {
  const words = Catalogue.match(version)?.catalogue ?? Catalogue.latest
  return Catalogue.make(
    version,
    toFlagSpecs(dumped.actions, new Set(dumped.fields), (f) => words.byFlag.get(f)),
    "host"
  )
}

/** @category models */
export interface HostCatalogue {
  readonly catalogue: Catalogue.Catalogue
  /**
   * `shipped`: the release's shipped catalogue; `cached`: an earlier dump of this install;
   * `dumped`: read from the host now; `nearest`: the dump failed and the nearest shipped
   * release stands in.
   */
  readonly source: "shipped" | "cached" | "dumped" | "nearest"
  /** Set for `nearest`: both versions and why. */
  readonly warning: string | null
}

/**
 * The catalogue for the SGLang a runtime located on a host (the engine's `FlagsRequest`): the
 * shipped one for a shipped release (unless `fromHost`), else the cached or a fresh dump of the
 * install, else the nearest shipped release with a warning naming both versions and why.
 *
 * @category reading
 */
export const forHost = Effect.fn("HostFlags.forHost")(function* (request: FlagsRequest) {
  const { host, located } = request
  const version = located.engineVersion
  const shipped = Catalogue.get(version)
  if (shipped !== undefined && !request.fromHost) {
    return { catalogue: shipped, source: "shipped", warning: null } satisfies HostCatalogue
  }
  const cache = yield* Effect.serviceOption(FlagCache)
  const sha256 = located.fileHashes[fingerprintFile]
  const key: CacheKey | undefined =
    sha256 === undefined ? undefined : { host: located.installId, version, sha256 }
  if (Option.isSome(cache) && key !== undefined) {
    const hit = yield* cache.value.read(key)
    if (hit !== undefined) {
      return {
        catalogue: catalogueOf(version, hit.dump),
        source: "cached",
        warning: null
      } satisfies HostCatalogue
    }
  }
  const dumped = yield* Effect.either(dump(request))
  if (dumped._tag === "Right") {
    if (Option.isSome(cache)) {
      yield* cache.value.write({
        format: 1,
        host: located.installId,
        version,
        python: located.interpreter,
        createdAt: yield* Clock.currentTimeMillis,
        dump: dumped.right
      })
    }
    return {
      catalogue: catalogueOf(version, dumped.right),
      source: "dumped",
      warning: null
    } satisfies HostCatalogue
  }
  const reason = dumped.left._tag === "FlagDumpFailed" ? dumped.left.reason : dumped.left.message
  if (shipped !== undefined) {
    return {
      catalogue: shipped,
      source: "shipped",
      warning: `could not read the flags from ${host} (${reason}); using the shipped catalogue of ${shipped.version}`
    } satisfies HostCatalogue
  }
  const match = yield* Catalogue.forVersion(version)
  return {
    catalogue: match.catalogue,
    source: "nearest",
    warning: `could not read the flags of SGLang ${version} from ${host} (${reason}); checking them against the nearest shipped release ${match.catalogue.version} instead: flags added or changed after it are not known`
  } satisfies HostCatalogue
})
