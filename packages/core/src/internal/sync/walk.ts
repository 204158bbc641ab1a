/**
 * The local side of `Sync.push`: walk a directory (`lstat` only, no file is opened), keeping
 * what `.gitignore` files, the secret defaults and `include` patterns let through (see
 * `ignore.ts` for the rules and `Sync.ts` for the semantics).
 *
 * @internal
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import type { SkippedPath } from "../../Sync.js"
import { SyncLocalUnreadable, SyncSourceInvalid, SyncSymlinkOutside } from "../../SyncErrors.js"
import {
  anyMatches,
  couldMatchBelow,
  ignoredBy,
  parseRule,
  parseRules,
  type Rule,
  type RuleSet,
  secretRules
} from "./ignore.js"

export type LocalEntry =
  | {
      readonly kind: "file"
      readonly path: string
      readonly abs: string
      readonly size: number
      readonly mtimeMs: number
      /** Local permission bits. */
      readonly mode: number
    }
  | { readonly kind: "link"; readonly path: string; readonly target: string }
  | { readonly kind: "dir"; readonly path: string }

export interface LocalTree {
  /** Absolute. */
  readonly root: string
  /** Sorted by path; directories are those holding something sent (like git, no empty ones). */
  readonly entries: ReadonlyArray<LocalEntry>
  readonly files: number
  readonly bytes: number
  readonly skipped: ReadonlyArray<SkippedPath>
}

export interface WalkOptions {
  readonly include: ReadonlyArray<string>
  readonly symlinksOutside: "fail" | "skip"
}

type WalkError = SyncSourceInvalid | SyncLocalUnreadable | SyncSymlinkOutside

const codeOf = (error: unknown): string | undefined => (error as { readonly code?: string }).code

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error))

export const unreadable = (abs: string, error: unknown, isDir = false) =>
  new SyncLocalUnreadable({
    path: abs,
    reason: reasonOf(error),
    fix: `make it readable (chmod u+${isDir ? "rx" : "r"} ${abs}) or add it to .gitignore`
  })

/** Reserved in the target's root: the manifest and its companions. */
const RESERVED = /^\.mlops-sync\./

const join = (dir: string, name: string) => (dir === "" ? name : `${dir}/${name}`)

const isInside = (root: string, abs: string): boolean => {
  const rel = path.relative(root, abs)
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
}

