/**
 * Typed helpers over a connection's sftp file operations: text, JSON through a Schema,
 * existence, reading from a byte offset, and uploading a local file.
 *
 * @since 0.1.0
 */
import * as fs from "node:fs/promises"
import { Effect, Either, ParseResult, Schema } from "effect"
import type { Connection } from "./Connection.js"
import { type ConnectError, RemoteFileError } from "./Errors.js"

/** @category models */
export type FileError = RemoteFileError | ConnectError

const decoder = () => new TextDecoder("utf-8", { fatal: false })

/** The whole file as text (invalid UTF-8 → U+FFFD). @category reading */
export const readText = (conn: Connection, path: string): Effect.Effect<string, FileError> =>
  Effect.map(conn.files.read(path), (bytes) => decoder().decode(bytes))

/** Like `readText`, but `undefined` when the file does not exist. @category reading */
export const readTextIfExists = (
  conn: Connection,
  path: string
): Effect.Effect<string | undefined, FileError> =>
  readText(conn, path).pipe(
    Effect.catchIf(
      (e): e is RemoteFileError => e._tag === "RemoteFileError" && e.notFound,
      () => Effect.succeed(undefined)
    )
  )

/** JSON decoded with `schema`; bad JSON or a shape mismatch is a RemoteFileError naming the file. @category reading */
export const readJson = <A, I>(
  conn: Connection,
  path: string,
  schema: Schema.Schema<A, I>
): Effect.Effect<A, FileError> =>
  Effect.flatMap(readText(conn, path), (text) =>
    Either.match(Schema.decodeUnknownEither(Schema.parseJson(schema))(text), {
      onLeft: (error) =>
        Effect.fail(
          new RemoteFileError({
            host: conn.host.alias,
            path,
            operation: "readJson",
            reason: ParseResult.TreeFormatter.formatErrorSync(error),
            notFound: false
          })
        ),
      onRight: Effect.succeed
    })
  )

/** Create or replace, creating parent directories. @category writing */
export const writeText = (
  conn: Connection,
  path: string,
  text: string,
  options?: { readonly mode?: number }
): Effect.Effect<void, FileError> => conn.files.write(path, text, options)

/** `value` encoded with `schema`, pretty-printed, newline-terminated. @category writing */
export const writeJson = <A, I>(
  conn: Connection,
  path: string,
  schema: Schema.Schema<A, I>,
  value: A
): Effect.Effect<void, FileError> =>
  Effect.flatMap(Effect.orDie(Schema.encode(schema)(value)), (encoded) =>
    conn.files.write(path, `${JSON.stringify(encoded, null, 2)}\n`)
  )

/** @category reading */
export const exists = (conn: Connection, path: string): Effect.Effect<boolean, FileError> =>
  Effect.map(conn.files.stat(path), (stat) => stat !== undefined)

/** Bytes from `offset` (to EOF, or `length` bytes) and the offset after them. @category reading */
export const readFrom = (
  conn: Connection,
  path: string,
  offset: number,
  length?: number
): Effect.Effect<{ readonly bytes: Uint8Array; readonly nextOffset: number }, FileError> =>
  Effect.map(conn.files.read(path, length === undefined ? { offset } : { offset, length }), (bytes) => ({
    bytes,
    nextOffset: offset + bytes.length
  }))

/**
 * Copy a local file to the host (parents created), keeping its permission bits unless `mode`
 * is given. A local file that cannot be read is a RemoteFileError naming the local path.
 *
 * @category writing
 */
export const upload = Effect.fn("RemoteFiles.upload")(function* (
  conn: Connection,
  localPath: string,
  remotePath: string,
  options: { readonly mode?: number } = {}
): Effect.fn.Return<void, FileError> {
  const local = yield* Effect.tryPromise({
    try: async () => ({ data: await fs.readFile(localPath), mode: (await fs.stat(localPath)).mode & 0o777 }),
    catch: (cause) =>
      new RemoteFileError({
        host: "localhost",
        path: localPath,
        operation: "upload (reading the local file)",
        reason: cause instanceof Error ? cause.message : String(cause),
        notFound: (cause as { readonly code?: unknown }).code === "ENOENT"
      })
  })
  yield* conn.files.write(remotePath, local.data, { mode: options.mode ?? local.mode })
})
