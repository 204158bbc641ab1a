/**
 * Which paths of a local tree `Sync.push` sends: `.gitignore` rules (the common subset of
 * git's syntax), the secret-file defaults, and the caller's `include` patterns. Patterns are
 * compiled to regular expressions over `/`-separated paths relative to the directory whose
 * `.gitignore` holds them (the tree's root for the defaults and `include`).
 *
 * Supported: blank lines and `#` comments, `\#` / `\!` escapes, trailing spaces (unless
 * escaped), `!` negation, a trailing `/` (directories only), a `/` at the start or in the
 * middle (anchored to the `.gitignore`'s directory; otherwise the pattern matches a name at
 * any depth), `*`, `?`, `[...]` / `[!...]`, and `**` as a whole segment (at the start, at the
 * end or between two slashes: any number of directories; elsewhere it is a `*`).
 *
 * @internal
 */

export interface Rule {
  /** The pattern as written (without `!` and the trailing `/`). */
  readonly source: string
  readonly negate: boolean
  readonly dirOnly: boolean
  /** Anchored to its base directory (a `/` at the start or in the middle). */
  readonly anchored: boolean
  readonly regex: RegExp
  /** The anchored pattern's segments (for "could match below this directory"). */
  readonly segments: ReadonlyArray<string>
}

const REGEX_SPECIAL = /[.*+?^${}()|[\]\\/]/g

/** `[...]` starting at `at` (the `[`): the class's regex and where it ends, or undefined if unterminated. */
const charClass = (
  glob: string,
  at: number
): { readonly regex: string; readonly end: number } | undefined => {
  let i = at + 1
  let negate = false
  if (glob[i] === "!" || glob[i] === "^") {
    negate = true
    i++
  }
  let body = ""
  let first = true
  while (i < glob.length) {
    const c = glob[i]!
    if (c === "]" && !first) return { regex: `[${negate ? "^" : ""}${body}]`, end: i }
    if (c === "\\" && i + 1 < glob.length) {
      body += `\\${glob[i + 1]}`
      i += 2
    } else {
      body += c === "\\" || c === "]" || c === "[" || c === "^" ? `\\${c}` : c
      i++
    }
    first = false
  }
  return undefined
}

/** A glob (no leading `/`) as a regular expression body over a relative path. */
export const globToRegex = (glob: string): string => {
  let out = ""
  let i = 0
  while (i < glob.length) {
    const c = glob[i]!
    if (c === "*") {
      const doubled = glob[i + 1] === "*"
      const segmentStart = i === 0 || glob[i - 1] === "/"
      const segmentEnd = i + 2 === glob.length || glob[i + 2] === "/"
      if (doubled && segmentStart && segmentEnd) {
        if (i + 2 === glob.length) {
          out += ".*"
          i += 2
        } else {
          out += "(?:.*/)?"
          i += 3
        }
        continue
      }
      out += "[^/]*"
      while (glob[i] === "*") i++
      continue
    }
    if (c === "?") out += "[^/]"
    else if (c === "[") {
      const cls = charClass(glob, i)
      if (cls === undefined) out += "\\["
      else {
        out += cls.regex
        i = cls.end
      }
    } else if (c === "\\" && i + 1 < glob.length) {
      out += glob[i + 1]!.replace(REGEX_SPECIAL, "\\$&")
      i++
    } else out += c.replace(REGEX_SPECIAL, "\\$&")
    i++
  }
  return out
}

/** Trailing spaces are dropped unless escaped with a backslash. */
const trimTrailingSpaces = (line: string): string => {
  let end = line.length
  while (end > 0 && line[end - 1] === " ") {
    let slashes = 0
    for (let j = end - 2; j >= 0 && line[j] === "\\"; j--) slashes++
    if (slashes % 2 === 1) break
    end--
  }
  return line.slice(0, end)
}

