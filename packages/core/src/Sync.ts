/**
 * Copy a local directory to a directory on a host, sending only what changed since the last
 * sync there (what backs `mlops run --sync DIR`: the job runs the code on the user's machine,
 * copied to `<runDir>/code`).
 *
 * **What is sent.** Regular files, symlinks and the directories holding them (no empty
 * directories, as in git), walked with `lstat` only. Left out:
 * - `.git` (at any depth), always;
 * - what `.gitignore` files say (the root's and nested ones; blank and `#` lines, `!`
 *   negation, a trailing `/` for directories, a leading or inner `/` anchoring, `*`, `?`,
 *   `[...]`, `**`). As in git, nothing under an ignored directory comes back by negation;
 * - secrets, even when no `.gitignore` names them: `.env`, `.env.*`, `*.pem`, `*.key`,
 *   `id_rsa*`, `id_ed25519*`, `.netrc`, `credentials*.json` (`SECRET_PATTERNS`), reported in
 *   `skipped`;
 * - sockets, FIFOs and devices, names holding a newline, and `.mlops-sync.*` in the root
 *   (reserved for the manifest), reported in `skipped`.
 *
 * `include` patterns (gitignore syntax, relative to DIR) send what they match, and everything
 * under a directory they match, whatever `.gitignore` and the secret rules say (`.env`,
 * `config/*.key`, `data/small/`). The walk enters an ignored directory only for an anchored
 * pattern that may match below it (`data/small/**` enters `data/`); `*.pem` does not make it
 * enter ignored directories.
 *
 * **Symlinks** are sent as symlinks when they point inside DIR (an absolute target inside DIR
 * is rewritten relative, so it works where the copy is). One pointing outside DIR is refused
 * with `SyncSymlinkOutside` (naming the link, its target and the fixes), because the copy
 * would silently depend on what the host has at that path; `symlinksOutside: "skip"` leaves
 * such links out instead and lists them in `skipped`.
 *
 * **Modes.** Every file mlops creates on a host is 0600 and every directory 0700: a file is
 * sent as 0700 when any of its local execute bits is set (so `./train.sh` still runs), else
 * 0600; directories are 0700, the target and its missing parents are created 0700 (sftp
 * `mkdir`; existing ones are left as they are). The modes travel in the archive and tar
 * applies them (under any umask: they only clear bits), owner the login user
 * (`--no-same-owner`).
 *
 * **Round trips.** The host keeps a manifest in the target, `.mlops-sync.jsonl` (0600): a
 * header line holding the digest of the last sync's local listing (path, kind, size, mtime,
 * mode, link target of every entry), then one JSON line per entry with its content's SHA-256.
 * A push walks DIR, computes that digest and runs ONE command, which prints `same` when the
 * manifest's header is the expected one: an unchanged tree costs exactly one round trip and
 * reads no file. Otherwise the same command prints the manifest; files whose size, mtime and
 * mode match it are not read, those whose size matches but mtime differs are hashed (sent only
 * when the hash differs), the rest are sent. Then one command per archive batch (about 64 MiB;
 * usually one): on its stdin the list of paths to remove (deleted locally, or whose kind
 * changed) and a tar of the new and changed entries, ending with the new manifest. A first
 * sync to a missing directory adds the `mkdir`. `roundTrips` in the summary counts these.
 *
 * **Interruptions.** The first batch moves the manifest aside (`.mlops-sync.dirty`) before
 * touching anything; the new one replaces it only after every file is in place and every
 * removal done. A sync cut short anywhere leaves the dirty manifest: the next sync trusts
 * none of its hashes (it sends every file again) but still removes what it listed and the
 * tree no longer has.
 *
 * **Limits.** Only what a sync wrote is ever removed: files created on the host in the
 * target stay. Changes made on the host to synced files are not seen (the manifest, not the
 * host's files, says what is there). The host needs `sh`, `cat`, `mv`, `rm` and a `tar` that
 * reads ustar/pax from stdin with `-m --no-same-owner` (GNU tar, bsdtar); no `find`, `stat` or
 * `sha256sum` (hashes are computed locally and kept in the manifest).
 * The tree is capped (`maxBytes`, default 2 GiB): `SyncTooLarge` names the biggest top-level
 * entries and says to `.gitignore` data and checkpoints. Two pushes to one target at once are
 * not supported.
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import type { Connection } from "./Connection.js"
import { SECRET_PATTERNS as SECRETS } from "./internal/sync/ignore.js"
import * as internal from "./internal/sync/push.js"
import { MANIFEST } from "./internal/sync/scripts.js"
import { walk } from "./internal/sync/walk.js"
import type { SyncError, SyncLocalUnreadable, SyncSourceInvalid, SyncSymlinkOutside } from "./SyncErrors.js"

/** @category models */
export interface ScanOptions {
  /** Gitignore-style patterns (relative to `local`) sent even when ignored or secret. */
  readonly include?: ReadonlyArray<string>
  /** A symlink pointing outside the tree: `"fail"` (default, `SyncSymlinkOutside`) or `"skip"`. */
  readonly symlinksOutside?: "fail" | "skip"
}

