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

import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as LocalFiles from "@mlops/core/LocalFiles"
import type { Flags } from "@mlops/serve/Engine"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import * as Preflight from "@mlops/serve/Preflight"
import * as PythonEnv from "@mlops/serve/PythonEnv"
import * as Secrets from "@mlops/serve/Secrets"
import { Effect } from "effect"
import * as Argv from "./Argv.js"
import * as Catalogue from "./Catalogue.js"
import * as Resolve from "./Resolve.js"
import * as Rules from "./Rules.js"
import type { ServerArgs } from "./ServerArgs.js"
import * as SglangEngine from "./SglangEngine.js"

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
  /** The SGLang version checked for. */
  readonly version: string
  /** The catalogue the flags were read with (another release when it stood in, see `warnings`). */
  readonly flags: { readonly version: string; readonly source: "shipped" | "cached" | "dumped" | "nearest" }
  /** Whether mlops verified its launch rules for `version` (else only the argv was checked). */
  readonly rulesVerified: boolean
  readonly effective: ServerArgs
  /** SGLang's own adjustment messages (or ours when SGLang is silent), in order. */
  readonly adjustments: ReadonlyArray<string>
  /** How the check was limited: a stand-in catalogue, unverified rules. */
  readonly warnings: ReadonlyArray<string>
  readonly commandLine: string
  /** Against a host: the Python environment whose SGLang was checked, and where that choice came from. */
  readonly python?: {
    readonly interpreter: string
    readonly source: "--python" | "hosts.json" | "discovered"
    readonly sglangVersion: string
    readonly setting: string
  }
}

const toResult = (
  o: Pick<CheckResult, "version" | "flags" | "rulesVerified" | "warnings">,
  argv: ReadonlyArray<string>,
  resolved: { readonly effective: object; readonly adjustments: ReadonlyArray<string> },
  flags: Flags
): CheckResult => ({
  ...o,
  effective: Secrets.redactFields(resolved.effective, flags) as ServerArgs,
  adjustments: resolved.adjustments,
  commandLine: Argv.formatCommandLine(argv)
})

const unverifiedWarning = (version: string) =>
  `mlops has not verified its launch rules for SGLang ${version}: only the flags were checked (names, values, types); \`mlops launch\` runs the host's own validation for this version`

/** The model's traits from a config.json object or its text; undefined when there is none. */
export const traitsOf = (modelConfig: unknown) =>
  modelConfig === undefined
    ? Effect.succeed(undefined)
    : typeof modelConfig === "string"
      ? ModelTraits.fromJson(modelConfig)
      : ModelTraits.fromConfig(modelConfig)

/** What the rules see offline: the model's traits and the GPU facts (defaults filled), for `version`. */
export const offlineContext = (o: {
  readonly traits: ModelTraits.ModelTraits | undefined
  readonly gpus?: GpuFacts
  readonly env?: Readonly<Record<string, string>>
  readonly version: string
}): Resolve.ResolveContext => {
  const gpus = { ...defaultGpus, ...o.gpus }
  return {
    traits: o.traits,
    gpus: {
      count: gpus.count,
      computeCapability: gpus.computeCapability,
      memoryMiB: Math.round(gpus.memoryGiB * 1024)
    },
    env: o.env ?? {},
    version: o.version
  }
}

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
  const version = o.version ?? Catalogue.latest.version
  const match = yield* Catalogue.forVersion(version)
  const rules = Rules.forVersion(version)
  const flags = SglangEngine.flagsOf(match.catalogue)
  const argv = Secrets.redactArgv(o.argv, flags)
  const decoded = yield* Argv.decodeArgv(argv, match.catalogue)
  const traits = yield* traitsOf(o.modelConfig)
  const resolved = yield* Resolve.resolve(
    decoded.args,
    decoded.explicit,
    offlineContext({
      traits,
      ...(o.gpus === undefined ? {} : { gpus: o.gpus }),
      ...(o.env === undefined ? {} : { env: o.env }),
      version
    })
  )
  const checked = { version: match.catalogue.version, source: match.exact ? "shipped" : "nearest" } as const
  const warnings = [
    ...(match.warning === null ? [] : [match.warning]),
    ...(rules.verified ? [] : [unverifiedWarning(version)])
  ]
  return toResult(
    { version: rules.version, flags: checked, rulesVerified: rules.verified, warnings },
    argv,
    {
      effective: resolved.effective,
      adjustments: resolved.adjustments.map((a) => a.engineMessage ?? a.message)
    },
    flags
  )
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
  const text = yield* LocalFiles.readText(o.configPath)
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
  /** Read the flags from the host's own parser even when mlops ships its version. */
  readonly flagsFromHost?: boolean
}) {
  const pool = yield* ConnectionPool
  const conn = yield* pool.get(o.host)
  const engine = SglangEngine.engine
  const argv = Secrets.redactArgv(o.argv, engine.latestFlags)
  const env = o.env ?? {}
  const result = yield* Preflight.run(conn, {
    engine,
    python: PythonEnv.choose(conn, { engine, explicit: o.python, env }),
    argv,
    env,
    port: engine.portOf(argv),
    modelPath: engine.modelOf(argv) ?? "model",
    checkPort: false,
    busyGpus: "ignore",
    flagsFromHost: o.flagsFromHost === true
  })
  const { facts } = result
  const { interpreter, source, engineVersion, setting } = result.python
  return {
    ...toResult(
      {
        version: facts.engineVersion,
        flags: facts.flags,
        rulesVerified: facts.rulesVerified,
        warnings: [
          ...facts.warnings,
          ...(facts.rulesVerified ? [] : [unverifiedWarning(facts.engineVersion)])
        ]
      },
      argv,
      result.resolved,
      result.flags
    ),
    python: { interpreter, source, sglangVersion: engineVersion, setting }
  } satisfies CheckResult
})
