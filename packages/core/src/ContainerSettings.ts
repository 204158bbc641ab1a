/**
 * How a host runs servers from container images: the `"image"`, `"runtime"`, `"pull"` and
 * `"shm"` fields of its hosts.json entry (`{"hosts": {"ct129": {"image":
 * "lmsysorg/sglang:v0.5.11", "runtime": "docker"}}}`), overridden by the launch's options. A host
 * whose entry names an image runs every launch from it unless the launch asks for another
 * runtime.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** The container tools mlops drives: the `docker` CLI (Docker Engine) and `podman`. @category models */
export const ContainerTool = Schema.Literal("docker", "podman")
/** @category models */
export type ContainerTool = typeof ContainerTool.Type

/** When an image is pulled: never (it must be there), when missing (default), or before every launch. @category models */
export const PullPolicy = Schema.Literal("never", "missing", "always")
/** @category models */
export type PullPolicy = typeof PullPolicy.Type

/**
 * The container's shared memory: a private `/dev/shm` of this size (`32g`, `512m`; docker's
 * `--shm-size`), or `host` for the host's IPC namespace (`--ipc host`: the host's `/dev/shm`,
 * where the size means nothing).
 *
 * @category models
 */
export const ShmSetting = Schema.String.pipe(
  Schema.filter(
    (text) => text === "host" || /^[1-9]\d*[bkmg]?$/i.test(text) || "a size such as 32g or 512m, or host",
    {
      identifier: "ShmSetting"
    }
  )
)

/** An image reference: `[registry/]name[:tag][@digest]`, one word. @category models */
export const ImageRef = Schema.String.pipe(
  Schema.filter(
    (text) =>
      (/^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/.test(text) && !text.includes("//")) ||
      "an image such as lmsysorg/sglang:v0.5.11",
    { identifier: "ImageRef" }
  )
)

/** @category models */
export const ContainerSettings = Schema.Struct({
  /** The image every launch on the host runs from, unless the launch names another runtime. */
  image: Schema.optional(ImageRef),
  /** `docker` (default) or `podman`. */
  runtime: Schema.optional(ContainerTool),
  /** Default `missing`. */
  pull: Schema.optional(PullPolicy),
  /** Default `32g` (a private `/dev/shm`). */
  shm: Schema.optional(ShmSetting)
})
/** @category models */
export type ContainerSettings = typeof ContainerSettings.Type

/** What each hosts.json field must be, in words. @category models */
export const expected = {
  image: "an image reference such as lmsysorg/sglang:v0.5.11",
  runtime: '"docker" or "podman"',
  pull: '"never", "missing" or "always"',
  shm: 'a shared-memory size such as "32g", or "host"'
} as const

/** The default container tool. @category constants */
export const defaultTool: ContainerTool = "docker"

/** The default pull policy. @category constants */
export const defaultPull: PullPolicy = "missing"

/**
 * The default shared memory: a private 32 GiB `/dev/shm` (SGLang's documented `--shm-size 32g`).
 * Not `--ipc host`: that shares (and over weeks can fill) the host's `/dev/shm`.
 *
 * @category constants
 */
export const defaultShm = "32g"
