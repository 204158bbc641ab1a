/**
 * `Sync.push`: one command to learn what the host has (`CHECK`), then, when something
 * changed, the target created if missing (sftp `mkdir`, 0700) and one `APPLY` command per
 * archive batch (the removals list and the tar on its stdin).
 *
 * @internal
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { Clock, Duration, Effect } from "effect"
import type { Connection, ExecOptions, ExecResult } from "../../Connection.js"
import type { ConnectError } from "../../Errors.js"
import * as RemoteCommand from "../../RemoteCommand.js"
import * as RemotePath from "../../RemotePath.js"
import type { PushOptions, SyncSummary } from "../../Sync.js"
import { type SyncError, type SyncLocalUnreadable, SyncRemoteFailed, SyncTooLarge } from "../../SyncErrors.js"
import { decode, digestOf, encode, headerLine, type ManifestEntry } from "./manifest.js"
import { ANSWER, APPLY, applyStep, CHECK, NEXT } from "./scripts.js"
import { END_OF_ARCHIVE, MAX_MEMBER_BYTES, memberBlocks, type TarMember } from "./tar.js"
import { type LocalEntry, type LocalTree, unreadable, walk } from "./walk.js"

export const DEFAULT_MAX_BYTES = 2 * 2 ** 30
export const DEFAULT_BATCH_BYTES = 64 * 2 ** 20

const CHECK_TIMEOUT = Duration.seconds(60)
const MKDIR_TIMEOUT = Duration.seconds(30)
/** An APPLY batch: a minute, plus two seconds per MiB on the wire (a 4 Mbit/s link). */
const applyTimeout = (bytes: number) => Duration.seconds(60 + Math.ceil((2 * bytes) / 2 ** 20))

/** What the host told the check: the first line of CHECK's output, and the manifest after it. */
type Answer =
  | { readonly _tag: "same" }
  | { readonly _tag: "manifest" | "dirty"; readonly text: string }
  | { readonly _tag: "none" | "absent" }

/**
 * CHECK's answer: its marker line (found anywhere: a login shell's rc file may print before
 * it), then for `manifest` and `dirty` the manifest.
 */
const answerOf = (stdout: string): Answer | undefined => {
  const line = stdout.startsWith(ANSWER) ? 0 : stdout.indexOf(`\n${ANSWER}`)
  if (line < 0) return undefined
  const at = line === 0 && stdout.startsWith(ANSWER) ? 0 : line + 1
  const end = stdout.indexOf("\n", at)
  const tag = stdout.slice(at + ANSWER.length, end < 0 ? stdout.length : end)
  if (tag === "same" || tag === "none" || tag === "absent") return { _tag: tag }
  if (tag === "manifest" || tag === "dirty") return { _tag: tag, text: end < 0 ? "" : stdout.slice(end + 1) }
  return undefined
}

/** The permission bits a file gets on the host: 0700 when any execute bit is set locally, else 0600. */
export const remoteMode = (localMode: number): number => ((localMode & 0o111) !== 0 ? 0o700 : 0o600)

type FileEntry = Extract<LocalEntry, { kind: "file" }>

type Planned =
  | { readonly kind: "file"; readonly entry: FileEntry }
  | { readonly kind: "dir"; readonly path: string }
  | { readonly kind: "link"; readonly path: string; readonly target: string }

interface Plan {
  /** Removed before extraction: deleted locally, or their kind changed (or a link's target). */
  readonly removes: ReadonlyArray<string>
  readonly members: ReadonlyArray<Planned>
  /** Files not sent, with their (possibly new) stat and the content hash the host has. */
  readonly kept: ReadonlyMap<string, ManifestEntry>
  readonly deleted: number
}

/** Files up to this size are read in one synchronous call (a few hundred µs at most). */
const SYNC_READ_BYTES = 4 * 2 ** 20

/**
 * A file's bytes. Small files are read synchronously: one promise per file costs several
 * times the read itself (10 000 small files: ~1 s through the thread pool, ~0.1 s in line),
 * and the caller yields between files.
 */
const readFile = (abs: string, size: number): Effect.Effect<Uint8Array, SyncLocalUnreadable> =>
  size <= SYNC_READ_BYTES
    ? Effect.try({ try: () => fs.readFileSync(abs), catch: (error) => unreadable(abs, error) })
    : Effect.tryPromise({ try: () => fs.promises.readFile(abs), catch: (error) => unreadable(abs, error) })

