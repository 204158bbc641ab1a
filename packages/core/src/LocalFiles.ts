/**
 * Reading files on the client: the one way mlops reads local files (ssh_config, the mlops
 * hosts file, key files, the sim's state, flag caches, a config.json to check, a log to
 * diagnose). `readTextIfExists`/`readIfExists` where a missing file is normal and means
 * "nothing configured"; `readText` and `stream` where the user named the file, failing with
 * `LocalFileError` that says why.
 *
 * @since 0.1.0
 */
import { createReadStream } from "node:fs"
import { readFile, stat } from "node:fs/promises"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Effect, Schema, Stream } from "effect"
import { ConfigFileError } from "./Errors.js"

/** A file the user named could not be read. @category errors */
export class LocalFileError extends Schema.TaggedError<LocalFileError>()("LocalFileError", {
  path: Schema.String,
  /** `no such file`, `permission denied`, `it is a directory`, `not a regular file`, or the system's words. */
  reason: Schema.String
}) {
  override get message() {
    return `cannot read ${this.path}: ${this.reason}`
  }
}

const reasonOf = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return code === "ENOENT" || code === "ENOTDIR"
    ? "no such file"
    : code === "EACCES" || code === "EPERM"
      ? "permission denied"
      : code === "EISDIR"
        ? "it is a directory"
        : error instanceof Error
          ? error.message
          : String(error)
}

/** The path must be a regular file (a directory or device is named as such). */
const regularFile = (path: string): Effect.Effect<void, LocalFileError> =>
  Effect.tryPromise({
    try: () => stat(path),
    catch: (error) => new LocalFileError({ path, reason: reasonOf(error) })
  }).pipe(
    Effect.flatMap((info) =>
      info.isDirectory()
        ? Effect.fail(new LocalFileError({ path, reason: "it is a directory" }))
        : info.isFile()
          ? Effect.void
          : Effect.fail(new LocalFileError({ path, reason: "not a regular file" }))
    )
  )

/** The whole file as text (UTF-8). @category reading */
export const readText = (path: string): Effect.Effect<string, LocalFileError> =>
  Effect.zipRight(
    regularFile(path),
    Effect.tryPromise({
      try: () => readFile(path, "utf8"),
      catch: (error) => new LocalFileError({ path, reason: reasonOf(error) })
    })
  )

/** The file in chunks of `chunkSize` bytes (default 1 MiB), for files too big to hold. @category reading */
export const stream = (
  path: string,
  options: { readonly chunkSize?: number } = {}
): Stream.Stream<Uint8Array, LocalFileError> =>
  Stream.unwrap(
    Effect.as(
      regularFile(path),
      NodeStream.fromReadable(
        () => createReadStream(path, { highWaterMark: options.chunkSize ?? 1024 * 1024 }),
        (error) => new LocalFileError({ path, reason: reasonOf(error) })
      )
    )
  )

/** The file's bytes, `undefined` when it does not exist or cannot be read (key files ssh skips). @category reading */
export const readIfExists = (path: string): Effect.Effect<Buffer | undefined> =>
  Effect.promise(() => readFile(path).catch(() => undefined))

/**
 * The file's text, `undefined` when it does not exist (ENOENT, or ENOTDIR: a parent is not a
 * directory), ConfigFileError when it cannot be read.
 *
 * @category reading
 */
export const readTextIfExists = (path: string): Effect.Effect<string | undefined, ConfigFileError> =>
  Effect.tryPromise({
    try: () => readFile(path, "utf8"),
    catch: (error) => error as NodeJS.ErrnoException
  }).pipe(
    Effect.map((text): string | undefined => text),
    Effect.catchIf(
      (error) => error.code === "ENOENT" || error.code === "ENOTDIR",
      () => Effect.succeed(undefined)
    ),
    Effect.mapError((error) => new ConfigFileError({ path, reason: `cannot read: ${error.message}` }))
  )
