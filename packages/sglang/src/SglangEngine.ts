/**
 * SGLang as an `Engine` of the serving layer: found as the `sglang` distribution of a Python
 * environment, started as `python -m sglang.launch_server`, its flags per release
 * (`Catalogue`, or read from the host's own parser: `HostFlags`), its launch rules (`Resolve`),
 * its lifecycle lines and own failure signatures for the classifier, readiness (`/health`,
 * one `/generate`, `/v1/models`) and the simulated SGLang of the `sim` host.
 *
 * ```ts
 * import { Launch } from "@mlops/serve"
 * import { SglangEngine } from "@mlops/sglang"
 *
 * Launch.launch({ host: "sim", engine: SglangEngine.engine, argv: ["--model-path", "/root/models/Qwen3.6-27B"] })
 * ```
 *
 * @since 0.1.0
 */

import { ranksOf } from "@mlops/serve/AutoFix"
import type {
  Decoded,
  Engine,
  FlagInfo,
  Flags,
  GpuPlan,
  ReadinessRequest,
  Rendezvous
} from "@mlops/serve/Engine"
import { commonCaches, UnsupportedEngineVersion } from "@mlops/serve/Engine"
import * as Metrics from "@mlops/serve/Metrics"
import * as Secrets from "@mlops/serve/Secrets"
import { Effect } from "effect"
import * as Argv from "./Argv.js"
import * as Catalogue from "./Catalogue.js"
import * as HostFlags from "./HostFlags.js"
import { modelPathOf, portOf } from "./internal/launch/argvFacts.js"
import { logs } from "./internal/logs/index.js"
import { sim } from "./internal/sim/engine.js"
import * as Resolve from "./Resolve.js"
import * as Rules from "./Rules.js"
import type { ServerArgs } from "./ServerArgs.js"

/** Flags whose value is not text: never a secret, whatever the name says. */
const NOT_TEXT: ReadonlySet<Catalogue.FlagType> = new Set([
  "bool",
  "int",
  "float",
  "list[int]",
  "list[float]"
])

const infoOf = (spec: Catalogue.FlagSpec): FlagInfo => ({
  flag: spec.flag,
  field: spec.field ?? spec.flag.slice(2).replaceAll("-", "_"),
  takesValue: spec.type !== "bool",
  list: spec.nargs === "+" || spec.nargs === "*",
  secret: !NOT_TEXT.has(spec.type) && [spec.flag, ...spec.aliases].some(Secrets.saysSecret)
})

/** The spec an argv word names, by exact spelling or argparse's unique prefix. */
const specOf = (catalogue: Catalogue.Catalogue, word: string): Catalogue.FlagSpec | undefined => {
  const head = word.includes("=") ? word.slice(0, word.indexOf("=")) : word
  const exact = catalogue.byFlag.get(head)
  if (exact !== undefined || !head.startsWith("--")) return exact
  const matches = new Set<Catalogue.FlagSpec>()
  for (const [spelling, spec] of catalogue.byFlag) if (spelling.startsWith(head)) matches.add(spec)
  return matches.size === 1 ? [...matches][0] : undefined
}

/** A catalogue as the serving layer's `Flags`. @category flags */
export const flagsOf = (
  catalogue: Catalogue.Catalogue,
  source: Flags["source"] = "shipped",
  warning: string | null = null
): Flags => ({
  version: catalogue.version,
  source,
  warning,
  spec: (word) => {
    const spec = specOf(catalogue, word)
    return spec === undefined ? undefined : infoOf(spec)
  },
  field: (name) => {
    const spec = catalogue.byField.get(name)
    return spec === undefined ? undefined : infoOf(spec)
  },
  decode: (argv) =>
    Effect.map(
      Argv.decodeArgv(argv, catalogue),
      (d): Decoded => ({ args: d.args, explicit: d.explicit, warnings: d.deprecated.map((w) => w.message) })
    ),
  encode: (args, fields) =>
    Argv.encodeArgv(args as Partial<ServerArgs>, {
      catalogue,
      ...(fields === undefined ? {} : { only: new Set(fields) })
    })
})

const latestFlags = flagsOf(Catalogue.latest)

/** `--model-path P` / `--model P` (or `=P`), when the argv names one. */
const modelOf = (argv: ReadonlyArray<string>): string | undefined => {
  const model = modelPathOf(argv)
  return argv.some((w) => w.startsWith("--model")) ? model : undefined
}