const sha256File = (abs: string, size: number): Effect.Effect<string, SyncLocalUnreadable> =>
  size <= SYNC_READ_BYTES
    ? Effect.map(readFile(abs, size), (data) => sha256(data))
    : Effect.async<string, SyncLocalUnreadable>((resume) => {
        const hash = createHash("sha256")
        const stream = fs.createReadStream(abs)
        stream.on("data", (chunk) => hash.update(chunk))
        stream.on("error", (error) => resume(Effect.fail(unreadable(abs, error))))
        stream.on("end", () => resume(Effect.succeed(hash.digest("hex"))))
        return Effect.sync(() => stream.destroy())
      })

const sha256 = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex")

/** What to send and remove, given the walk and what the host has (`trusted`: its hashes can be used). */
const plan = (
  tree: LocalTree,
  previous: ReadonlyArray<ManifestEntry>,
  trusted: boolean
): Effect.Effect<Plan, SyncLocalUnreadable> =>
  Effect.gen(function* () {
    const before = new Map(previous.map((e) => [e.path, e]))
    const local = new Map(tree.entries.map((e) => [e.path, e]))
    const removes: Array<string> = []
    let deleted = 0
    for (const old of previous) {
      const now = local.get(old.path)
      if (now === undefined) {
        if (old.kind !== "dir") deleted++
        removes.push(old.path)
      } else if (
        now.kind !== old.kind ||
        (now.kind === "link" && old.kind === "link" && now.target !== old.target)
      )
        removes.push(old.path)
    }
    // a path under a removed one goes with it
    const removed = new Set(removes)
    const collapsed = removes.filter((p) => {
      for (let cut = p.lastIndexOf("/"); cut > 0; cut = p.lastIndexOf("/", cut - 1))
        if (removed.has(p.slice(0, cut))) return false
      return true
    })

    const kept = new Map<string, ManifestEntry>()
    const keep = (entry: FileEntry, old: Extract<ManifestEntry, { kind: "file" }>, sha: string) =>
      kept.set(entry.path, { ...old, mtimeMs: entry.mtimeMs, mode: entry.mode, sha256: sha })
    // decided in line; only files whose size matches but mtime does not are read (hashed)
    const decided: Array<Planned | undefined> = []
    const toHash: Array<{
      readonly at: number
      readonly entry: FileEntry
      readonly old: Extract<ManifestEntry, { kind: "file" }>
    }> = []
    for (const entry of tree.entries) {
      const old = trusted ? before.get(entry.path) : undefined
      if (entry.kind === "dir") decided.push(old?.kind === "dir" ? undefined : entry)
      else if (entry.kind === "link")
        decided.push(old?.kind === "link" && old.target === entry.target ? undefined : entry)
      else if (
        old?.kind !== "file" ||
        old.size !== entry.size ||
        remoteMode(old.mode) !== remoteMode(entry.mode)
      )
        decided.push({ kind: "file", entry })
      else if (old.mtimeMs === entry.mtimeMs) {
        keep(entry, old, old.sha256)
        decided.push(undefined)
      } else {
        toHash.push({ at: decided.length, entry, old })
        decided.push(undefined)
      }
    }
    yield* Effect.forEach(
      toHash,
      ({ at, entry, old }) =>
        Effect.map(sha256File(entry.abs, entry.size), (sha) => {
          if (sha === old.sha256) keep(entry, old, sha)
          else decided[at] = { kind: "file", entry }
        }),
      { concurrency: 4, discard: true }
    )
    const members = decided.filter((m): m is Planned => m !== undefined)
    return { removes: collapsed, members, kept, deleted }
  })

/** Members in order, cut into batches of about `limit` bytes (a bigger file is a batch of its own). */
const batches = (members: ReadonlyArray<Planned>, limit: number): ReadonlyArray<ReadonlyArray<Planned>> => {
  const out: Array<Array<Planned>> = [[]]
  let size = 0
  for (const member of members) {
    const estimate = 1536 + (member.kind === "file" ? Math.ceil(member.entry.size / 512) * 512 : 0)
    if (size + estimate > limit && out[out.length - 1]!.length > 0) {
      out.push([])
      size = 0
    }
    out[out.length - 1]!.push(member)
    size += estimate
  }
  return out
}

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => Buffer.concat(chunks)

