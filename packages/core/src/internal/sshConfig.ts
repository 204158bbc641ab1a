/**
 * Loading ssh_config files with their `Include`s, and computing one alias's options.
 * `ssh-config` parses and evaluates Host/Match blocks but neither follows `Include` nor is
 * safe by default (`Match exec`, `CanonicalizeHostName` spawn processes), so this module
 * loads includes itself and strips what would spawn.
 *
 * @internal
 */

import { readdir } from "node:fs/promises"
import { isAbsolute, join, sep } from "node:path"
import { Effect } from "effect"
import SSHConfig, { type Directive, type Line, LineType, type Section } from "ssh-config"
import { ConfigFileError } from "../Errors.js"
import { readTextIfExists } from "../LocalFiles.js"
import { matchPatternList } from "./knownHosts.js"

/** OpenSSH's own limit on nested includes. */
const MAX_INCLUDE_DEPTH = 16

/** Every file read, keyed by path, plus how each Include pattern expanded. @internal */
export interface SshConfigSet {
  readonly main: string
  readonly files: ReadonlyMap<string, SSHConfig>
  readonly includes: ReadonlyMap<string, ReadonlyArray<string>>
}

/** @internal */
export type Computed = Readonly<Record<string, string | ReadonlyArray<string>>>

/** A directive's values as a list (`ssh-config` gives a string for single values). */
const valuesOf = (value: Directive["value"]): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : value.map((v) => v.val)

const isDirective = (line: Line): line is Directive => line.type === LineType.DIRECTIVE
const isSection = (line: Line): line is Section => isDirective(line) && "config" in line
const isInclude = (line: Line): boolean => isDirective(line) && /^include$/i.test(line.param)
/** Would make `compute` spawn `nslookup`; we resolve names the way ssh2 does instead. */
const isSpawning = (line: Line) => isDirective(line) && /^canonicalizehostname$/i.test(line.param)

/** `~` and relative include paths resolve like OpenSSH user configs: against `~/.ssh`. */
const includePath = (pattern: string, homeDir: string): string => {
  if (pattern === "~" || pattern.startsWith("~/")) return join(homeDir, pattern.slice(1))
  return isAbsolute(pattern) ? pattern : join(homeDir, ".ssh", pattern)
}

