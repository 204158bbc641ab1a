/**
 * The flags of the vLLM a host actually has, read from the install itself: one Python program
 * run by the runtime that found it (the environment's interpreter, or inside the image) builds
 * `vllm serve`'s own parser (no model, no GPU) and prints its actions, which become a catalogue
 * like a shipped snapshot (the argv decoder, did-you-mean, choices and type checks then hold for
 * that version). The dump is kept on this machine (`FlagCache`), keyed by the install (its id,
 * version and the sha256 of its argument modules, which the runtime's probe reports), so it runs
 * once per install.
 *
 * `forHost` decides: a version a shipped snapshot is near uses that snapshot (no command) unless
 * `fromHost`; any other version uses the cached or a fresh dump; if the dump fails, the nearest
 * snapshot stands in, with a warning naming both versions and why.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import { mkdir, rename, writeFile } from "node:fs/promises"
import { homedir } from "node:os"
import { join } from "node:path"
import type { CommandError } from "@mlops/core/Errors"
import * as LocalFiles from "@mlops/core/LocalFiles"
import type { FlagsRequest } from "@mlops/serve/Engine"
import { Clock, Config, Context, Effect, Layer, Option, Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import { DumpAction, recordOf } from "./internal/catalogue/fromDump.js"
import { DUMP_SCRIPT } from "./internal/hostFlags/script.js"

/** The files whose fingerprints key the cache, relative to the vllm package. @category constants */
export const fingerprintFiles = ["engine/arg_utils.py", "entrypoints/openai/cli_args.py"] as const

/** What the dump program prints. @category models */
export const Dump = Schema.Struct({ version: Schema.String, actions: Schema.Array(DumpAction) })
export type Dump = typeof Dump.Type

/** A cached dump with where it came from. @category models */
export const Entry = Schema.Struct({
  format: Schema.Literal(1),
  host: Schema.String,
  version: Schema.String,
  /** The fingerprint of the install's argument modules. */
  fingerprint: Schema.String,
  python: Schema.String,
  createdAt: Schema.Number,
  dump: Dump
})
export type Entry = typeof Entry.Type

/** @category models */
export interface CacheKey {
  readonly host: string
  readonly version: string
  readonly fingerprint: string
}

/** Where dumps are kept between runs. @category services */
export class FlagCache extends Context.Tag("@mlops/vllm/FlagCache")<
  FlagCache,
  {
    readonly read: (key: CacheKey) => Effect.Effect<Entry | undefined>
    readonly write: (entry: Entry) => Effect.Effect<void>
  }
>() {}

const safe = (name: string) => name.replace(/[^A-Za-z0-9._-]/g, "_")
const pathOf = (dir: string, key: CacheKey) =>
  join(dir, safe(key.host), `${safe(key.version)}-${key.fingerprint.slice(0, 16)}.json`)
const decodeEntry = Schema.decodeUnknownOption(Schema.parseJson(Entry))

/**
 * Files under `dir`: `<host>/<version>-<fingerprint>.json`, directories 0700, files 0600, written
 * aside and renamed; an entry that does not decode is a miss (the next dump replaces it).
 *
 * @category layers
 */
export const layerDirectory = (dir: string): Layer.Layer<FlagCache> =>
  Layer.succeed(FlagCache, {
    read: (key) =>
      LocalFiles.readTextIfExists(pathOf(dir, key)).pipe(
        Effect.map((text) => (text === undefined ? undefined : Option.getOrUndefined(decodeEntry(text)))),
        Effect.map((entry) => (entry?.fingerprint === key.fingerprint ? entry : undefined)),
        Effect.orElseSucceed(() => undefined)
      ),
    write: (entry) => {
      const path = pathOf(dir, entry)
      const temp = `${path}.${process.pid}.tmp`
      // a failure to write only means the next run dumps again
      return Effect.tryPromise(async () => {
        await mkdir(join(dir, safe(entry.host)), { recursive: true, mode: 0o700 })
        await writeFile(temp, JSON.stringify(entry), { mode: 0o600 })
        await rename(temp, path)
      }).pipe(Effect.ignore)
    }
  })

/** `$MLOPS_HOME/flags/vllm` (default `~/.mlops/flags/vllm`). @category layers */
export const layerConfig: Layer.Layer<FlagCache> = Layer.unwrapEffect(
  Config.string("MLOPS_HOME").pipe(
    Config.withDefault(join(homedir(), ".mlops")),
    Effect.orElseSucceed(() => join(homedir(), ".mlops")),
    Effect.map((home) => layerDirectory(join(home, "flags", "vllm")))
  )
)

/** The host's parser could not be read. @category errors */
export class FlagDumpFailed extends Schema.TaggedError<FlagDumpFailed>()("FlagDumpFailed", {
  host: Schema.String,
  python: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `could not read vLLM's flags from ${this.python} on ${this.host}: ${this.reason}`
  }
}

