/**
 * `check`: the flags decoded and resolved without launching anything, either against a host
 * (its SGLang version, GPUs and the model's config.json, probed) or fully offline from a
 * local config.json and GPU facts. Returns the effective args and SGLang's adjustments, or
 * fails with `LaunchRulesViolated` listing every problem and the fixed command.
 *
 * Offline GPU defaults (documented for the CLI): `count` 1, `computeCapability` "9.0"
 * (Hopper), `memoryGiB` 80 — an H100 80 GB. Pass the real values for your GPUs.
 *
 * @since 0.1.0
 */
import { FileSystem } from "@effect/platform"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import { Effect } from "effect"
import * as Argv from "./Argv.js"
import * as Catalogue from "./Catalogue.js"
import * as Preflight from "./internal/launch/preflight.js"
import * as PythonEnv from "./internal/launch/pythonEnv.js"
import * as ModelTraits from "./ModelTraits.js"
import * as Resolve from "./Resolve.js"
import * as Secrets from "./Secrets.js"
import type { ServerArgs } from "./ServerArgs.js"

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
  readonly version: string
  readonly effective: ServerArgs
  /** SGLang's own adjustment messages (or ours when SGLang is silent), in order. */
  readonly adjustments: ReadonlyArray<string>
  readonly commandLine: string
  /** Against a host: the Python environment whose SGLang was checked, and where that choice came from. */
  readonly python?: {
    readonly interpreter: string
    readonly source: "--python" | "hosts.json" | "discovered"
    readonly sglangVersion: string
    readonly setting: string
  }
}

const toResult = (version: string, argv: ReadonlyArray<string>, resolved: Resolve.Resolved): CheckResult => ({
  version,
  effective: Secrets.redactFields(resolved.effective),
  adjustments: resolved.adjustments.map((a) => a.sglangMessage ?? a.message),
  commandLine: Argv.formatCommandLine(argv)
})

/**
 * Offline: a parsed (or JSON text) config.json and GPU facts.
 *
 * @category programs
 */
export const offline = Effect.fn("Check.offline")(function* (o: {
  readonly argv: ReadonlyArray<string>
  /** config.json as an object or its text; undefined = unknown model (model rules skipped). */
  readonly modelConfig?: unknown
  readonly gpus?: GpuFacts
  readonly env?: Readonly<Record<string, string>>
  /** SGLang version; default the newest known. */
  readonly version?: string
}) {
  const match = yield* Catalogue.forVersion(o.version ?? Catalogue.latest.version)
  const argv = Secrets.redactArgv(o.argv, match.catalogue)
  const decoded = yield* Argv.decodeArgv(argv, match.catalogue)
  const traits =
    o.modelConfig === undefined
      ? undefined
      : typeof o.modelConfig === "string"
        ? yield* ModelTraits.fromJson(o.modelConfig)
        : yield* ModelTraits.fromConfig(o.modelConfig)
  const gpus = { ...defaultGpus, ...o.gpus }
  const resolved = yield* Resolve.resolve(decoded.args, decoded.explicit, {
    traits,
    gpus: {
      count: gpus.count,
      computeCapability: gpus.computeCapability,
      memoryMiB: Math.round(gpus.memoryGiB * 1024)
    },
    env: o.env ?? {},
    version: match.catalogue.version
  })
  return toResult(match.catalogue.version, argv, resolved)
})

/**
 * Offline with a local config.json file.
 *
 * @category programs
 */
export const localConfig = Effect.fn("Check.localConfig")(function* (o: {
  readonly argv: ReadonlyArray<string>
  readonly configPath: string
  readonly gpus?: GpuFacts
  readonly env?: Readonly<Record<string, string>>
  readonly version?: string
}) {
  const fs = yield* FileSystem.FileSystem
  const text = yield* fs.readFileString(o.configPath)
  return yield* offline({ ...o, modelConfig: text })
})

/**
 * Against a host: probes its SGLang version, GPUs and the model config (a launch's preflight
 * without the port check: a running server on the port does not make the flags wrong), then
 * resolves.
 *
 * @category programs
 */
export const host = Effect.fn("Check.host")(function* (o: {
  readonly host: string
  readonly argv: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  readonly python?: string
}) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(o.host)
  const argv = Secrets.redactArgv(o.argv)
  const env = o.env ?? {}
  const decoded = yield* Argv.decodeArgv(argv)
  const result = yield* Preflight.run(conn, {
    python: PythonEnv.choose(conn, { explicit: o.python, env }),
    argv,
    env,
    port: decoded.args.port,
    modelPath: decoded.args.model_path,
    checkPort: false,
    busyGpus: "ignore"
  })
  const { interpreter, source, sglangVersion, setting } = result.python
  return {
    ...toResult(result.catalogue.version, argv, result.resolved),
    python: { interpreter, source, sglangVersion, setting }
  } satisfies CheckResult
})
