/**
 * `check` for any engine: the flags decoded and resolved without launching anything, either
 * against a host (the engine as the launch's runtime finds it, with its version; the model's
 * config.json; the GPUs where the server would run on the host itself, or the placement's own
 * checks, a cluster's partition, where it would not: probed as a launch's preflight does,
 * without the port and busy-GPU checks) or fully offline from a config.json and GPU facts. Returns the effective args and the engine's
 * adjustments, or fails with `LaunchRulesViolated` listing every problem and the fixed command.
 *
 * Offline GPU defaults: `count` 1, `computeCapability` "9.0", `memoryGiB` 80 (an H100 80 GB).
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { ConnectError, HostNotFound } from "@mlops/core/Errors"
import { Effect } from "effect"
import type { ArgvError } from "./ArgvErrors.js"
import {
  type Engine,
  type EngineArgs,
  type Flags,
  type Gpus,
  type Registry,
  UnsupportedEngineVersion
} from "./Engine.js"
import * as ModelTraits from "./ModelTraits.js"
import { type InvalidPlacement, type Spec as PlacementSpec, rankCommands } from "./Placement.js"
import * as Placements from "./Placements.js"
import * as Preflight from "./Preflight.js"
import type { InvalidRuntime, Located, Spec as RuntimeSpec } from "./Runtime.js"
import * as Runtimes from "./Runtimes.js"
import * as Secrets from "./Secrets.js"
import * as ServerCommand from "./ServerCommand.js"
import type { LaunchRulesViolated } from "./Violations.js"

/** GPU facts for an offline check. @category models */
export interface GpuFacts {
  /** Default 1. */
  readonly count?: number
  /** Default "9.0". */
  readonly computeCapability?: string
  /** Memory of one GPU in GiB; default 80. */
  readonly memoryGiB?: number
}

/** @category constants */
export const defaultGpus = { count: 1, computeCapability: "9.0", memoryGiB: 80 } as const

/** @category models */
export interface CheckResult {
  /** The engine checked for (`sglang`, `vllm`). */
  readonly engine: string
  /** Its version checked for. */
  readonly version: string
  /** The flags the argv was read with (another release's when it stood in, see `warnings`). */
  readonly flags: { readonly version: string; readonly source: Flags["source"] }
  /** Whether mlops verified its launch rules for `version` (else only the argv was checked). */
  readonly rulesVerified: boolean
  /** Secrets redacted. */
  readonly effective: EngineArgs
  /** The engine's own adjustment messages (or ours where it is silent), in order. */
  readonly adjustments: ReadonlyArray<string>
  /** How the check was limited: a stand-in flag set, unverified rules. */
  readonly warnings: ReadonlyArray<string>
  readonly commandLine: string
  /** Against a host: the Python environment whose engine was checked, and where that choice came from. */
  readonly python?: {
    readonly interpreter: string
    readonly source: Located["source"]
    readonly engineVersion: string
    readonly setting: string
    /** `metadata` (an installed package) or `version.py` (a source checkout). */
    readonly versionSource: Located["versionSource"]
  }
  /** Against a host: where a launch would run the server and what the placement's own checks found. */
  readonly placement?: { readonly description: string; readonly summary: string | undefined }
}

const unverifiedWarning = (engine: Engine, version: string) =>
  `mlops has not verified its launch rules for ${engine.displayName} ${version}: only the flags were checked (names, values, types); \`mlops launch\` runs the host's own validation for this version`

const warningsOf = (engine: Engine, flags: Flags, version: string, verified: boolean) => [
  ...(flags.warning === null ? [] : [flags.warning]),
  ...(verified ? [] : [unverifiedWarning(engine, version)])
]

const commandLineOf = (engine: Engine, argv: ReadonlyArray<string>) =>
  ServerCommand.formatCommandLine(engine.command.shown, argv)

/** The GPUs an offline check assumes: the facts given, the defaults for the rest. @category constructors */
export const offlineGpus = (facts: GpuFacts = {}): Gpus => {
  const gpus = { ...defaultGpus, ...facts }
  return {
    count: gpus.count,
    computeCapability: gpus.computeCapability,
    memoryMiB: Math.round(gpus.memoryGiB * 1024)
  }
}

/** The model's traits from a config.json object or its text; undefined when there is none. @category constructors */
export const traitsOf = (
  modelConfig: unknown
): Effect.Effect<ModelTraits.ModelTraits | undefined, ModelTraits.InvalidModelConfig> =>
  modelConfig === undefined
    ? Effect.succeed(undefined)
    : typeof modelConfig === "string"
      ? ModelTraits.fromJson(modelConfig)
      : ModelTraits.fromConfig(modelConfig)

