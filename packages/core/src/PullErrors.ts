/**
 * The tagged errors of `Pull.pull`. Each names the host and remote path, or the local path, at
 * fault, and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { CommandError, ConnectError, RemoteFileError } from "./Errors.js"

/** Nothing is at the remote path. @category errors */
export class PullSourceMissing extends Schema.TaggedError<PullSourceMissing>()("PullSourceMissing", {
  host: Schema.String,
  remote: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `nothing at ${this.host}:${this.remote}; ${this.fix}`
  }
}

/** Listing the remote tree failed (no `find`, a directory that cannot be read). @category errors */
export class PullRemoteFailed extends Schema.TaggedError<PullRemoteFailed>()("PullRemoteFailed", {
  host: Schema.String,
  remote: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `cannot list ${this.host}:${this.remote}: ${this.reason}; ${this.fix}`
  }
}

/** A local file or directory cannot be written (permissions, a file where a directory goes, a full disk). @category errors */
export class PullLocalFailed extends Schema.TaggedError<PullLocalFailed>()("PullLocalFailed", {
  path: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `cannot write ${this.path}: ${this.reason}; ${this.fix}`
  }
}

/** @category errors */
export type PullError =
  | PullSourceMissing
  | PullRemoteFailed
  | PullLocalFailed
  | RemoteFileError
  | CommandError
  | ConnectError