/** The largest top-level entries of the tree (directories summed), for SyncTooLarge. */
const largest = (tree: LocalTree) => {
  const sums = new Map<string, number>()
  for (const entry of tree.entries) {
    if (entry.kind !== "file") continue
    const top = entry.path.includes("/") ? `${entry.path.slice(0, entry.path.indexOf("/"))}/` : entry.path
    sums.set(top, (sums.get(top) ?? 0) + entry.size)
  }
  return [...sums]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([path, bytes]) => ({ path, bytes }))
}

const writeFix = (host: string, remote: string, result: ExecResult): string => {
  if (/No space left/i.test(result.stderr))
    return `free space on ${host} (df -h ${remote}), or send less: add data, checkpoints and outputs to .gitignore`
  if (/Permission denied|Read-only file system/i.test(result.stderr))
    return `make ${remote} writable by the login user on ${host}, or sync to another directory`
  if (result.exitCode === 127 || /not found/.test(result.stderr))
    return `install tar on ${host} (mlops sends a ustar archive; GNU tar or bsdtar reads it)`
  return "run the sync again: it resends whatever this one may have left incomplete"
}

const tail = (text: string) => text.trim().split("\n").slice(-5).join("\n")

export const push = (conn: Connection, options: PushOptions): Effect.Effect<SyncSummary, SyncError> =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const remote = options.remote
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
    let roundTrips = 0
    const failed = (step: SyncRemoteFailed["step"], reason: string, fix: string) =>
      new SyncRemoteFailed({ host, remote, step, reason, fix })
    const exec = (
      step: "check" | "write",
      command: RemoteCommand.RemoteCommand,
      execOptions: ExecOptions
    ): Effect.Effect<ExecResult, SyncRemoteFailed | ConnectError> => {
      return Effect.suspend(() => {
        roundTrips++
        return conn.exec(command, execOptions)
      }).pipe(
        Effect.catchTags({
          ChannelOpenFailed: (error) =>
            Effect.fail(
              failed(step, error.message, error.fix ?? "run the sync again once the host has a free session")
            ),
          CommandTimeout: (error) =>
            Effect.fail(
              failed(
                step,
                error.message,
                "run the sync again (it resends what may be incomplete); on a slow link send less: add data and checkpoints to .gitignore"
              )
            )
        })
      )
    }

    const tree = yield* walk(options.local, {
      include: options.include ?? [],
      symlinksOutside: options.symlinksOutside ?? "fail"
    })
    const tooBig = tree.entries.find((e) => e.kind === "file" && e.size > MAX_MEMBER_BYTES)
    if (tree.bytes > maxBytes || tooBig !== undefined) {
      return yield* new SyncTooLarge({
        path: tree.root,
        bytes: tree.bytes,
        maxBytes: Math.min(maxBytes, MAX_MEMBER_BYTES),
        largest: largest(tree),
        fix: "add data, checkpoints, outputs and virtual environments to .gitignore (or copy them to the host once, outside the synced directory)"
      })
    }
    const header = headerLine(digestOf(tree.entries))
    const target = RemotePath.make(remote)
    const summary = (
      fields: Pick<SyncSummary, "sent" | "deleted" | "bytes" | "wireBytes" | "unchanged">
    ) => ({
      local: tree.root,
      host,
      remote,
      files: tree.files,
      totalBytes: tree.bytes,
      skipped: tree.skipped,
      roundTrips,
      ...fields
    })

    // 1. what the host has
    const checked = yield* exec("check", RemoteCommand.make(["sh", "-c", CHECK, "sh", target, header]), {
      timeout: CHECK_TIMEOUT
    })
    if (checked.exitCode !== 0) {
      return yield* failed(
        "check",
        tail(checked.stderr) || `exit ${checked.exitCode ?? checked.signal}`,
        checked.exitCode === 3
          ? `sync to a directory (${remote} is a file on ${host}): choose another remote path or remove that file`
          : `check that ${remote} is readable by the login user on ${host}`
      )
    }
    const answer = answerOf(checked.stdout)
    if (answer === undefined) {
      return yield* failed(
        "check",
        `unexpected answer: ${JSON.stringify(checked.stdout.slice(0, 200))}`,
        `check that a plain \`sh -c\` on ${host} runs (an rc file printing or exiting breaks it)`
      )
    }
    if (answer._tag === "same")
      return summary({ sent: 0, deleted: 0, bytes: 0, wireBytes: 0, unchanged: true })

    // 2. what to send and remove
    const previous = answer._tag === "manifest" || answer._tag === "dirty" ? decode(answer.text) : undefined
    const trusted = answer._tag === "manifest" && previous?.complete === true
    const planned = yield* plan(tree, previous?.entries ?? [], trusted)

    if (answer._tag === "absent") {
      roundTrips++
      yield* conn.files.mkdir(remote).pipe(
        Effect.timeoutFail({
          duration: MKDIR_TIMEOUT,
          onTimeout: () =>
            failed(
              "mkdir",
              `creating the directory took over ${Duration.format(MKDIR_TIMEOUT)}`,
              "run the sync again"
            )
        }),
        Effect.catchTag("RemoteFileError", (error) =>
          Effect.fail(
            failed(
              "mkdir",
              error.reason,
              error.fix ??
                `check that the login user on ${host} may create ${remote} (or choose another path)`
            )
          )
        )
      )
    }

    // 3. the batches: removals and an archive each; the new manifest last
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const hashes = new Map<string, { readonly sha256: string; readonly size: number }>()
    const groups = batches(planned.members, options.batchBytes ?? DEFAULT_BATCH_BYTES)
    let bytes = 0
    let wireBytes = 0
    let sent = 0
    for (const [index, group] of groups.entries()) {
      const first = index === 0
      const last = index === groups.length - 1
      const tarMembers = yield* Effect.forEach(
        group,
        (member): Effect.Effect<TarMember, SyncLocalUnreadable> => {
          if (member.kind === "dir")
            return Effect.succeed({ kind: "dir", path: member.path, mode: 0o700, mtimeSec: now })
          if (member.kind === "link")
            return Effect.succeed({ kind: "link", path: member.path, target: member.target, mtimeSec: now })
          const entry = member.entry
          return Effect.map(readFile(entry.abs, entry.size), (data) => {
            hashes.set(entry.path, { sha256: sha256(data), size: data.length })
            return {
              kind: "file",
              path: entry.path,
              mode: remoteMode(entry.mode),
              mtimeSec: Math.floor(entry.mtimeMs / 1000),
              data
            }
          })
        },
        { concurrency: 8 }
      )
      const chunks: Array<Uint8Array> = []
      if (first) chunks.push(new TextEncoder().encode(planned.removes.map((p) => `${p}\n`).join("") + "\n"))
      for (const member of tarMembers) {
        chunks.push(...memberBlocks(member))
        if (member.kind === "file") bytes += member.data.length
        if (member.kind !== "dir") sent++
      }
      if (last) {
        const next = tree.entries.map((entry): ManifestEntry => {
          if (entry.kind !== "file")
            return entry.kind === "dir" ? { kind: "dir", path: entry.path } : { ...entry }
          const kept = planned.kept.get(entry.path)
          if (kept !== undefined) return kept
          const hashed = hashes.get(entry.path)!
          return {
            kind: "file",
            path: entry.path,
            size: hashed.size,
            mtimeMs: entry.mtimeMs,
            mode: entry.mode,
            sha256: hashed.sha256
          }
        })
        chunks.push(
          ...memberBlocks({
            kind: "file",
            path: NEXT,
            mode: 0o600,
            mtimeSec: now,
            data: new TextEncoder().encode(encode(header, next))
          })
        )
      }
      chunks.push(END_OF_ARCHIVE)
      const stdin = concat(chunks)
      wireBytes += stdin.length
      const result = yield* exec(
        "write",
        RemoteCommand.make(["sh", "-c", APPLY, "sh", target, first ? "1" : "0", last ? "1" : "0"]),
        { stdin, timeout: applyTimeout(stdin.length) }
      )
      if (result.exitCode !== 0) {
        const stderr = tail(result.stderr)
        return yield* failed(
          "write",
          `${applyStep(result.exitCode)} failed${stderr === "" ? ` (exit ${result.exitCode ?? result.signal})` : `: ${stderr}`}`,
          writeFix(host, remote, result)
        )
      }
    }
    return summary({ sent, deleted: planned.deleted, bytes, wireBytes, unchanged: false })
  })
