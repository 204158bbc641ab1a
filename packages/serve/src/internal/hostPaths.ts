/**
 * Paths as the host resolves them, for what names them to another process (a container's mount
 * needs an absolute source).
 *
 * @internal
 */
import * as RemotePath from "@mlops/core/RemotePath"

/** `~/` is the home, a relative path the home's (where a plain server starts), an absolute one itself. */
export const absolute = (home: string, path: string): string =>
  RemotePath.resolve(
    path === "~" || path.startsWith("~/") || path.startsWith("/") ? path : `~/${path.replace(/^\.\//, "")}`,
    home
  )
