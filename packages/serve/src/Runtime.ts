/**
 * How the engine is found and started: the seam. A runtime answers, for an engine on a host,
 * where the engine is and which version it is (`locate`), what identifies that install for the
 * flag catalogue read from it (the fingerprint of its flag-source files and an install id),
 * and the command that runs one of its Python programs there: the server, the host's own
 * argument check, the flag dump (`command`). `launch`, `check`, `flags` and the upgrade check
 * all find the engine through the same runtime.
 *
 * Today's runtime is a Python environment on the host (a venv, conda environment or
 * interpreter, configured or discovered: `PythonEnvRuntime`); an engine's image is another. A
 * new runtime is one module exporting a `Kind`, plus one entry in the registry the programs
 * are given (`Runtimes`). This module imports no runtime.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { CommandError, ConnectError, RemoteFileError } from "@mlops/core/Errors"
import type { HostConfig } from "@mlops/core/HostConfig"
import type { RemoteCommand } from "@mlops/core/RemoteCommand"
import { type Effect, type Either, Schema } from "effect"
import type { Engine } from "./Engine.js"
import type { PythonEnvUnusable, PythonFacts } from "./internal/launch/types.js"
import * as Seams from "./internal/seams.js"
import type * as Secrets from "./Secrets.js"
import type { Target } from "./ServerCommand.js"

/** A runtime as chosen for one launch: its kind (`python-env`) and its settings (`{ python: "~/ml-env" }`). @category models */
export type Spec = Seams.Spec

/** @category schemas */
export const Spec = Seams.Spec

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
  /** What identifies this install for caches kept on this machine (with its version and fingerprint). */
  readonly installId: string
}

/** @category models */
export interface Found {
  readonly engine: Engine
  readonly located: Located
}

/** Why no engine could be found: none there (with what was tried), or the host did not answer. @category models */
export type LocateError = PythonEnvUnusable | CommandError | ConnectError | RemoteFileError

/** One of the engine's programs to run, with the flags shown (`***` for secrets) and their secrets. @category models */
export interface Program {
  readonly target: Target
  readonly shown: ReadonlyArray<string>
  readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
  readonly env: Readonly<Record<string, string>>
  readonly flags?: Secrets.FlagLookup
}

/** A runtime for one spec on one host. @category models */
export interface Runtime {
  readonly spec: Spec
  /**
   * The first of `engines` (in order of preference) this runtime finds on the host; when none is
   * there, the preferred engine's refusal, naming what was tried and how to set it. `env` is the
   * launch's environment (a `PYTHONPATH` there makes a source checkout visible).
   */
  readonly locate: (
    conn: Connection,
    o: { readonly engines: ReadonlyArray<Engine>; readonly env: Readonly<Record<string, string>> }
  ) => Effect.Effect<Found, LocateError>
  /** The command that runs `program` with the located engine (secrets never on its command line). */
  readonly command: (located: Located, program: Program) => RemoteCommand
}

/** A kind of runtime: how a spec is chosen for a host and made into a runtime. @category models */
export interface Kind extends Seams.KindOf<Runtime, InvalidRuntime> {
  readonly kind: string
  /** This kind's spec for `host` when it applies (`asked`: this kind's spec from the request). */
  readonly resolve: (
    host: HostConfig,
    asked: Spec | undefined
  ) => Either.Either<Spec | undefined, InvalidRuntime>
  readonly make: (spec: Spec, host: HostConfig) => Either.Either<Runtime, InvalidRuntime>
}

/** The kinds a program knows, in order: without a request, the first that applies to a host is chosen. @category models */
export type Registry = ReadonlyArray<Kind>

const invalid = (kind: string, reason: string, fix: string) => new InvalidRuntime({ kind, reason, fix })

/** The runtime for `host`: the kind `asked` names, or the first of the registry that applies. @category resolving */
export const resolve = (
  registry: Registry,
  host: HostConfig,
  asked?: Spec
): Either.Either<Runtime, InvalidRuntime> => Seams.resolve(registry, host, asked, invalid)
