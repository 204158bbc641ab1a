/**
 * Pathname expansion for the fake host's shell, as dash does it: each `/`-separated part of a
 * field that holds an unquoted `*`, `?` or `[` is matched against a directory's names (a
 * leading `.` only by a pattern starting with `.`); the matches are sorted byte-wise, and a
 * field that matches nothing stays as it is. Computed `/proc` directories cannot be listed:
 * a pattern there is refused.
 *
 * @internal
 */
import { Effect } from "effect"
import type { FakeFs } from "../FakeProgram.js"
import { compile, type Field, fieldText, hasPattern, type Piece } from "./fakeShellPatterns.js"
import { Unsupported } from "./fakeShellWords.js"

const join = (base: string, name: string) =>
  base === "" ? name : base.endsWith("/") ? base + name : `${base}/${name}`

/** The parts of a field between slashes (an absolute field starts with an empty part). */
const partsOf = (field: Field): Array<Array<Piece>> => {
  const parts: Array<Array<Piece>> = [[]]
  for (const piece of field) {
    piece.text.split("/").forEach((text, k) => {
      if (k > 0) parts.push([])
      if (text !== "") parts.at(-1)!.push({ text, quoted: piece.quoted })
    })
  }
  return parts
}

const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)

/** The words a field expands to: the matching paths, or the field itself. */
export const expandPathname = (
  field: Field,
  cwd: string,
  fs: FakeFs
): Effect.Effect<Array<string>, Unsupported> =>
  Effect.gen(function* () {
    const text = fieldText(field)
    if (!hasPattern(field)) return [text]
    const parts = partsOf(field)
    const absolute = text.startsWith("/")
    let paths = [absolute ? "/" : ""]
    for (let k = absolute ? 1 : 0; k < parts.length && paths.length > 0; k++) {
      const part = parts[k]!
      const name = fieldText(part)
      if (!hasPattern(part)) {
        const next: Array<string> = []
        for (const path of paths) {
          const joined = join(path, name)
          // a literal part must exist (a trailing `/` asks for a directory)
          const stat = yield* fs.stat(fs.resolve(joined.startsWith("/") ? joined : `${cwd}/${joined}`))
          if (stat !== undefined && (name !== "" || stat.isDirectory)) next.push(joined)
        }
        paths = next
        continue
      }
      const pattern = compile(part)
      const hidden = name.startsWith(".")
      const next: Array<string> = []
      for (const path of paths) {
        const dir = fs.resolve(path === "" ? cwd : path.startsWith("/") ? path : `${cwd}/${path}`)
        if (dir === "/proc" || dir.startsWith("/proc/"))
          return yield* Effect.fail(new Unsupported(`pathname expansion in ${dir}`))
        const names = yield* fs.readDirectory(dir)
        if (names === undefined) continue
        for (const entry of hidden ? [".", "..", ...names] : names) {
          if ((hidden || !entry.startsWith(".")) && pattern.test(entry)) next.push(join(path, entry))
        }
      }
      paths = next
    }
    return paths.length === 0 ? [text] : paths.sort(byteOrder)
  })