/** @category models */
export interface PushOptions extends ScanOptions {
  /** The local directory. */
  readonly local: string
  /** The directory on the host (absolute, or `~/...`); created 0700 with its parents when missing. */
  readonly remote: string
  /** Cap on the tree's total file bytes; default 2 GiB. */
  readonly maxBytes?: number
  /** Approximate bytes per archive batch (one command each); default 64 MiB. */
  readonly batchBytes?: number
}

/** A path left out for a reason worth telling (the ones `.gitignore` names are not listed). @category models */
export interface SkippedPath {
  /** Relative to the local directory. */
  readonly path: string
  readonly reason: "secret" | "symlink-outside" | "special-file" | "unsupported-name" | "reserved-name"
}

/** @category models */
export interface SyncSummary {
  /** The local directory, absolute. */
  readonly local: string
  readonly host: string
  readonly remote: string
  /** Regular files in the synced tree. */
  readonly files: number
  /** Their total size. */
  readonly totalBytes: number
  /** Files and symlinks written on the host by this push. */
  readonly sent: number
  /** Files and symlinks removed on the host (deleted locally since the last sync). */
  readonly deleted: number
  /** Content bytes of the files sent. */
  readonly bytes: number
  /** Bytes written to the host's commands (archives, removal lists). */
  readonly wireBytes: number
  /** Remote requests: commands run plus the `mkdir` of a missing target. 1 when unchanged. */
  readonly roundTrips: number
  /** The host's manifest matched: nothing was read or sent. */
  readonly unchanged: boolean
  readonly skipped: ReadonlyArray<SkippedPath>
}

/** What a push of `local` would consider, without a host. @category models */
export interface ScanResult {
  readonly local: string
  readonly files: number
  readonly totalBytes: number
  /** Every path sent (files, symlinks, directories), sorted. */
  readonly paths: ReadonlyArray<string>
  readonly skipped: ReadonlyArray<SkippedPath>
}

/** The file holding the manifest in the target directory. @category constants */
export const MANIFEST_FILE: string = MANIFEST

/** The secret files left out unless `include` names them. @category constants */
export const SECRET_PATTERNS: ReadonlyArray<string> = SECRETS

/** @category constants */
export const DEFAULT_MAX_BYTES: number = internal.DEFAULT_MAX_BYTES

/**
 * Copy `local` to `remote` on the connection's host, sending only what changed since the last
 * push there, and removing there what was deleted locally.
 *
 * @category syncing
 */
export const push: (conn: Connection, options: PushOptions) => Effect.Effect<SyncSummary, SyncError> =
  Effect.fn("Sync.push")(function* (
    conn: Connection,
    options: PushOptions
  ): Effect.fn.Return<SyncSummary, SyncError> {
    yield* Effect.annotateCurrentSpan({ host: conn.host.alias, local: options.local, remote: options.remote })
    return yield* internal.push(conn, options)
  })

/**
 * The walk a push would do, locally: what would be considered for sending and what is left
 * out with a reason (a dry run for `--sync`).
 *
 * @category syncing
 */
export const scan: (
  local: string,
  options?: ScanOptions
) => Effect.Effect<ScanResult, SyncSourceInvalid | SyncLocalUnreadable | SyncSymlinkOutside> = Effect.fn(
  "Sync.scan"
)(function* (
  local: string,
  options: ScanOptions = {}
): Effect.fn.Return<ScanResult, SyncSourceInvalid | SyncLocalUnreadable | SyncSymlinkOutside> {
  const tree = yield* walk(local, {
    include: options.include ?? [],
    symlinksOutside: options.symlinksOutside ?? "fail"
  })
  return {
    local: tree.root,
    files: tree.files,
    totalBytes: tree.bytes,
    paths: tree.entries.map((e) => e.path),
    skipped: tree.skipped
  }
})
