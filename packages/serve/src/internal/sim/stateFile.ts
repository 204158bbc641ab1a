/**
 * The persistent sim's state file on the CLIENT (default `~/.mlops/sim/state.json`): JSON
 * decoded with Schema. Reading never fails: a missing file is a fresh sim, anything unusable
 * (not JSON, another version, unexpected content, unreadable) is `Ignored` with a one-line
 * reason. Writing is atomic (a temp file in the same directory, then rename).
 *
 * @internal
 */
import { mkdir, rename, rm, writeFile } from "node:fs/promises"
import { dirname } from "node:path"
import * as LocalFiles from "@mlops/core/LocalFiles"
import { Effect, Either, ParseResult, Schema } from "effect"
import { SimState, version } from "./state.js"

export type Loaded =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Loaded"; readonly state: SimState; readonly text: string }
  | { readonly _tag: "Ignored"; readonly reason: string; readonly text: string | undefined }

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** The file's text; undefined when it does not exist; the reason when it cannot be read. */
export const readText = (path: string): Effect.Effect<string | undefined, string> =>
  LocalFiles.readTextIfExists(path).pipe(Effect.mapError((error) => `cannot read it: ${error.reason}`))

const decodeJson = Schema.decodeUnknownEither(Schema.parseJson())
const decodeState = Schema.decodeUnknownEither(SimState)

/** Why `text` is not a usable state, or the state. */
export const parse = (text: string): Either.Either<SimState, string> => {
  const json = decodeJson(text)
  if (Either.isLeft(json)) return Either.left("not valid JSON")
  const found =
    typeof json.right === "object" && json.right !== null
      ? (json.right as { version?: unknown }).version
      : undefined
  if (found !== version)
    return Either.left(`unknown version ${JSON.stringify(found ?? null)} (expected ${version})`)
  return Either.mapLeft(decodeState(json.right), (error) => {
    const [first] = ParseResult.ArrayFormatter.formatErrorSync(error)
    const at = first === undefined || first.path.length === 0 ? "" : ` at ${first.path.join(".")}`
    return `unexpected content${at}: ${first?.message ?? "does not match"}`.replace(/\s+/g, " ")
  })
}

export const read = (path: string): Effect.Effect<Loaded> =>
  readText(path).pipe(
    Effect.map((text): Loaded => {
      if (text === undefined) return { _tag: "Missing" }
      const parsed = parse(text)
      return Either.isRight(parsed)
        ? { _tag: "Loaded", state: parsed.right, text }
        : { _tag: "Ignored", reason: parsed.left, text }
    }),
    Effect.catchAll((reason) => Effect.succeed<Loaded>({ _tag: "Ignored", reason, text: undefined }))
  )

const encode = Schema.encodeSync(Schema.parseJson(SimState))

/** Replace the file atomically; the error is a one-line reason. */
export const write = (path: string, state: SimState): Effect.Effect<string, string> =>
  Effect.gen(function* () {
    const text = encode(state)
    const tmp = `${path}.tmp-${process.pid}-${Date.now()}`
    yield* Effect.tryPromise({
      try: async () => {
        await mkdir(dirname(path), { recursive: true })
        try {
          await writeFile(tmp, text, { mode: 0o600 })
          await rename(tmp, path)
        } catch (error) {
          await rm(tmp, { force: true })
          throw error
        }
      },
      catch: (error) => `cannot write ${path}: ${errorText(error)}`
    })
    return text
  })