const gpusOf = (args: object): GpuPlan => {
  const a = args as unknown as Partial<ServerArgs>
  // a catalogue read from a dev build's parser may lack a flag: its SGLang default then
  const count = (value: number | undefined, otherwise: number) =>
    typeof value === "number" && Number.isFinite(value) ? value : otherwise
  const total = count(a.tp_size, 1) * count(a.pp_size, 1)
  const nodes = Math.max(1, count(a.nnodes, 1))
  return {
    total,
    nodes,
    perNode: Math.max(1, Math.ceil(total / nodes)),
    first: count(a.base_gpu_id, 0),
    step: Math.max(1, count(a.gpu_id_step, 1)),
    elsewhere: "--base-gpu-id, or CUDA_VISIBLE_DEVICES in --env",
    fewer: (count) => `--tp-size ${count}`
  }
}

/**
 * SGLang's multi-node recipe: the same command on every node, `--nnodes N --node-rank i
 * --dist-init-addr head:port` (only rank 0 serves HTTP).
 */
const ranks = (argv: ReadonlyArray<string>, r: Rendezvous): ReadonlyArray<ReadonlyArray<string>> =>
  ranksOf(
    argv,
    r.nodes,
    (rank) => ({
      flags: { "--nnodes": r.nodes, "--node-rank": rank, "--dist-init-addr": `${r.head}:${r.port}` }
    }),
    latestFlags
  )

// SGLang answers /health without the API key; /generate and /v1/models need it
const readiness = (): ReadonlyArray<ReadinessRequest> => [
  { method: "GET", path: "/health", authorized: false, retry: true, passes: (status) => status === 200 },
  {
    method: "POST",
    path: "/generate",
    body: JSON.stringify({
      text: "The capital city of France is",
      sampling_params: { max_new_tokens: 1, temperature: 0 }
    }),
    authorized: true,
    retry: false,
    passes: (status) => status === 200
  },
  {
    method: "GET",
    path: "/v1/models",
    authorized: true,
    retry: false,
    passes: (status, body) => status === 200 && body.includes('"data"')
  }
]

/** The host's own argument parsing, without loading a model. */
const REMOTE_CHECK = [
  "import sys",
  "from sglang.srt.server_args import prepare_server_args",
  "prepare_server_args(sys.argv[1:])",
  "print('{\"ok\": true}')"
].join("\n")

/** SGLang. @category engines */
export const engine: Engine = {
  name: "sglang",
  displayName: "SGLang",
  python: {
    package: "sglang",
    entryPoint: "sglang",
    fingerprintFiles: [HostFlags.fingerprintFile],
    install: 'pip install "sglang[all]"'
  },
  command: {
    module: "sglang.launch_server",
    leading: [],
    shown: Argv.launchProgram
  },
  defaultPort: 30000,
  modelOf,
  portOf,
  gpusOf,
  ranks,
  releases: Catalogue.releases.map((release) => release.version),
  latestFlags,
  shippedFlags: (version) => {
    const match = Catalogue.match(version)
    return match === undefined
      ? undefined
      : flagsOf(match.catalogue, match.exact ? "shipped" : "nearest", match.warning)
  },
  flags: (request) =>
    HostFlags.forHost(request).pipe(
      Effect.map((found) => flagsOf(found.catalogue, found.source, found.warning)),
      Effect.catchTag("UnsupportedSglangVersion", (e) =>
        Effect.fail(
          new UnsupportedEngineVersion({ engine: "SGLang", version: e.version, known: e.known, fix: e.fix })
        )
      )
    ),
  resolve: (input) =>
    Effect.map(
      Resolve.resolve(input.decoded.args as unknown as ServerArgs, input.decoded.explicit, {
        traits: input.traits,
        gpus: input.gpus,
        env: input.env,
        version: input.version
      }),
      (resolved) => ({
        effective: resolved.effective,
        logLines: resolved.logLines,
        adjustments: resolved.adjustments.map((a) => a.engineMessage ?? a.message),
        rulesVersion: resolved.rulesVersion,
        verified: Rules.forVersion(input.version).verified
      })
    ),
  logs,
  readiness,
  summaryFields: [
    "tp_size",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "mamba_scheduler_strategy",
    "max_running_requests",
    "mem_fraction_static",
    "attention_backend",
    "page_size"
  ],
  apiKeyFlag: "--api-key",
  metrics: {
    enable: "--enable-metrics",
    // both separators: the prefix went sglang: → sglang_ → sglang: between releases
    figures: (before, after) => ({
      // a gauge of its last logging interval (per scheduler under data parallelism: their mean)
      acceptLength: Metrics.mean(after, ["sglang:spec_accept_length", "sglang_spec_accept_length"]),
      generationTokens: Metrics.increase(before, after, [
        "sglang:generation_tokens_total",
        "sglang_generation_tokens_total"
      ]),
      requests: Metrics.increase(before, after, ["sglang:num_requests_total", "sglang_num_requests_total"])
    })
  },
  secretEnv: [],
  caches: commonCaches,
  remoteCheck: REMOTE_CHECK,
  sim
}
