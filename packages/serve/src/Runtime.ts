/**
 * How the engine is found and started: the seam. A runtime answers, for an engine on a host,
 * what has to happen before anything else (`prepare`: an image pulled), where the engine is and
 * which version it is (`locate`), what identifies that install for the flag catalogue read from
 * it (the fingerprint of its flag-source files and an install id), its own checks before a
 * launch (`preflight`), and how one of the engine's Python programs runs there: a short one now,
 * on the host (`command`: the host's own argument check, the flag dump), or the server, handed to
 * the placement (`runnable`). `launch`, `check`, `flags` and the upgrade check all find the
 * engine through the same runtime. A job (a user's own program, not an engine's) runs through
 * it too (`job`): in the environment, or in a container of the image.
 *
 * What a placement runs is one of two forms (`Runnable`): a command on the host (a Python
 * environment there), or a program inside a container of an image. A runtime says which form it
 * makes (`form`); each placement says which forms it runs, so the pair is checked when they are
 * chosen, before anything runs.
 *
 * A new runtime is one module exporting a `Kind`, plus one entry in the registry the programs
 * are given (`Runtimes`). This module imports no runtime.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { ContainerTool } from "@mlops/core/ContainerSettings"
import type { HostConfig } from "@mlops/core/HostConfig"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import { type Effect, type Either, Schema } from "effect"
import type { Engine, EngineCache } from "./Engine.js"
import type { PythonFacts } from "./internal/launch/types.js"
import * as Seams from "./internal/seams.js"
import type * as Secrets from "./Secrets.js"
import type { Target } from "./ServerCommand.js"

/** A runtime as chosen for one launch: its kind (`python-env`) and its settings (`{ python: "~/ml-env" }`). @category models */
export type Spec = Seams.Spec

/** @category schemas */
export const Spec = Seams.Spec

/**
 * What a runtime fails with: tagged errors, each saying what went wrong and how to fix it.
 * Every interface below is generic in a runtime's own errors `E`; the registry the programs use
 * (`Runtimes`) names the union of its runtimes' errors.
 *
 * @category models
 */
export interface RuntimeError {
  readonly _tag: string
  readonly message: string
}

/** A runtime spec that cannot be used. @category errors */
export class InvalidRuntime extends Schema.TaggedError<InvalidRuntime>()("InvalidRuntime", {
  kind: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `runtime ${this.kind}: ${this.reason}; ${this.fix}`
  }
}

/**
 * The engine as a runtime found it: where it is and how it was chosen (`PythonFacts`, what the
 * launch's `Python` event shows), its version, the hashes of its flag-source files and what
 * identifies the install.
 *
 * @category models
 */
export interface Located extends PythonFacts {
  /** The runtime's kind. */
  readonly runtime: string
  /** sha256 of the engine's fingerprint files (`Engine.python.fingerprintFiles`), by path inside its package. */
  readonly fileHashes: Readonly<Record<string, string>>
  /** What identifies this install for caches kept on this machine (with its version and fingerprint): the host, an image's id. */
  readonly installId: string
}

/** @category models */
export interface Found {
  readonly engine: Engine
  readonly located: Located
}

/** One of the engine's programs to run, with the flags shown (`***` for secrets) and their secrets. @category models */
export interface Program {
  readonly target: Target
  readonly shown: ReadonlyArray<string>
  readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
  readonly env: Readonly<Record<string, string>>
  readonly flags?: Secrets.FlagLookup
  /** Whether it needs the host's GPUs (an argument check reads their memory; a flag dump does not). */
  readonly gpus: boolean
  /** The host's files it reads (an argument check reads the model's config): a runtime that isolates it mounts them. */
  readonly paths: ServerPaths
}

/** The host's files a server uses. @category models */
export interface ServerPaths {
  /** The model's directory on the host, when the model is a local path (read only). */
  readonly model: string | undefined
  /** Caches it reads and fills (downloads, compiled kernels), kept across launches. */
  readonly caches: ReadonlyArray<EngineCache>
}

/** No files of the host: a program that reads none (a flag dump). @category constants */
export const noPaths: ServerPaths = { model: undefined, caches: [] }

/** The server as a command on the host, run as it is. @category models */
export interface OnHost {
  readonly _tag: "OnHost"
  readonly command: RemoteCommand
  /** As a person would type it (flags shown, never a secret). */
  readonly shown: string
}

/**
 * The server as a program inside a container of an image: the placement starts the container
 * (its GPUs, mounts, log and lifecycle are the placement's), with `argv` as its command.
 *
 * @category models
 */
export interface InImage {
  readonly _tag: "InImage"
  readonly tool: ContainerTool
  /** The image as it was named (`lmsysorg/sglang:v0.5.11`). */
  readonly image: string
  /** The image that was located (`sha256:…`): what runs, even if the name moved since. */
  readonly imageId: string
  /** The program and its shown flags, inside the container. */
  readonly argv: readonly [string, ...Array<string>]
  /** Environment for the program that is not secret (secret values are in `secrets`). */
  readonly env: Readonly<Record<string, string>>
  /**
   * What the engine's prelude reads to put secret values back (flag values, secret-named
   * variables), as text to deliver in a file only the server reads; undefined without secrets.
   */
  readonly secrets: string | undefined
  /** As a person would type it inside the container (flags shown, never a secret). */
  readonly shown: string
}

