/**
 * The in-memory file system of a fake host: absolute paths, `~/` = home, directories implied
 * by the files under them. Synchronous on purpose: callers read the Clock and pass `nowMs`, so
 * the store itself stays a plain data structure.
 *
 * @internal
 */

interface FileEntry {
  data: Uint8Array
  mtimeMs: number
  mode: number
}

interface DirEntry {
  mtimeMs: number
  mode: number
}

/** A file computed on each read (`/proc/<pid>/stat`): `undefined` when it does not exist. */
export type VirtualFiles = (abs: string) => { readonly data: Uint8Array } | { readonly dir: true } | undefined

/** Modes when the creator gives none: what a program with umask 022 gets. */
export const DEFAULT_FILE_MODE = 0o644
export const DEFAULT_DIR_MODE = 0o755

export type FsResult<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly reason: string }

const ok = <A>(value: A): FsResult<A> => ({ ok: true, value })
const fail = <A>(reason: string): FsResult<A> => ({ ok: false, reason })

const encoder = new TextEncoder()

export const toBytes = (data: string | Uint8Array): Uint8Array =>
  typeof data === "string" ? encoder.encode(data) : data

/** One array holding `chunks` in order. */
export const concatBytes = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.length
  }
  return out
}

/** Lossy UTF-8 decoding: invalid sequences become U+FFFD, never an error. */
export const decodeLossy = (bytes: Uint8Array): string =>
  new TextDecoder("utf-8", { fatal: false }).decode(bytes)

/** Normalize `path` to an absolute path without `.`/`..`/double slashes; relative = from home. */
export const normalizePath = (path: string, home: string): string => {
  let full = path
  if (path === "~") full = home
  else if (path.startsWith("~/")) full = `${home}/${path.slice(2)}`
  else if (!path.startsWith("/")) full = `${home}/${path}`
  const parts: Array<string> = []
  for (const part of full.split("/")) {
    if (part === "" || part === ".") continue
    if (part === "..") parts.pop()
    else parts.push(part)
  }
  return `/${parts.join("/")}`
}

const parentsOf = (path: string): Array<string> => {
  const out: Array<string> = []
  let current = path
  while (current !== "/") {
    const cut = current.lastIndexOf("/")
    current = cut <= 0 ? "/" : current.slice(0, cut)
    out.push(current)
  }
  return out
}

export class FakeFileSystem {
  private readonly files = new Map<string, FileEntry>()
  private readonly dirs = new Map<string, DirEntry>()
  private virtual: VirtualFiles = () => undefined

  constructor(readonly home: string) {
    this.dirs.set("/", { mtimeMs: 0, mode: DEFAULT_DIR_MODE })
    this.mkdir(home, 0)
  }

  /** Serve computed files (under `/proc`) from `files`. */
  setVirtual(files: VirtualFiles): void {
    this.virtual = files
  }

  private virtualAt(abs: string) {
    return abs === "/proc" || abs.startsWith("/proc/") ? this.virtual(abs) : undefined
  }

  resolve(path: string): string {
    return normalizePath(path, this.home)
  }

  stat(path: string): { size: number; mtimeMs: number; isDirectory: boolean; mode: number } | undefined {
    const abs = this.resolve(path)
    const computed = this.virtualAt(abs)
    if (computed !== undefined) {
      // like procfs: files report size 0 and are read to EOF
      return "dir" in computed
        ? { size: 0, mtimeMs: 0, isDirectory: true, mode: 0o555 }
        : { size: 0, mtimeMs: 0, isDirectory: false, mode: 0o444 }
    }
    const file = this.files.get(abs)
    if (file !== undefined)
      return { size: file.data.length, mtimeMs: file.mtimeMs, isDirectory: false, mode: file.mode }
    const dir = this.dirs.get(abs)
    if (dir !== undefined) return { size: 4096, mtimeMs: dir.mtimeMs, isDirectory: true, mode: dir.mode }
    return undefined
  }

  read(path: string, offset = 0, length?: number): FsResult<Uint8Array> {
    const abs = this.resolve(path)
    const computed = this.virtualAt(abs)
    const file = computed !== undefined && "data" in computed ? { data: computed.data } : this.files.get(abs)
    if (file === undefined)
      return fail(this.dirs.has(abs) || computed !== undefined ? "Is a directory" : "No such file")
    const end = length === undefined ? file.data.length : Math.min(file.data.length, offset + length)
    return ok(file.data.slice(Math.min(offset, file.data.length), end))
  }