/** One `.gitignore` line as a rule, or undefined for blank lines and comments. */
export const parseRule = (raw: string): Rule | undefined => {
  let line = trimTrailingSpaces(raw.endsWith("\r") ? raw.slice(0, -1) : raw)
  if (line === "" || line.startsWith("#")) return undefined
  let negate = false
  if (line.startsWith("!")) {
    negate = true
    line = line.slice(1)
  } else if (line.startsWith("\\!") || line.startsWith("\\#")) line = line.slice(1)
  let dirOnly = false
  while (line.endsWith("/") && !line.endsWith("\\/")) {
    dirOnly = true
    line = line.slice(0, -1)
  }
  if (line === "") return undefined
  const anchored = line.includes("/")
  const glob = line.startsWith("/") ? line.slice(1) : line
  if (glob === "") return undefined
  const body = globToRegex(glob)
  return {
    source: glob,
    negate,
    dirOnly,
    anchored,
    regex: new RegExp(anchored ? `^${body}$` : `^(?:.*/)?${body}$`, "s"),
    segments: anchored ? glob.split("/") : []
  }
}

/** Every rule of a `.gitignore` text, in order. */
export const parseRules = (text: string): ReadonlyArray<Rule> =>
  text.split("\n").flatMap((line) => {
    const rule = parseRule(line)
    return rule === undefined ? [] : [rule]
  })

export const matches = (rule: Rule, relPath: string, isDir: boolean): boolean =>
  (!rule.dirOnly || isDir) && rule.regex.test(relPath)

/** The rules of one `.gitignore`, and the directory (relative to the root, "" for it) they apply under. */
export interface RuleSet {
  readonly base: string
  readonly rules: ReadonlyArray<Rule>
}

const relativeTo = (base: string, path: string): string | undefined => {
  if (base === "") return path
  return path.startsWith(`${base}/`) ? path.slice(base.length + 1) : undefined
}

/**
 * Whether the `.gitignore` files in `stack` (root first, deepest last) ignore `path`: the
 * last matching rule decides, a deeper file's rules coming after its parents'. `undefined`
 * when no rule matches.
 */
export const ignoredBy = (
  stack: ReadonlyArray<RuleSet>,
  path: string,
  isDir: boolean
): boolean | undefined => {
  let verdict: boolean | undefined
  for (const set of stack) {
    const rel = relativeTo(set.base, path)
    if (rel === undefined) continue
    for (const rule of set.rules) if (matches(rule, rel, isDir)) verdict = !rule.negate
  }
  return verdict
}

/** Whether any of `rules` matches `path` (relative to the root); negations are not used here. */
export const anyMatches = (rules: ReadonlyArray<Rule>, path: string, isDir: boolean): boolean =>
  rules.some((rule) => !rule.negate && matches(rule, path, isDir))

const segmentMatches = (pattern: string, name: string): boolean =>
  new RegExp(`^${globToRegex(pattern)}$`, "s").test(name)

/**
 * Whether an anchored rule could match something below directory `dir`: its leading segments
 * match `dir`'s and it has more segments (or a `**` on the way). Unanchored rules do not make
 * the walk enter a directory it would skip.
 */
export const couldMatchBelow = (rules: ReadonlyArray<Rule>, dir: string): boolean => {
  const parts = dir.split("/")
  return rules.some((rule) => {
    if (rule.negate || !rule.anchored) return false
    for (let i = 0; i < parts.length; i++) {
      const segment = rule.segments[i]
      if (segment === "**") return true
      if (segment === undefined || i === rule.segments.length - 1) return false
      if (!segmentMatches(segment, parts[i]!)) return false
    }
    return rule.segments.length > parts.length
  })
}

/**
 * Files never sent unless an `include` pattern asks for them, even when no `.gitignore`
 * mentions them: environment files, keys and credentials.
 */
export const SECRET_PATTERNS: ReadonlyArray<string> = [
  ".env",
  ".env.*",
  "*.pem",
  "*.key",
  "id_rsa*",
  "id_ed25519*",
  ".netrc",
  "credentials*.json"
]

export const secretRules: ReadonlyArray<Rule> = SECRET_PATTERNS.map((p) => parseRule(p)!)