/** The walk of `root`: every entry to send, sorted, and what was left out with a reason. */
export const walk = (root: string, options: WalkOptions): Effect.Effect<LocalTree, WalkError> =>
  Effect.gen(function* () {
    const abs = path.resolve(root)
    const rootStat = yield* Effect.tryPromise({
      try: () => fs.promises.stat(abs),
      catch: (error) =>
        codeOf(error) === "ENOENT"
          ? new SyncSourceInvalid({
              path: abs,
              problem: "missing",
              fix: "check the path (it is relative to the current directory) or create the directory"
            })
          : unreadable(abs, error)
    })
    if (!rootStat.isDirectory()) {
      return yield* new SyncSourceInvalid({
        path: abs,
        problem: "not-a-directory",
        fix: "give the directory holding the code, not a file in it"
      })
    }
    // a root reached through a symlink: absolute link targets may name either spelling
    const realRoot = yield* Effect.orElseSucceed(
      Effect.tryPromise(() => fs.promises.realpath(abs)),
      () => abs
    )
    const include: ReadonlyArray<Rule> = options.include.flatMap((p) => {
      const rule = parseRule(p)
      return rule === undefined ? [] : [rule]
    })
    const skipped: Array<SkippedPath> = []

    /** A symlink as it is sent (a relative target inside the tree), or what to do instead. */
    const linkEntry = (rel: string, linkAbs: string): LocalEntry | undefined | WalkError => {
      let target: string
      try {
        target = fs.readlinkSync(linkAbs)
      } catch (error) {
        return codeOf(error) === "ENOENT" ? undefined : unreadable(linkAbs, error)
      }
      const resolved = path.resolve(path.dirname(linkAbs), target)
      const base = isInside(abs, resolved) ? abs : isInside(realRoot, resolved) ? realRoot : undefined
      if (base !== undefined) {
        // an absolute target inside the tree becomes relative, so it works where the copy is
        const sent = path.isAbsolute(target)
          ? path.relative(path.dirname(path.join(base, rel)), resolved) || "."
          : target
        return { kind: "link", path: rel, target: sent.split(path.sep).join("/") }
      }
      if (options.symlinksOutside === "skip") {
        skipped.push({ path: rel, reason: "symlink-outside" })
        return undefined
      }
      return new SyncSymlinkOutside({
        path: linkAbs,
        target,
        root: abs,
        fix: `replace it with a copy of what it points to, add ${rel} to .gitignore, or skip such links (symlinksOutside: "skip")`
      })
    }

    const fileEntry = (rel: string, fileAbs: string): LocalEntry | undefined | WalkError => {
      try {
        const stat = fs.lstatSync(fileAbs)
        return {
          kind: "file",
          path: rel,
          abs: fileAbs,
          size: stat.size,
          mtimeMs: stat.mtimeMs,
          mode: stat.mode & 0o777
        }
      } catch (error) {
        // removed while we walk: as if it never was
        return codeOf(error) === "ENOENT" ? undefined : unreadable(fileAbs, error)
      }
    }

    interface Subdir {
      readonly rel: string
      readonly forced: boolean
      readonly onlyIncluded: boolean
    }

    /**
     * One directory, synchronously (readdir and an lstat per file: a directory at a time keeps
     * the event loop free between directories and is several times faster than one promise per
     * file): its entries, and the subdirectories to visit. `forced`: an include pattern
     * matched it or a parent, so everything under it is sent. `onlyIncluded`: it is ignored and
     * entered only because an include pattern may match below it, so only what an include
     * pattern matches is sent.
     */
    const listDirectory = (
      rel: string,
      stack: ReadonlyArray<RuleSet>,
      forced: boolean,
      onlyIncluded: boolean
    ):
      | {
          readonly entries: Array<LocalEntry>
          readonly subdirs: Array<Subdir>
          readonly rules: ReadonlyArray<RuleSet>
        }
      | WalkError => {
      const dirAbs = rel === "" ? abs : path.join(abs, rel)
      let dirents: Array<fs.Dirent>
      try {
        dirents = fs.readdirSync(dirAbs, { withFileTypes: true })
      } catch (error) {
        if (codeOf(error) === "ENOENT" && rel !== "") return { entries: [], subdirs: [], rules: stack }
        return unreadable(dirAbs, error, true)
      }
      let rules = stack
      if (!forced && !onlyIncluded && dirents.some((d) => d.name === ".gitignore" && !d.isDirectory())) {
        const file = path.join(dirAbs, ".gitignore")
        try {
          rules = [...stack, { base: rel, rules: parseRules(fs.readFileSync(file, "utf8")) }]
        } catch (error) {
          return unreadable(file, error)
        }
      }
      const entries: Array<LocalEntry> = []
      const subdirs: Array<Subdir> = []
      for (const dirent of dirents) {
        const name = dirent.name
        const childRel = join(rel, name)
        if (name === ".git") continue
        if (name.includes("\n")) {
          skipped.push({ path: childRel, reason: "unsupported-name" })
          continue
        }
        if (rel === "" && RESERVED.test(name)) {
          skipped.push({ path: childRel, reason: "reserved-name" })
          continue
        }
        const isDir = dirent.isDirectory()
        const childForced = forced || anyMatches(include, childRel, isDir)
        if (!childForced) {
          const enterForIncludes = isDir && couldMatchBelow(include, childRel)
          if (onlyIncluded) {
            if (enterForIncludes) subdirs.push({ rel: childRel, forced: false, onlyIncluded: true })
            continue
          }
          if (anyMatches(secretRules, childRel, isDir)) {
            skipped.push({ path: childRel, reason: "secret" })
            continue
          }
          if (ignoredBy(rules, childRel, isDir) === true) {
            if (enterForIncludes) subdirs.push({ rel: childRel, forced: false, onlyIncluded: true })
            continue
          }
        }
        if (isDir) {
          subdirs.push({ rel: childRel, forced: childForced, onlyIncluded: false })
          continue
        }
        const childAbs = path.join(dirAbs, name)
        let entry: LocalEntry | undefined | WalkError
        if (dirent.isSymbolicLink()) entry = linkEntry(childRel, childAbs)
        else if (dirent.isFile()) entry = fileEntry(childRel, childAbs)
        else {
          skipped.push({ path: childRel, reason: "special-file" })
          continue
        }
        if (entry === undefined) continue
        if ("_tag" in entry) return entry
        entries.push(entry)
      }
      return { entries, subdirs, rules }
    }

    const visit = (
      rel: string,
      stack: ReadonlyArray<RuleSet>,
      forced: boolean,
      onlyIncluded: boolean
    ): Effect.Effect<ReadonlyArray<LocalEntry>, WalkError> =>
      Effect.suspend(() => {
        const listed = listDirectory(rel, stack, forced, onlyIncluded)
        if ("_tag" in listed) return Effect.fail(listed)
        return Effect.map(
          Effect.forEach(listed.subdirs, (sub) => visit(sub.rel, listed.rules, sub.forced, sub.onlyIncluded)),
          (below) => {
            const all = [...listed.entries, ...below.flat()]
            return rel === "" || all.length === 0 ? all : [{ kind: "dir", path: rel } as const, ...all]
          }
        )
      }).pipe(Effect.zipLeft(Effect.yieldNow()))

    const entries = [...(yield* visit("", [], false, false))].sort((a, b) =>
      a.path < b.path ? -1 : a.path > b.path ? 1 : 0
    )
    let files = 0
    let bytes = 0
    for (const entry of entries) {
      if (entry.kind !== "file") continue
      files++
      bytes += entry.size
    }
    skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return { root: abs, entries, files, bytes, skipped }
  })