/** @category models */
export interface OfflineRequest {
  readonly argv: ReadonlyArray<string>
  /** config.json as an object or its text; undefined = unknown model (model rules skipped). */
  readonly modelConfig?: unknown
  readonly gpus?: GpuFacts
  readonly env?: Readonly<Record<string, string>>
  /** The engine's version; default its newest shipped flags' release. */
  readonly version?: string
}

/** @category errors */
export type OfflineError =
  | UnsupportedEngineVersion
  | ArgvError
  | ModelTraits.InvalidModelConfig
  | LaunchRulesViolated

/**
 * Offline: the engine's shipped flags for `version` (the nearest release standing in), a
 * config.json and GPU facts.
 *
 * @category programs
 */
export const offline = Effect.fn("Check.offline")(function* (
  engine: Engine,
  o: OfflineRequest
): Effect.fn.Return<CheckResult, OfflineError> {
  const version = o.version ?? engine.latestFlags.version
  const flags = engine.shippedFlags(version)
  if (flags === undefined) {
    return yield* new UnsupportedEngineVersion({
      engine: engine.displayName,
      version,
      known: engine.releases,
      fix: `give a version such as ${engine.latestFlags.version}`
    })
  }
  const argv = Secrets.redactArgv(o.argv, flags)
  const decoded = yield* flags.decode(argv)
  const traits = yield* traitsOf(o.modelConfig)
  const resolved = yield* engine.resolve({
    decoded,
    traits,
    gpus: offlineGpus(o.gpus),
    env: o.env ?? {},
    version
  })
  return {
    engine: engine.name,
    version,
    flags: { version: flags.version, source: flags.source },
    rulesVerified: resolved.verified,
    effective: Secrets.redactFields(resolved.effective, flags),
    adjustments: resolved.adjustments,
    warnings: warningsOf(engine, flags, version, resolved.verified),
    commandLine: commandLineOf(engine, argv)
  }
})

/** @category models */
export interface HostRequest {
  readonly host: string
  readonly argv: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  /** How a launch would find the engine (`PythonEnvRuntime.spec("~/ml-env")`, what `--python` gives); default as a launch's. */
  readonly runtime?: RuntimeSpec
  /** Where a launch would run it; default what the host's entry makes it. */
  readonly placement?: PlacementSpec
  /** Read the flags from the host's own parser even when mlops ships its version. */
  readonly flagsFromHost?: boolean
}

/** @category errors */
export type HostError =
  | Effect.Effect.Error<ReturnType<typeof Preflight.run>>
  | InvalidPlacement
  | InvalidRuntime
  | ConnectError
  | HostNotFound

/**
 * Against a host, for an engine or the first of several that its Python environment has:
 * probes as a launch's preflight does, without the port check (a running server on the port
 * does not make the flags wrong) and without looking at who holds the GPUs, then resolves.
 *
 * @category programs
 */
export const host = Effect.fn("Check.host")(function* (
  engines: Engine | Registry,
  o: HostRequest
): Effect.fn.Return<CheckResult, HostError, ConnectionPool> {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(o.host)
  const env = o.env ?? {}
  // as a launch would: the same placement and runtime, so the same engine and probes
  const runtime = yield* Runtimes.resolve(conn.host, o.runtime)
  const placement = yield* Placements.resolve(conn.host, runtime.form, o.placement)
  const chosen = isRegistry(engines)
    ? yield* runtime.locate(conn, { engines, env })
    : { engine: engines, located: undefined }
  const engine = chosen.engine
  const argv = Secrets.redactArgv(o.argv, engine.latestFlags)
  // as a launch would: a placement that spans nodes checks rank 0's command, with its node count
  const [rank0] = rankCommands(placement, engine.ranks, argv, { name: "check" })
  const result = yield* Preflight.run(conn, {
    engine,
    runtime,
    located:
      chosen.located === undefined
        ? Effect.map(runtime.locate(conn, { engines: [engine], env }), (found) => found.located)
        : Effect.succeed(chosen.located),
    placement,
    name: "check",
    argv: rank0,
    env,
    port: engine.portOf(argv),
    modelPath: engine.modelOf(argv) ?? "model",
    checkPort: false,
    busyGpus: "ignore",
    flagsFromHost: o.flagsFromHost === true,
    hosts: placement.nodes
  })
  const { facts } = result
  const { interpreter, source, engineVersion, setting, versionSource } = result.located
  return {
    engine: engine.name,
    version: facts.engineVersion,
    flags: facts.flags,
    rulesVerified: facts.rulesVerified,
    effective: Secrets.redactFields(result.resolved.effective, result.flags),
    adjustments: result.resolved.adjustments,
    warnings: [
      ...facts.warnings,
      ...(facts.rulesVerified ? [] : [unverifiedWarning(engine, facts.engineVersion)])
    ],
    commandLine: commandLineOf(engine, argv),
    python: { interpreter, source, engineVersion, setting, versionSource },
    placement: facts.placement
  }
})

const isRegistry = (engines: Engine | Registry): engines is Registry => Array.isArray(engines)
