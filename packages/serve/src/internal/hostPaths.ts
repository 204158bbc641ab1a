/**
 * Paths as the host resolves them, for what names them to another process (a container's mount
 * needs an absolute source).
 *
 * @internal
 */

/** `~/` is the home, a relative path the home's (where a plain server starts), an absolute one itself. */
export const absolute = (home: string, path: string): string =>
  path === "~"
    ? home
    : path.startsWith("~/")
      ? `${home}/${path.slice(2)}`
      : path.startsWith("/")
        ? path
        : `${home}/${path.replace(/^\.\//, "")}`