  private ensureParents(abs: string, nowMs: number, dirMode = DEFAULT_DIR_MODE): FsResult<void> {
    for (const parent of parentsOf(abs)) {
      if (this.files.has(parent)) return fail(`Not a directory: ${parent}`)
    }
    for (const parent of parentsOf(abs))
      if (!this.dirs.has(parent)) this.dirs.set(parent, { mtimeMs: nowMs, mode: dirMode })
    return ok(undefined)
  }

  /**
   * Create or replace a file (parents created with `dirMode`). A new file gets `mode`; an
   * existing one keeps its mode unless `mode` is given.
   */
  write(
    path: string,
    data: string | Uint8Array,
    nowMs: number,
    mode?: number,
    dirMode = DEFAULT_DIR_MODE
  ): FsResult<void> {
    const abs = this.resolve(path)
    if (this.dirs.has(abs) || this.virtualAt(abs) !== undefined) return fail("Is a directory")
    const parents = this.ensureParents(abs, nowMs, dirMode)
    if (!parents.ok) return parents
    const existing = this.files.get(abs)
    this.files.set(abs, {
      data: toBytes(data).slice(),
      mtimeMs: nowMs,
      mode: mode ?? existing?.mode ?? DEFAULT_FILE_MODE
    })
    return ok(undefined)
  }

  append(path: string, data: string | Uint8Array, nowMs: number, mode?: number): FsResult<void> {
    const abs = this.resolve(path)
    const file = this.files.get(abs)
    if (file === undefined) return this.write(abs, data, nowMs, mode)
    file.data = concatBytes([file.data, toBytes(data)])
    file.mtimeMs = nowMs
    return ok(undefined)
  }

  /** `mkdir -p`: missing parents and the directory get `mode`; existing ones keep theirs. */
  mkdir(path: string, nowMs: number, mode = DEFAULT_DIR_MODE): FsResult<void> {
    const abs = this.resolve(path)
    if (this.files.has(abs)) return fail("File exists")
    const parents = this.ensureParents(abs, nowMs, mode)
    if (!parents.ok) return parents
    if (!this.dirs.has(abs)) this.dirs.set(abs, { mtimeMs: nowMs, mode })
    return ok(undefined)
  }

  /** Rename a file (replacing the target), like `mv -f` of one file. */
  rename(from: string, to: string, nowMs: number): FsResult<void> {
    const src = this.resolve(from)
    const file = this.files.get(src)
    if (file === undefined) return fail("No such file")
    const dest = this.resolve(to)
    if (this.dirs.has(dest)) return fail("Is a directory")
    const parents = this.ensureParents(dest, nowMs)
    if (!parents.ok) return parents
    this.files.delete(src)
    this.files.set(dest, file)
    return ok(undefined)
  }

  /** Remove a file, or a directory with everything under it. */
  remove(path: string): boolean {
    const abs = this.resolve(path)
    if (this.files.delete(abs)) return true
    if (!this.dirs.has(abs) || abs === "/") return false
    const prefix = `${abs}/`
    for (const key of [...this.files.keys()]) if (key.startsWith(prefix)) this.files.delete(key)
    for (const key of [...this.dirs.keys()]) if (key === abs || key.startsWith(prefix)) this.dirs.delete(key)
    return true
  }

  /** The names directly under a directory, sorted; undefined when it is not one. */
  readDirectory(path: string): ReadonlyArray<string> | undefined {
    const abs = this.resolve(path)
    if (!this.dirs.has(abs)) return undefined
    const prefix = abs === "/" ? "/" : `${abs}/`
    const names = new Set<string>()
    for (const key of [...this.files.keys(), ...this.dirs.keys()]) {
      if (key.length > prefix.length && key.startsWith(prefix) && !key.includes("/", prefix.length))
        names.add(key.slice(prefix.length))
    }
    return [...names].sort()
  }

  /** Every file path, sorted. */
  listFiles(): ReadonlyArray<string> {
    return [...this.files.keys()].sort()
  }

  /** Every file with its bytes (a copy), mtime and mode, sorted by path. */
  entries(): ReadonlyArray<{ path: string; data: Uint8Array; mtimeMs: number; mode: number }> {
    return this.listFiles().map((path) => {
      const file = this.files.get(path)!
      return { path, data: file.data.slice(), mtimeMs: file.mtimeMs, mode: file.mode }
    })
  }
}