const DUMP_TIMEOUT = "180 seconds"
const decodeDump = Schema.decodeUnknownEither(Schema.parseJson(Dump))
const tail = (text: string) => text.trim().split("\n").slice(-3).join(" | ")

/** Run the dump with the install's Python (the runtime's command): one program. @category reading */
export const dump = Effect.fn("VllmHostFlags.dump")(function* (
  request: Pick<FlagsRequest, "host" | "located" | "python">
): Effect.fn.Return<Dump, FlagDumpFailed | CommandError> {
  const fail = (reason: string) =>
    new FlagDumpFailed({ host: request.host, python: request.located.interpreter, reason })
  const result = yield* request
    .python(DUMP_SCRIPT, DUMP_TIMEOUT)
    .pipe(Effect.catchTag("CommandTimeout", () => Effect.fail(fail(`no answer within ${DUMP_TIMEOUT}`))))
  if (result.exitCode !== 0)
    return yield* fail(
      `exit ${result.exitCode ?? result.signal}: ${tail(result.stderr) || tail(result.stdout)}`
    )
  const decoded = decodeDump(result.stdout.trim().split("\n").at(-1) ?? "")
  if (decoded._tag === "Left") return yield* fail(`unexpected output: ${tail(result.stdout).slice(0, 200)}`)
  return decoded.right
})

/** A dump as the catalogue of `version` (a converter newer than mlops reads as text). @category constructors */
export const catalogueOf = (version: string, dumped: Dump): Catalogue.Catalogue =>
  Catalogue.fromInstall(
    version,
    dumped.actions.map((action) => recordOf(action, { strict: false }))
  )

/** @category models */
export interface HostCatalogue {
  readonly catalogue: Catalogue.Catalogue
  /**
   * `shipped`: a snapshot near the version; `cached`: an earlier dump of this install; `dumped`:
   * read from the host now; `nearest`: the dump failed and the nearest snapshot stands in.
   */
  readonly source: "shipped" | "cached" | "dumped" | "nearest"
  readonly warning: string | null
}

/** The install's fingerprint: its argument modules' hashes, undefined when the probe has none. */
const fingerprintOf = (hashes: Readonly<Record<string, string>>): string | undefined => {
  const parts = fingerprintFiles.map((file) => hashes[file])
  if (parts.every((part) => part === undefined)) return undefined
  return createHash("sha256")
    .update(parts.map((part) => part ?? "-").join("\n"))
    .digest("hex")
}

/**
 * The catalogue for the vLLM a runtime located on a host: a shipped snapshot near its version
 * (unless `fromHost`), else the cached or a fresh dump of the install, else the nearest snapshot
 * with a warning naming both versions and why.
 *
 * @category reading
 */
export const forHost = Effect.fn("VllmHostFlags.forHost")(function* (request: FlagsRequest) {
  const { host, located } = request
  const version = located.engineVersion
  // a version string that is none (a source install's `dev`) is asked of the install's own parser too
  const chosen = Catalogue.choose(version)
  if (chosen !== undefined && chosen.warning === null && !request.fromHost)
    return { catalogue: chosen.catalogue, source: "shipped", warning: null } satisfies HostCatalogue
  const cache = yield* Effect.serviceOption(FlagCache)
  const fingerprint = fingerprintOf(located.fileHashes)
  const key = fingerprint === undefined ? undefined : { host: located.installId, version, fingerprint }
  if (Option.isSome(cache) && key !== undefined) {
    const hit = yield* cache.value.read(key)
    if (hit !== undefined)
      return {
        catalogue: catalogueOf(version, hit.dump),
        source: "cached",
        warning: null
      } satisfies HostCatalogue
  }
  const dumped = yield* Effect.either(dump(request))
  if (dumped._tag === "Right") {
    if (Option.isSome(cache) && key !== undefined)
      yield* cache.value.write({
        format: 1,
        ...key,
        python: located.interpreter,
        createdAt: yield* Clock.currentTimeMillis,
        dump: dumped.right
      })
    return {
      catalogue: catalogueOf(version, dumped.right),
      source: "dumped",
      warning: null
    } satisfies HostCatalogue
  }
  const reason = dumped.left._tag === "FlagDumpFailed" ? dumped.left.reason : dumped.left.message
  if (chosen === undefined)
    return yield* new Catalogue.UnknownVllmVersion({
      version,
      snapshots: Catalogue.snapshots.map((snapshot) => `${snapshot.name} (≈${snapshot.near})`)
    })
  return {
    catalogue: chosen.catalogue,
    source: "nearest",
    warning: `could not read the flags of vLLM ${version} from ${host} (${reason}); checking them against ${chosen.catalogue.snapshot.name} (near ${chosen.catalogue.snapshot.near}) instead: flags added or removed since are not known`
  } satisfies HostCatalogue
})
