/**
 * A path on the remote host, as a value. `~` and `~/rest` mean the remote user's home; they
 * are rendered so the remote shell expands them (`"$HOME"/rest`), never quoted into a
 * literal `~`. Every other path (absolute or relative) is one literal word.
 *
 * Use it for the words mlops builds itself (an interpreter, a working directory, a run
 * directory). Words a user passes through to a program (SGLang's flags) stay plain strings in
 * `RemoteCommand.argv`, so they arrive exactly as written.
 *
 * ```ts
 * RemoteCommand.make([RemotePath.make("~/ml-env/bin/python"), "-m", "sglang.launch_server"])
 * // rendered: exec "$HOME"/ml-env/bin/python -m sglang.launch_server
 * ```
 *
 * @since 0.2.0
 */
import { Schema } from "effect"

/** @category models */
export const RemotePath = Schema.TaggedStruct("RemotePath", { path: Schema.String })

/** @category models */
export interface RemotePath extends Schema.Schema.Type<typeof RemotePath> {}

/** @category constructors */
export const make = (path: string): RemotePath => ({ _tag: "RemotePath", path })

/** @category refinements */
export const isRemotePath = (value: unknown): value is RemotePath =>
  typeof value === "object" && value !== null && (value as { readonly _tag?: unknown })._tag === "RemotePath"

/** The part after `~/` of a home-relative path (`""` for `~` itself); `undefined` otherwise. @category inspecting */
export const homeRelative = (path: RemotePath | string): string | undefined => {
  const text = typeof path === "string" ? path : path.path
  if (text === "~") return ""
  return text.startsWith("~/") ? text.slice(2).replace(/^\/+/, "") : undefined
}

/** @category inspecting */
export const isHomeRelative = (path: RemotePath | string): boolean => homeRelative(path) !== undefined

/**
 * The absolute path, given the remote home directory; other paths are returned as they are.
 *
 * @category inspecting
 */
export const resolve = (path: RemotePath | string, home: string): string => {
  const text = typeof path === "string" ? path : path.path
  const rest = homeRelative(text)
  if (rest === undefined) return text
  const base = home.replace(/\/+$/, "")
  return rest === "" ? base || "/" : `${base}/${rest}`
}

/** `path` with `segments` appended, one `/` between each. @category constructors */
export const join = (path: RemotePath | string, ...segments: ReadonlyArray<string>): RemotePath => {
  const text = typeof path === "string" ? path : path.path
  return make([text.replace(/\/+$/, ""), ...segments.map((s) => s.replace(/^\/+|\/+$/g, ""))].join("/"))
}

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/

/**
 * Quote one word for a POSIX shell: bare when it only holds characters that are never special,
 * otherwise single-quoted with `'` written as `'\''`. Every byte inside single quotes is literal
 * (newlines, `$`, backticks, `\`, `~`), so this is exact for any string.
 *
 * @category rendering
 */
export const quote = (word: string): string =>
  word !== "" && SAFE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The path as one shell word: `"$HOME"` / `"$HOME"/rest` for home-relative paths (the rest
 * quoted), otherwise the quoted path.
 *
 * @category rendering
 */
export const toWord = (path: RemotePath | string): string => {
  const rest = homeRelative(path)
  if (rest === undefined) return quote(typeof path === "string" ? path : path.path)
  return rest === "" ? `"$HOME"` : `"$HOME"/${quote(rest)}`
}