/** What a placement runs. @category models */
export type Runnable = OnHost | InImage

/** The form of what a runtime makes. @category models */
export type Form = Runnable["_tag"]

/** A step a runtime takes before a launch (pulling an image), as its progress goes. @category models */
export interface Step {
  /** `pulling lmsysorg/sglang:v0.5.11`. */
  readonly step: string
  /** The tool's latest word on it. */
  readonly detail: string
}

/** What a runtime's own checks found, for the preflight report. @category models */
export interface Facts {
  /** One line (`image sha256:1a2b… (docker 24.0.7), CUDA 12.4 within the driver's 12.4`). */
  readonly summary: string | undefined
  /** What the user should know (an image whose engine is not the version its tag says). */
  readonly warnings: ReadonlyArray<string>
}

/** A runtime for one spec on one host. @category models */
export interface Runtime<E = RuntimeError> {
  readonly spec: Spec
  /** What it makes for a placement to run. */
  readonly form: Form
  /** `the Python environment ~/ml-env`, `the image lmsysorg/sglang:v0.5.11 (docker)`. */
  readonly description: string
  /** Make it usable before a launch (an image pulled), each step's progress to `report`. */
  readonly prepare: (conn: Connection, report: (step: Step) => Effect.Effect<void>) => Effect.Effect<void, E>
  /**
   * The first of `engines` (in order of preference) this runtime finds on the host; when none is
   * there, the preferred engine's refusal, naming what was tried and how to set it. `env` is the
   * launch's environment (a `PYTHONPATH` there makes a source checkout visible).
   */
  readonly locate: (
    conn: Connection,
    o: { readonly engines: ReadonlyArray<Engine>; readonly env: Readonly<Record<string, string>> }
  ) => Effect.Effect<Found, E>
  /** Its own checks before a launch (an image's CUDA against the host's driver, GPUs reachable through the tool). */
  readonly preflight: (conn: Connection, located: Located) => Effect.Effect<Facts, E>
  /**
   * What identifies the install it would run now (an image name's current id), to tell a
   * running deployment from this launch; undefined when there is nothing to compare.
   */
  readonly current: (conn: Connection) => Effect.Effect<string | undefined, E>
  /** A short program to run now on the host with the located engine (secrets never on its command line). */
  readonly command: (located: Located, program: Program) => RemoteCommand
  /** The server, for the placement to run. */
  readonly runnable: (located: Located, program: Program) => Runnable
  /**
   * A user's own program (a job) as a command on the host, started by the placement once the
   * job's GPUs are known (`CUDA_VISIBLE_DEVICES` in its environment names them): in the
   * environment (its `bin` first on PATH), or in a container of the image in the foreground.
   */
  readonly job: (conn: Connection, job: JobProgram) => Effect.Effect<JobCommand, E>
}

/** A job's program, for a runtime to run. @category models */
export interface JobProgram {
  /** The job's name (a container's name is made of it). */
  readonly name: string
  readonly argv: readonly [string, ...Array<string>]
  /** Its environment: values travel outside any command line. */
  readonly env: Readonly<Record<string, string>>
  /** Its run directory on the host (absolute): a runtime that isolates the job gives it this directory at the same path. */
  readonly runDir: string
  /** Where it runs (its synced code), else undefined: the runtime's own default. */
  readonly cwd: string | undefined
}

/** A job as the runtime runs it. @category models */
export interface JobCommand {
  readonly command: RemoteCommand
  /** Where the program runs, for the job's record (`~`, its run directory inside a container). */
  readonly cwd: string
  /** Where it runs, for people: `the Python environment ~/ml-env`, `a container of pytorch/pytorch:2.5 (docker)`. */
  readonly where: string
}

/** A kind of runtime: how a spec is chosen for a host and made into a runtime. @category models */
export interface Kind<E = RuntimeError> extends Seams.KindOf<Runtime<E>, InvalidRuntime> {
  readonly kind: string
  /** This kind's spec for `host` when it applies (`asked`: this kind's spec from the request). */
  readonly resolve: (
    host: HostConfig,
    asked: Spec | undefined
  ) => Either.Either<Spec | undefined, InvalidRuntime>
  readonly make: (spec: Spec, host: HostConfig) => Either.Either<Runtime<E>, InvalidRuntime>
}

/** The kinds a program knows, in order: without a request, the first that applies to a host is chosen. @category models */
export type Registry<E = RuntimeError> = ReadonlyArray<Kind<E>>

const invalid = (kind: string, reason: string, fix: string) => new InvalidRuntime({ kind, reason, fix })

/** The runtime for `host`: the kind `asked` names, or the first of the registry that applies. @category resolving */
export const resolve = <E>(
  registry: Registry<E>,
  host: HostConfig,
  asked?: Spec
): Either.Either<Runtime<E>, InvalidRuntime> => Seams.resolve(registry, host, asked, invalid, undefined)

/** The runtime a deployment record's spec describes. @category resolving */
export const fromRecord = <E>(
  registry: Registry<E>,
  spec: Spec,
  host: HostConfig
): Either.Either<Runtime<E>, InvalidRuntime> => Seams.fromRecord(registry, spec, host, invalid)
