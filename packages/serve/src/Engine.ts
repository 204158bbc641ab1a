/**
 * What an inference engine (SGLang, vLLM, ...) is to the serving layer: how to find it in a
 * host's Python environment, its flags per version and how argv decodes and encodes, its launch
 * rules, what its log says (lifecycle lines and failure signatures added to the neutral
 * classifier), how to ask a started server whether it is ready, how it is started, which of its
 * flags and environment variables hold secrets, and its simulated server for the `sim` host.
 *
 * An engine is a plain value of this type, exported by its package (`SglangEngine`,
 * `VllmEngine`) and registered by the CLI; the serving programs (launch, status, logs, stop,
 * diagnose) take one and never import an engine package.
 *
 * @since 0.1.0
 */
import type { ExecResult } from "@mlops/core/Connection"
import type * as Errors from "@mlops/core/Errors"
import type { Program } from "@mlops/core/FakeProgram"
import { type Duration, type Effect, Schema } from "effect"
import type { ArgvError, UnencodableValue } from "./ArgvErrors.js"
import type { EngineLogs } from "./Classifier.js"
import type { EngineMetrics } from "./Metrics.js"
import type { ModelTraits } from "./ModelTraits.js"
import type { Located } from "./Runtime.js"
import type { LaunchRulesViolated } from "./Violations.js"

/**
 * An engine's parsed arguments, by field (`tp_size`, `tensor_parallel_size`): each engine has
 * its own record type, so the serving layer only passes them around (and shows them).
 * @category models
 */
export type EngineArgs = object

/** The GPUs a server will run on (one host). @category models */
export interface Gpus {
  readonly count: number
  /** CUDA compute capability, e.g. `"8.6"` (A6000), `"9.0"` (H100), `"10.0"` (B200). */
  readonly computeCapability: string
  /** Memory of one device in MiB. */
  readonly memoryMiB: number
}

/** Which GPUs a launch uses on one node, and how to ask for fewer. @category models */
export interface GpuPlan {
  /** GPUs the whole launch needs (all nodes). */
  readonly total: number
  readonly nodes: number
  readonly perNode: number
  /** Index (among the visible GPUs) of rank 0, and the stride between ranks. */
  readonly first: number
  readonly step: number
  /** How to put the launch on other GPUs (`--base-gpu-id, or CUDA_VISIBLE_DEVICES in --env`). */
  readonly elsewhere: string
  /** The flags that give a launch `count` GPUs (`--tp-size 2`). */
  readonly fewer: (count: number) => string
}

/** One flag as argv spells it. @category models */
export interface FlagInfo {
  /** The canonical spelling (`--tensor-parallel-size`). */
  readonly flag: string
  /** The field it sets (`tp_size`). */
  readonly field: string
  /** Whether it is followed by a value (false for booleans). */
  readonly takesValue: boolean
  /** Whether it takes several values (`--cuda-graph-bs 1 2 4`): a fix's value is split on spaces. */
  readonly list: boolean
  /** Whether its value is a secret (`--api-key`): never shown, stored or put on a command line. */
  readonly secret: boolean
}

/** A decoded command line. @category models */
export interface Decoded {
  /** Every field, defaults filled in. */
  readonly args: EngineArgs
  /** The fields the command line set. */
  readonly explicit: ReadonlySet<string>
  /** Deprecation notices and the like, to show. */
  readonly warnings: ReadonlyArray<string>
}