const hasGlob = (segment: string) => /[*?[]/.test(segment)

const segmentRegExp = (segment: string) =>
  new RegExp(
    `^${segment
      .replace(/[.+^${}()|\\]/g, "\\$&")
      .replace(/\*/g, "[^/]*")
      .replace(/\?/g, "[^/]")}$`
  )

/** glob(3) for `*`, `?` and `[...]` in any path segment; sorted, no match → no paths. */
const expandGlob = async (pattern: string): Promise<ReadonlyArray<string>> => {
  if (!hasGlob(pattern)) return [pattern]
  const segments = pattern.split(sep)
  let current: Array<string> = [segments[0] === "" ? sep : segments[0]!]
  for (const segment of segments.slice(1)) {
    if (segment === "") continue
    if (!hasGlob(segment)) {
      current = current.map((dir) => join(dir, segment))
      continue
    }
    const re = segmentRegExp(segment)
    const next: Array<string> = []
    for (const dir of current) {
      const names = await readdir(dir).catch(() => [] as Array<string>)
      for (const name of names.sort()) if (!name.startsWith(".") && re.test(name)) next.push(join(dir, name))
    }
    current = next
  }
  return current
}

/**
 * The first line ssh would reject as malformed (the way `ssh` says "line N: ..."): a keyword
 * that is not one word of letters and digits, a keyword without a value, an unterminated
 * quote. Unknown keywords are left to ssh (mlops reads only the ones it uses).
 */
const malformedLine = (path: string, text: string): ConfigFileError | undefined => {
  const lines = text.split("\n")
  for (const [index, raw] of lines.entries()) {
    const content = raw.replace(/\r$/, "").trim()
    if (content === "" || content.startsWith("#")) continue
    const line = index + 1
    const match = /^([^\s=]*)\s*(?:=\s*)?(.*)$/.exec(content)!
    const keyword = match[1]!
    const value = match[2]!.trim()
    const problem = (reason: string, fix: string) =>
      new ConfigFileError({
        path,
        line,
        ...(keyword === "" ? {} : { field: keyword }),
        reason: `line ${line}: ${reason}`,
        fix
      })
    if (keyword === "") return problem(`"${content}" has no keyword`, "write each option as `Keyword value`")
    if (!/^[A-Za-z][A-Za-z0-9]*$/.test(keyword))
      return problem(
        `"${keyword}" is not an ssh_config keyword`,
        "keywords are letters and digits, e.g. `Port 22`"
      )
    if (value === "")
      return problem(`${keyword} has no value`, `give it one (\`${keyword} <value>\`) or remove the line`)
    if ((value.match(/"/g)?.length ?? 0) % 2 === 1)
      return problem(`${keyword} has an unterminated quote`, 'close the quoted value with a second "')
  }
  return undefined
}

const parseText = (path: string, text: string) =>
  Effect.suspend(() => {
    const malformed = malformedLine(path, text)
    if (malformed !== undefined) return Effect.fail(malformed)
    return Effect.try({
      try: () => SSHConfig.parse(text),
      catch: (error) => new ConfigFileError({ path, reason: `cannot parse ssh_config: ${String(error)}` })
    })
  })

const includeDirectives = (config: SSHConfig): ReadonlyArray<Directive> =>
  config.flatMap((line) =>
    isInclude(line)
      ? [line as Directive]
      : isSection(line)
        ? (line.config.filter(isInclude) as Array<Directive>)
        : []
  )

/**
 * Read the main file (missing = empty, unless `required`) and, recursively, every file it
 * includes.
 *
 * @internal
 */
export const load = (
  main: string,
  homeDir: string,
  options: { readonly required?: string } = {}
): Effect.Effect<SshConfigSet, ConfigFileError> =>
  Effect.gen(function* () {
    const files = new Map<string, SSHConfig>()
    const includes = new Map<string, ReadonlyArray<string>>()
    const visit = (path: string, depth: number): Effect.Effect<void, ConfigFileError> =>
      Effect.gen(function* () {
        if (files.has(path)) return
        if (depth > MAX_INCLUDE_DEPTH) {
          return yield* new ConfigFileError({
            path,
            reason: `Include nested deeper than ${MAX_INCLUDE_DEPTH} levels (an Include loop?)`
          })
        }
        const text = yield* readTextIfExists(path)
        if (text === undefined && depth === 0 && options.required !== undefined) {
          return yield* new ConfigFileError({
            path,
            reason: `no such file (named by ${options.required})`,
            fix: `create it, or unset ${options.required} to read ~/.ssh/config`
          })
        }
        const config = yield* parseText(path, text ?? "")
        files.set(path, config)
        for (const directive of includeDirectives(config)) {
          for (const pattern of valuesOf(directive.value)) {
            const paths = yield* Effect.promise(() => expandGlob(includePath(pattern, homeDir)))
            includes.set(pattern, paths)
            for (const included of paths) yield* visit(included, depth + 1)
          }
        }
      })
    yield* visit(main, 0)
    return { main, files, includes }
  })

const toConfig = (lines: ReadonlyArray<Line>): SSHConfig => {
  const config = SSHConfig.parse("")
  config.push(...lines)
  return config
}

const includedLines = (set: SshConfigSet, directive: Directive, alias: string, depth: number) =>
  valuesOf(directive.value).flatMap((pattern) =>
    (set.includes.get(pattern) ?? []).flatMap((path) => {
      const config = set.files.get(path)
      return config === undefined || depth > MAX_INCLUDE_DEPTH ? [] : flatten(set, config, alias, depth + 1)
    })
  )

/**
 * Splice includes in place for one alias. An Include inside a Host block only applies when
 * that block matches; its leading directives join the block and its own Host/Match blocks
 * follow it. Inside a Match block only the leading directives are kept.
 */
const flatten = (set: SshConfigSet, config: SSHConfig, alias: string, depth: number): Array<Line> => {
  const out: Array<Line> = []
  for (const line of config) {
    if (isSpawning(line)) continue
    if (isInclude(line)) {
      out.push(...includedLines(set, line as Directive, alias, depth))
    } else if (isSection(line) && line.config.some((sub) => isInclude(sub) || isSpawning(sub))) {
      const isHost = /^host$/i.test(line.param)
      const applies = !isHost || matchPatternList(hostPatterns(line), alias)
      const inner: Array<Line> = []
      const trailing: Array<Line> = []
      for (const sub of line.config) {
        if (isSpawning(sub)) continue
        if (!isInclude(sub)) {
          inner.push(sub)
          continue
        }
        if (!applies) continue
        const lines = includedLines(set, sub as Directive, alias, depth)
        const firstSection = lines.findIndex(isSection)
        const split = firstSection === -1 ? lines.length : firstSection
        inner.push(...lines.slice(0, split))
        if (isHost) trailing.push(...lines.slice(split))
      }
      out.push({ ...line, config: toConfig(inner) } as Section, ...trailing)
    } else {
      out.push(line)
    }
  }
  return out
}

/** A Host line's patterns (whitespace or comma separated). */
const hostPatterns = (section: Directive): ReadonlyArray<string> =>
  valuesOf(section.value).flatMap((v) => v.split(","))

/** ssh_config options for `alias`, first value wins, keys lower-cased. Never runs commands. @internal */
export const compute = (set: SshConfigSet, alias: string): Computed => {
  const main = set.files.get(set.main) ?? toConfig([])
  return toConfig(flatten(set, main, alias, 0)).compute(alias, { ignoreCase: true, matchExec: false })
}

/** Every Host block, in reading order, with the file it came from. */
const hostSections = (
  set: SshConfigSet
): ReadonlyArray<{ readonly file: string; readonly section: Section }> => {
  const out: Array<{ file: string; section: Section }> = []
  const seen = new Set<string>()
  const walk = (path: string) => {
    const config = set.files.get(path)
    if (config === undefined || seen.has(path)) return
    seen.add(path)
    const follow = (directive: Directive) =>
      valuesOf(directive.value).forEach((pattern) => {
        for (const included of set.includes.get(pattern) ?? []) walk(included)
      })
    for (const line of config) {
      if (isInclude(line)) follow(line as Directive)
      else if (isSection(line)) {
        if (/^host$/i.test(line.param)) out.push({ file: path, section: line })
        for (const sub of line.config) if (isInclude(sub)) follow(sub as Directive)
      }
    }
  }
  walk(set.main)
  return out
}

/** Aliases written without wildcards or negation in Host lines. @internal */
export const concreteAliases = (set: SshConfigSet): ReadonlyArray<string> => {
  const aliases = new Set<string>()
  for (const { section } of hostSections(set)) {
    for (const pattern of hostPatterns(section)) if (!/[*?!]/.test(pattern)) aliases.add(pattern)
  }
  return [...aliases]
}

/**
 * The file of the first Host block naming `alias` by a pattern other than a bare `*`, or
 * undefined when only catch-all blocks (or none) apply.
 *
 * @internal
 */
export const definingFile = (set: SshConfigSet, alias: string): string | undefined =>
  hostSections(set).find(({ section }) => {
    const patterns = hostPatterns(section)
    return patterns.some((p) => p !== "*" && !p.startsWith("!")) && matchPatternList(patterns, alias)
  })?.file
