/**
 * Copy a file or a directory tree from a host to this machine (a job's checkpoints, its
 * metrics): the way back of `Sync.push`.
 *
 * **Round trips.** The tree is listed in one command (`find PATH -printf`: type, size, mtime,
 * mode and path of every entry, NUL-separated, so any name survives); then each file is read
 * over the connection's file channel in chunks of `chunkBytes` (4 MiB), a few files at once,
 * each written to a temporary file beside its destination and renamed into place when
 * complete: memory stays bounded by the chunks in flight whatever the tree's size, and an
 * interrupted pull leaves no half-written file under its final name.
 *
 * **Only what changed.** A local file with the remote's size and modification time (to the
 * second) is up to date and not read again; a pulled file gets the remote's modification time.
 * Pulling a growing checkpoint directory again fetches only the new files.
 *
 * **What is kept.** Regular files and directories: files 0600 (0700 when executable on the host),
 * directories 0700, as everything mlops creates. Symlinks and special files are not followed or
 * copied; they are listed as skipped with their reason. Nothing local outside the destination
 * is written: remote names cannot climb out of it (`..` and absolute names are refused).
 *
 * @since 0.1.0
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { Effect } from "effect"
import type { Connection } from "./Connection.js"
import type { RemoteFileError } from "./Errors.js"
import type { PullError } from "./PullErrors.js"
import { PullLocalFailed, PullRemoteFailed, PullSourceMissing } from "./PullErrors.js"
import * as RemoteCommand from "./RemoteCommand.js"

/** @category models */
export interface PullOptions {
  /** The file or directory on the host (absolute, or `~/...`). */
  readonly remote: string
  /**
   * Where it goes: this local path is the copy of `remote` (a directory's contents go under it,
   * a file is written to it). Its parent directories are created.
   */
  readonly local: string
  /** Bytes per read; default 4 MiB. */
  readonly chunkBytes?: number
  /** Files read at once; default 4. */
  readonly concurrency?: number
}

/** A remote entry not copied, and why. @category models */
export interface SkippedEntry {
  /** Relative to `remote`. */
  readonly path: string
  /** `unreadable`: the host's find could not read it; `vanished`: gone between the listing and its read. */
  readonly reason: "symlink" | "special-file" | "unsafe-name" | "unreadable" | "vanished"
}

/** @category models */
export interface PullSummary {
  readonly host: string
  /** The remote path, resolved. */
  readonly remote: string
  /** The local path, absolute. */
  readonly local: string
  /** Regular files in the remote tree. */
  readonly files: number
  /** Files read this time (the others were up to date). */
  readonly fetched: number
  readonly upToDate: number
  /** Bytes read this time. */
  readonly bytes: number
  readonly skipped: ReadonlyArray<SkippedEntry>
}

/** One entry of the listing. */
interface Entry {
  readonly type: string
  readonly size: number
  readonly mtimeSeconds: number
  readonly mode: number
  /** Relative to the remote root; "" for the root itself. */
  readonly path: string
}

/** GNU find's `-printf`: type, size, mtime, mode (octal), path below the start; NUL after each. */
const LIST_FORMAT = "%y\\t%s\\t%T@\\t%m\\t%P\\0"

const parseListing = (out: string): ReadonlyArray<Entry> =>
  out
    .split("\0")
    .filter((record) => record !== "")
    .flatMap((record) => {
      const parts = record.split("\t")
      if (parts.length < 5) return []
      const [type, size, mtime, mode, ...rest] = parts
      return [
        {
          type: type ?? "",
          size: Number(size),
          mtimeSeconds: Math.floor(Number(mtime)),
          mode: Number.parseInt(mode ?? "600", 8),
          path: rest.join("\t")
        }
      ]
    })

/** A relative path that stays below its root on every side. */
const isSafe = (relative: string) =>
  relative !== "" &&
  !relative.startsWith("/") &&
  !relative.split("/").some((part) => part === ".." || part === "." || part === "")

const localFailure = (target: string, error: unknown) =>
  new PullLocalFailed({
    path: target,
    reason: error instanceof Error ? error.message : String(error),
    fix: "check that the destination is writable and has room (--to moves it)"
  })

/** Whether the local file at `target` is up to date with `entry` (size and mtime to the second). */
const upToDate = (target: string, entry: Entry) =>
  Effect.promise(() =>
    fs.stat(target).then(
      (stat) =>
        stat.isFile() && stat.size === entry.size && Math.floor(stat.mtimeMs / 1000) === entry.mtimeSeconds,
      () => false
    )
  )