/** One version's flags: which exist and how argv says them. @category models */
export interface Flags {
  readonly version: string
  /**
   * `shipped` with mlops, read from the host's own parser (`dumped` now, `cached` from an
   * earlier run), or the `nearest` shipped release standing in.
   */
  readonly source: "shipped" | "cached" | "dumped" | "nearest"
  /** Why another release's flags stood in, when one did. */
  readonly warning: string | null
  /** The flag an argv word names (`--tp`, `--tp-size=2`): exact spelling or unique prefix. */
  readonly spec: (word: string) => FlagInfo | undefined
  /** The flag that sets a field. */
  readonly field: (name: string) => FlagInfo | undefined
  readonly decode: (argv: ReadonlyArray<string>) => Effect.Effect<Decoded, ArgvError>
  /** The argv that sets `fields` of `args` (default: every non-default field). */
  readonly encode: (
    args: EngineArgs,
    fields?: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<string>, ArgvError | UnencodableValue>
}

/** What the rules look at besides the flags. @category models */
export interface ResolveInput {
  readonly decoded: Decoded
  /** From the checkpoint's config.json; undefined = unknown (model-dependent rules are skipped). */
  readonly traits: ModelTraits | undefined
  /** Undefined = unknown (hardware-dependent rules are skipped). */
  readonly gpus: Gpus | undefined
  /** The server's environment (`SGLANG_ENABLE_SPEC_V2=1`, `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`). */
  readonly env: Readonly<Record<string, string>>
  readonly version: string
}

/** What the engine will run with. @category models */
export interface Resolution {
  /** The effective args (what the engine's own resolved-args line would print). */
  readonly effective: EngineArgs
  /** The engine's own lines about values it changed, and warnings, in order (as its log shows them). */
  readonly logLines: ReadonlyArray<string>
  /** Each value it changed, in the engine's words (or ours where it is silent), in order. */
  readonly adjustments: ReadonlyArray<string>
  /** The version whose rules were used. */
  readonly rulesVersion: string
  /** Whether mlops verified its rules for this version (else only the argv was checked). */
  readonly verified: boolean
}

/** One readiness request, in order; each must pass before the next is sent. @category models */
export interface ReadinessRequest {
  readonly method: "GET" | "POST"
  readonly path: string
  /** JSON text. */
  readonly body?: string
  /** Whether it carries the API key (when the launch has one). */
  readonly authorized: boolean
  /** Retried (every 500 ms, within the readiness budget) until it passes: `/health` answers 503 while starting. */
  readonly retry: boolean
  /** Whether the answer means ready. */
  readonly passes: (status: number, body: string) => boolean
}

/** How the server process is started inside the Python environment. @category models */
export interface LaunchCommand {
  /** The module `python -m` runs (`sglang.launch_server`, `vllm.entrypoints.cli.main`). */
  readonly module: string
  /** Words before the user's argv (`["serve"]` for vLLM). */
  readonly leading: ReadonlyArray<string>
  /** How a person types it (`python -m sglang.launch_server`, `vllm serve`). */
  readonly shown: ReadonlyArray<string>
}

/** Where the engine's flags for a host's install come from. @category models */
export interface FlagsRequest {
  /** The host alias, for messages and the cache of flags read from hosts. */
  readonly host: string
  /** The install as its runtime found it: version, fingerprint hashes, install id. */
  readonly located: Located
  /** Run Python `code` with the install's interpreter (the host's own parser for the flag dump), within `timeout`. */
  readonly python: (
    code: string,
    timeout: Duration.DurationInput
  ) => Effect.Effect<ExecResult, Errors.CommandError>
  /** Read the host's parser even when mlops ships this version. */
  readonly fromHost: boolean
}

/** Where the ranks of a multi-node launch meet: rank 0's address and a port it listens on for the others. @category models */
export interface Rendezvous {
  readonly nodes: number
  readonly head: string
  readonly port: number
}

/** Not a version the engine's catalogues can stand in for (`latest`, ``). @category errors */
export class UnsupportedEngineVersion extends Schema.TaggedError<UnsupportedEngineVersion>()(
  "UnsupportedEngineVersion",
  {
    /** The engine's display name. */
    engine: Schema.String,
    version: Schema.String,
    known: Schema.Array(Schema.String),
    fix: Schema.String
  }
) {
  override get message() {
    return `${JSON.stringify(this.version)} is not a ${this.engine} version mlops can check; it ships catalogues for ${this.known[0]} to ${this.known.at(-1)}. ${this.fix}`
  }
}

/** Why no flags could be had for an install. @category models */
export type FlagsError =
  | UnsupportedEngineVersion
  | Errors.CommandError
  | Errors.ConnectError
  | Errors.RemoteFileError

/** The engine on the simulated host. @category models */
export interface SimulatedEngine {
  /** Its Python environment's prefix on the sim (`/root/ml-env`). */
  readonly prefix: string
  /** Files that install it there, for `version` (default: the engine's default sim version). */
  readonly files: (version?: string) => Readonly<Record<string, string>>
  /** Its programs (the environment's `python`, entry points). */
  readonly programs: ReadonlyArray<Program>
  /** The line its simulated server prints once ready (a restored sim server that printed it comes back ready). */
  readonly readyLine: string
  /** The versions the sim can install, oldest first. */
  readonly versions: ReadonlyArray<string>
  readonly defaultVersion: string
}

/** @category models */
/** A cache an engine keeps on the host (`~/.cache/huggingface`, moved by `HF_HOME`). @category models */
export interface EngineCache {
  /** Where it is on the host (`~/` for the home), unless the launch's environment sets `env`. */
  readonly path: string
  /** The variable that moves it (`HF_HOME`, `VLLM_CACHE_ROOT`, `TRITON_CACHE_DIR`). */
  readonly env: string
}

/** The caches every engine that reads models from the Hugging Face Hub and compiles Triton kernels keeps. @category constants */
export const commonCaches: ReadonlyArray<EngineCache> = [
  { env: "HF_HOME", path: "~/.cache/huggingface" },
  { env: "TRITON_CACHE_DIR", path: "~/.triton/cache" }
]

export interface Engine {
  /** `sglang`, `vllm`: `--engine`, deployment records, JSON. */
  readonly name: string
  /** `SGLang`, `vLLM`: messages. */
  readonly displayName: string
  /** The Python distribution to look for (`sglang`, `vllm`) and files whose hashes tell installs apart. */
  readonly python: {
    readonly package: string
    /** The console script whose interpreter discovery also tries (`sglang`, `vllm`). */
    readonly entryPoint: string
    readonly fingerprintFiles: ReadonlyArray<string>
    /** How to install it into an environment (`pip install "sglang[all]"`). */
    readonly install: string
  }
  readonly command: LaunchCommand
  /** The caches it keeps on the host between launches (downloads, compiled kernels): a container gets them mounted. */
  readonly caches: ReadonlyArray<EngineCache>
  readonly defaultPort: number
  /** The model path or id an argv serves (`--model-path`, vLLM's positional model). */
  readonly modelOf: (argv: ReadonlyArray<string>) => string | undefined
  /** The port an argv listens on (`defaultPort` unless set). */
  readonly portOf: (argv: ReadonlyArray<string>) => number
  /** The GPUs a decoded launch needs on this node: `perNode` ranks at `first + rank × step` of the visible ones. */
  readonly gpusOf: (args: EngineArgs) => GpuPlan
  /**
   * How one command becomes the commands of `nodes` ranks (rank 0 first): the same flags for every
   * rank, each with its place in the whole and the rendezvous, written the engine's way (any
   * such flags the argv already had are replaced). Rank 0 serves HTTP.
   */
  readonly ranks: (
    argv: ReadonlyArray<string>,
    rendezvous: Rendezvous
  ) => ReadonlyArray<ReadonlyArray<string>>
  /** The releases whose flags mlops ships, oldest first, as messages name them. */
  readonly releases: ReadonlyArray<string>
  /** The newest shipped flags: how secrets are told apart before the host's version is known. */
  readonly latestFlags: Flags
  /** The shipped flags of a version (the nearest release standing in for an unknown one), offline. */
  readonly shippedFlags: (version: string) => Flags | undefined
  /** The flags of the install on a host (shipped, cached, or read from its parser). */
  readonly flags: (request: FlagsRequest) => Effect.Effect<Flags, FlagsError>
  /** The engine's launch rules: the effective args, or every violation with fixes and the fixed command. */
  readonly resolve: (input: ResolveInput) => Effect.Effect<Resolution, LaunchRulesViolated>
  /** What its logs add to the neutral classifier. */
  readonly logs: EngineLogs
  /** Readiness after its ready line, for what an argv serves (its model, under its served name). */
  readonly readiness: (argv: ReadonlyArray<string>) => ReadonlyArray<ReadinessRequest>
  /** The flag whose value readiness sends as `Authorization: Bearer` (`--api-key`). */
  readonly apiKeyFlag: string | undefined
  /** How its Prometheus `/metrics` page is read (a benchmark's acceptance length and counters). */
  readonly metrics: EngineMetrics
  /** Environment names that hold secrets beyond what their name says (`HF_TOKEN` is caught by name). */
  readonly secretEnv: ReadonlyArray<string>
  /** Python code run with the argv to let the host's own parser check it, when the engine has one. */
  readonly remoteCheck: string | undefined
  readonly sim: SimulatedEngine
  /** The effective fields a short summary shows (`check`), when set. */
  readonly summaryFields: ReadonlyArray<string>
}

/** The engines the CLI knows, by name; the first is the default when a host has several. @category models */
export type Registry = ReadonlyArray<Engine>

/** The engine named `name`, if registered. @category lookup */
export const byName = (registry: Registry, name: string): Engine | undefined =>
  registry.find((engine) => engine.name === name)
