/**
 * Reading files on the client (ssh_config, the mlops hosts file, the sim's state) where a
 * missing file is normal and means "nothing configured".
 *
 * @since 0.1.0
 */
import { readFile } from "node:fs/promises"
import { Effect } from "effect"
import { ConfigFileError } from "./Errors.js"

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