/** Copy one file; the bytes read, or undefined when it vanished before it was read. */
const copyFile = (conn: Connection, remote: string, target: string, entry: Entry, chunkBytes: number) =>
  Effect.gen(function* () {
    const temporary = `${target}.mlops-pull-${process.pid}`
    const mode = entry.mode & 0o100 ? 0o700 : 0o600
    const handle = yield* Effect.tryPromise({
      try: () => fs.open(temporary, "w", mode),
      catch: (error) => localFailure(target, error)
    })
    const copied = yield* Effect.gen(function* () {
      let offset = 0
      while (offset < entry.size) {
        const bytes = yield* conn.files.read(remote, {
          offset,
          length: Math.min(chunkBytes, entry.size - offset)
        })
        // the file shrank while it was read: what there is (its time below makes the next pull read it again)
        if (bytes.length === 0) break
        yield* Effect.tryPromise({
          try: () => handle.write(bytes, 0, bytes.length, offset),
          catch: (error) => localFailure(target, error)
        })
        offset += bytes.length
      }
      return offset
    }).pipe(Effect.ensuring(Effect.promise(() => handle.close())))
    // written to meanwhile (a checkpoint still being saved): the copy keeps this machine's time, so
    // the quick check fails and the next pull reads it again
    const after = yield* conn.files.stat(remote)
    // gone meanwhile: nothing to keep
    if (after === undefined) return undefined
    const steady =
      after.size === entry.size &&
      Math.floor(after.mtimeMs / 1000) === entry.mtimeSeconds &&
      copied === entry.size
    yield* Effect.tryPromise({
      try: async () => {
        if (steady) await fs.utimes(temporary, entry.mtimeSeconds, entry.mtimeSeconds)
        await fs.rename(temporary, target)
      },
      catch: (error) => localFailure(target, error)
    })
    return copied as number | undefined
  }).pipe(
    // gone between the listing and its read (a rotated checkpoint): skipped, said
    Effect.catchIf(
      (error): error is RemoteFileError => error._tag === "RemoteFileError" && error.notFound,
      () => Effect.succeed(undefined)
    ),
    // an interrupted or failed copy leaves no temporary file behind
    Effect.onError(() => Effect.promise(() => fs.rm(`${target}.mlops-pull-${process.pid}`, { force: true }))),
    Effect.ensuring(Effect.promise(() => fs.rm(`${target}.mlops-pull-${process.pid}`, { force: true })))
  )

/**
 * Copy `remote` (a file or a directory tree) on the connection's host to `local`, reading only
 * what is not already there.
 *
 * @category syncing
 */
export const pull: (conn: Connection, options: PullOptions) => Effect.Effect<PullSummary, PullError> =
  Effect.fn("Pull.pull")(function* (
    conn: Connection,
    options: PullOptions
  ): Effect.fn.Return<PullSummary, PullError> {
    const host = conn.host.alias
    const remote = yield* conn.files.resolvePath(options.remote)
    const local = path.resolve(options.local)
    yield* Effect.annotateCurrentSpan({ host, remote, local })
    const listed = yield* conn.exec(RemoteCommand.make(["find", remote, "-printf", LIST_FORMAT]), {
      timeout: "5 minutes"
    })
    const entries = parseListing(listed.stdout)
    const root = entries.find((entry) => entry.path === "")
    if (root === undefined) {
      if (/No such file or directory/.test(listed.stderr))
        return yield* new PullSourceMissing({
          host,
          remote,
          fix: "check the path (a relative one is taken from the job's working directory)"
        })
      return yield* new PullRemoteFailed({
        host,
        remote,
        reason: listed.stderr.trim().split("\n").slice(-2).join(" ") || `find exited ${listed.exitCode}`,
        // 127: no find; BusyBox's and BSD's find have no -printf
        fix:
          listed.exitCode === 127 || /printf/.test(listed.stderr)
            ? `install GNU find (findutils) on ${host}`
            : `check that ${remote} on ${host} is readable by its user`
      })
    }
    // find lists what it can and names on stderr what it could not (a directory it may not read, an
    // entry removed while it walked): the rest is pulled, those are said
    const unreadable: Array<SkippedEntry> =
      listed.exitCode === 0
        ? []
        : listed.stderr
            .split("\n")
            .flatMap((line) => {
              const named = /^find: ['‘](.*)['’]: /.exec(line)?.[1]
              return named === undefined ? [] : [named]
            })
            .map((named) => ({
              path: named.startsWith(`${remote}/`) ? named.slice(remote.length + 1) : named,
              reason: "unreadable" as const
            }))
    const skipped: Array<SkippedEntry> = [...unreadable]
    const files: Array<{ readonly entry: Entry; readonly target: string; readonly source: string }> = []
    const directories: Array<string> = []
    if (root.type === "f") files.push({ entry: root, target: local, source: remote })
    else if (root.type === "d") {
      directories.push(local)
      for (const entry of entries) {
        if (entry.path === "") continue
        if (!isSafe(entry.path)) {
          skipped.push({ path: entry.path, reason: "unsafe-name" })
          continue
        }
        const target = path.join(local, ...entry.path.split("/"))
        if (entry.type === "d") directories.push(target)
        else if (entry.type === "f") files.push({ entry, target, source: `${remote}/${entry.path}` })
        else skipped.push({ path: entry.path, reason: entry.type === "l" ? "symlink" : "special-file" })
      }
    } else
      return yield* new PullRemoteFailed({
        host,
        remote,
        reason: root.type === "l" ? "it is a symlink" : "it is not a regular file or a directory",
        fix: "pull what it points to"
      })

    yield* Effect.tryPromise({
      try: async () => {
        await fs.mkdir(path.dirname(local), { recursive: true, mode: 0o700 })
        for (const directory of directories) await fs.mkdir(directory, { recursive: true, mode: 0o700 })
      },
      catch: (error) => localFailure(local, error)
    })
    let fetched = 0
    let bytes = 0
    const vanished: Array<SkippedEntry> = []
    yield* Effect.forEach(
      files,
      ({ entry, target, source }) =>
        Effect.gen(function* () {
          if (yield* upToDate(target, entry)) return
          const copied = yield* copyFile(conn, source, target, entry, options.chunkBytes ?? 4 * 2 ** 20)
          if (copied === undefined) {
            vanished.push({
              path: entry.path === "" ? path.basename(remote) : entry.path,
              reason: "vanished"
            })
            return
          }
          fetched++
          bytes += copied
        }),
      { concurrency: options.concurrency ?? 4, discard: true }
    )
    return {
      host,
      remote,
      local,
      files: files.length,
      fetched,
      upToDate: files.length - fetched - vanished.length,
      bytes,
      skipped: [...skipped, ...vanished]
    }
  })
