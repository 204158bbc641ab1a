/**
 * The tagged errors of `Sync.push`. Each names the local path or the host and remote
 * directory at fault, and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { ConnectError } from "./Errors.js"

/** The local directory to sync does not exist or is not a directory. @category errors */
export class SyncSourceInvalid extends Schema.TaggedError<SyncSourceInvalid>()("SyncSourceInvalid", {
  path: Schema.String,
  problem: Schema.Literal("missing", "not-a-directory"),
  fix: Schema.String
}) {
  override get message() {
    const what = this.problem === "missing" ? "no such directory" : "not a directory"
    return `cannot sync ${this.path}: ${what}; ${this.fix}`
  }
}

/** A file or directory of the tree cannot be read (permissions, an I/O error). @category errors */
export class SyncLocalUnreadable extends Schema.TaggedError<SyncLocalUnreadable>()("SyncLocalUnreadable", {
  path: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `cannot read ${this.path}: ${this.reason}; ${this.fix}`
  }
}

/**
 * A symlink in the tree points outside it (an absolute path elsewhere, or `..` past the
 * root): on the host it would point at something that is not part of the copy.
 *
 * @category errors
 */
export class SyncSymlinkOutside extends Schema.TaggedError<SyncSymlinkOutside>()("SyncSymlinkOutside", {
  path: Schema.String,
  target: Schema.String,
  root: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `${this.path} is a symlink to ${this.target}, outside ${this.root}; ${this.fix}`
  }
}

/** The tree to send is larger than the cap. @category errors */
export class SyncTooLarge extends Schema.TaggedError<SyncTooLarge>()("SyncTooLarge", {
  path: Schema.String,
  bytes: Schema.Number,
  maxBytes: Schema.Number,
  /** The biggest top-level entries (directories summed), largest first. */
  largest: Schema.Array(Schema.Struct({ path: Schema.String, bytes: Schema.Number })),
  fix: Schema.String
}) {
  override get message() {
    const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`
    const top = this.largest.map((e) => `${e.path} ${mib(e.bytes)}`).join(", ")
    return `${this.path} holds ${mib(this.bytes)} to sync, over the ${mib(this.maxBytes)} cap (largest: ${top}); ${this.fix}`
  }
}

/** A step on the host failed: reading the manifest, creating the directory, or writing. @category errors */
export class SyncRemoteFailed extends Schema.TaggedError<SyncRemoteFailed>()("SyncRemoteFailed", {
  host: Schema.String,
  remote: Schema.String,
  step: Schema.Literal("check", "mkdir", "write"),
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `sync to ${this.host}:${this.remote} failed (${this.step}): ${this.reason}; ${this.fix}`
  }
}

/** @category errors */
export type SyncError =
  | SyncSourceInvalid
  | SyncLocalUnreadable
  | SyncSymlinkOutside
  | SyncTooLarge
  | SyncRemoteFailed
  | ConnectError
