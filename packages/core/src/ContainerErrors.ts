/**
 * The tagged errors of the container client (`Containers`). Each names the host, the tool
 * (`docker`, `podman`) and the image or container at fault, and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { ContainerTool } from "./ContainerSettings.js"

/**
 * The tool cannot be used on the host: not installed (`missing`), this user may not talk to its
 * daemon (`access-denied`: the socket's permission), or no daemon answers (`daemon-down`).
 *
 * @category errors
 */
export class ContainerToolUnavailable extends Schema.TaggedError<ContainerToolUnavailable>()(
  "ContainerToolUnavailable",
  {
    host: Schema.String,
    tool: ContainerTool,
    problem: Schema.Literal("missing", "access-denied", "daemon-down"),
    /** The tool's own words (`permission denied while trying to connect to the Docker daemon socket at …`). */
    reason: Schema.String,
    fix: Schema.String
  }
) {
  override get message() {
    return `${this.tool} on ${this.host}: ${this.reason}; ${this.fix}`
  }
}

/** The image is not on the host and may not be pulled, or the registry has no such image. @category errors */
export class ImageNotFound extends Schema.TaggedError<ImageNotFound>()("ImageNotFound", {
  host: Schema.String,
  tool: ContainerTool,
  image: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `image ${this.image} on ${this.host} (${this.tool}): ${this.reason}; ${this.fix}`
  }
}

/** A pull that failed for another reason (the registry unreachable, a login needed, the disk full). @category errors */
export class ImagePullFailed extends Schema.TaggedError<ImagePullFailed>()("ImagePullFailed", {
  host: Schema.String,
  tool: ContainerTool,
  image: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `pulling ${this.image} on ${this.host} (${this.tool}) failed: ${this.reason}; ${this.fix}`
  }
}

/**
 * The tool refused to start a container: its GPUs cannot be given to it (no NVIDIA container
 * toolkit, a driver older than the image's CUDA), the name is taken, a mount is refused.
 *
 * @category errors
 */
export class ContainerRunRefused extends Schema.TaggedError<ContainerRunRefused>()("ContainerRunRefused", {
  host: Schema.String,
  tool: ContainerTool,
  image: Schema.String,
  /** The tool's own words. */
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `${this.tool} could not start a container of ${this.image} on ${this.host}: ${this.reason}; ${this.fix}`
  }
}

/** A container command failed for a reason mlops does not know. @category errors */
export class ContainerCommandFailed extends Schema.TaggedError<ContainerCommandFailed>()(
  "ContainerCommandFailed",
  {
    host: Schema.String,
    command: Schema.String,
    exitCode: Schema.NullOr(Schema.Number),
    stderr: Schema.String,
    fix: Schema.String
  }
) {
  override get message() {
    return `${this.command} on ${this.host} failed (exit ${this.exitCode ?? "by signal"}): ${this.stderr.trim() || "no output"}. Fix: ${this.fix}`
  }
}

/** The output of a container command could not be read (another version's format?). @category errors */
export class ContainerOutputUnreadable extends Schema.TaggedError<ContainerOutputUnreadable>()(
  "ContainerOutputUnreadable",
  {
    host: Schema.String,
    command: Schema.String,
    reason: Schema.String
  }
) {
  override get message() {
    return `could not read the output of ${this.command} on ${this.host}: ${this.reason} (fix: report it with the output of \`${this.command}\` and the tool's version)`
  }
}

/** A container that did not stop within its grace and the kill after it. @category errors */
export class ContainerStillRunning extends Schema.TaggedError<ContainerStillRunning>()(
  "ContainerStillRunning",
  {
    host: Schema.String,
    tool: ContainerTool,
    container: Schema.String,
    fix: Schema.String
  }
) {
  override get message() {
    return `container ${this.container} on ${this.host} (${this.tool}) still runs after stop and kill; ${this.fix}`
  }
}

/** Every error of the container client's own. @category models */
export type ContainerError =
  | ContainerToolUnavailable
  | ImageNotFound
  | ImagePullFailed
  | ContainerRunRefused
  | ContainerCommandFailed
  | ContainerOutputUnreadable
  | ContainerStillRunning
