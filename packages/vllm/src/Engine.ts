/**
 * vLLM as an engine of the serving layer: found as the `vllm` distribution, started as `vllm
 * serve <model> [flags]` (`python -m vllm.entrypoints.cli.main serve`), its flags from the
 * shipped snapshots, its pre-load checks, its log lines and signatures, readiness by `/health`,
 * `/v1/models` and one completion, and a simulated install on the `sim` host (`~/vllm-env`).
 *
 * @since 0.1.0
 */

import { ranksOf } from "@mlops/serve/AutoFix"
import {
  commonCaches,
  type Engine,
  type Flags,
  type GpuPlan,
  type Rendezvous,
  UnsupportedEngineVersion
} from "@mlops/serve/Engine"
import * as Metrics from "@mlops/serve/Metrics"
import { Effect } from "effect"
import * as Catalogue from "./Catalogue.js"
import * as HostFlags from "./HostFlags.js"
import { modelOf, portOf } from "./internal/engine/argvFacts.js"
import { flagsOf, valuesOf } from "./internal/engine/flags.js"
import { readiness } from "./internal/engine/readiness.js"
import { resolve } from "./internal/engine/resolve.js"
import * as Sim from "./internal/sim/programs.js"
import { logs } from "./Logs.js"

const shippedFlags = (version: string): Flags | undefined => {
  const chosen = Catalogue.choose(version)
  if (chosen === undefined) return undefined
  return flagsOf(chosen.catalogue, version, chosen.warning === null ? "shipped" : "nearest", chosen.warning)
}

const num = (v: unknown, fallback: number): number => (typeof v === "number" && v > 0 ? v : fallback)

/**
 * tensor × pipeline × prefill-context parallel GPUs per replica, × data-parallel replicas, over
 * `--nnodes`; in the data-parallel form across nodes, `--data-parallel-size-local` replicas on each.
 */
const gpusOf = (engineArgs: object): GpuPlan => {
  const args = valuesOf(engineArgs)
  const world =
    num(args.tensor_parallel_size, 1) *
    num(args.pipeline_parallel_size, 1) *
    num(args.prefill_context_parallel_size, 1)
  const replicas = num(args.data_parallel_size, 1)
  const total = world * replicas
  const local = num(args.data_parallel_size_local, replicas)
  const nodes = local < replicas ? Math.ceil(replicas / local) : num(args.nnodes, 1)
  return {
    total,
    nodes,
    perNode: local < replicas ? world * local : Math.max(1, Math.ceil(total / nodes)),
    first: 0,
    step: 1,
    elsewhere: "CUDA_VISIBLE_DEVICES in --env",
    fewer: (count) => `--tensor-parallel-size ${count}`
  }
}

const latestFlags = flagsOf(Catalogue.latest, Catalogue.latest.snapshot.near, "shipped", null)

/** The flags of the other multi-node form: one form's flags are dropped when the other is written. */
const TENSOR_FORM = ["--nnodes", "--node-rank", "--master-addr", "--master-port"]
const DATA_PARALLEL_FORM = [
  "--data-parallel-size-local",
  "--data-parallel-start-rank",
  "--data-parallel-address",
  "--data-parallel-rpc-port"
]

/** `--data-parallel-size` as the argv gives it (any spelling vLLM takes: `-dp`, underscores, `=`); 1 when not given. */
const dataParallelSize = (argv: ReadonlyArray<string>): number => {
  let size = 1
  argv.forEach((word, i) => {
    if (!word.startsWith("-")) return
    const [name, inline] = word.split("=")
    if (latestFlags.spec(name!)?.field !== "data_parallel_size") return
    const value = inline ?? argv[i + 1] ?? ""
    if (/^\d+$/.test(value)) size = Number(value)
  })
  return size
}

/**
 * vLLM's multi-node recipes without Ray, the others `--headless` (rank 0 serves HTTP): a
 * command with `--data-parallel-size` that the nodes share evenly is written in the data-parallel
 * form (`--data-parallel-size-local L --data-parallel-address head --data-parallel-rpc-port
 * port`, node i from `--data-parallel-start-rank i×L`); any other in the tensor/pipeline form,
 * the same command on every node with `--nnodes N --node-rank i --master-addr head
 * --master-port port`.
 */
const ranks = (argv: ReadonlyArray<string>, r: Rendezvous): ReadonlyArray<ReadonlyArray<string>> => {
  const replicas = dataParallelSize(argv)
  if (replicas > 1 && replicas % r.nodes === 0) {
    const local = replicas / r.nodes
    return ranksOf(
      argv,
      r.nodes,
      (rank) => ({
        flags: {
          "--data-parallel-size-local": local,
          "--data-parallel-address": r.head,
          "--data-parallel-rpc-port": r.port,
          ...(rank === 0 ? {} : { "--data-parallel-start-rank": rank * local, "--headless": null })
        },
        removeFlags: [...TENSOR_FORM, ...(rank === 0 ? ["--headless", "--data-parallel-start-rank"] : [])]
      }),
      latestFlags
    )
  }
  return ranksOf(
    argv,
    r.nodes,
    (rank) => ({
      flags: {
        "--nnodes": r.nodes,
        "--node-rank": rank,
        "--master-addr": r.head,
        "--master-port": r.port,
        ...(rank === 0 ? {} : { "--headless": null })
      },
      removeFlags: [...DATA_PARALLEL_FORM, ...(rank === 0 ? ["--headless"] : [])]
    }),
    latestFlags
  )
}

/** The shipped snapshots as messages name them: the release each is near, and its name. */
const releases = Catalogue.snapshots.map((s) => `${s.near} (${s.name})`)

/** @category engines */
export const VllmEngine: Engine = {
  name: "vllm",
  displayName: "vLLM",
  python: {
    package: "vllm",
    entryPoint: "vllm",
    fingerprintFiles: HostFlags.fingerprintFiles,
    install: "pip install vllm"
  },
  command: { module: "vllm.entrypoints.cli.main", leading: ["serve"], shown: ["vllm", "serve"] },
  defaultPort: 8000,
  modelOf,
  portOf,
  gpusOf,
  ranks,
  releases,
  latestFlags,
  shippedFlags,
  flags: (request) =>
    HostFlags.forHost(request).pipe(
      Effect.map((found) =>
        flagsOf(found.catalogue, request.located.engineVersion, found.source, found.warning)
      ),
      Effect.catchTag("UnknownVllmVersion", (e) =>
        Effect.fail(
          new UnsupportedEngineVersion({
            engine: "vLLM",
            version: e.version,
            known: releases,
            fix: "give a version such as 0.13.0 (the host's `pip show vllm` names it)"
          })
        )
      )
    ),
  resolve,
  logs,
  readiness,
  summaryFields: [
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "gpu_memory_utilization",
    "dtype",
    "quantization",
    "kv_cache_dtype"
  ],
  apiKeyFlag: "--api-key",
  metrics: {
    enable: undefined,
    // acceptance length = 1 + accepted / drafts over the run (vLLM PR#17010)
    figures: (before, after) => {
      const drafts = Metrics.increase(before, after, ["vllm:spec_decode_num_drafts_total"])
      const accepted = Metrics.increase(before, after, ["vllm:spec_decode_num_accepted_tokens_total"])
      return {
        acceptLength:
          drafts === undefined || accepted === undefined || drafts === 0 ? undefined : 1 + accepted / drafts,
        generationTokens: Metrics.increase(before, after, ["vllm:generation_tokens_total"]),
        requests: Metrics.increase(before, after, ["vllm:request_success_total"])
      }
    }
  },
  secretEnv: ["VLLM_API_KEY"],
  // torch.compile, Inductor and Triton artifacts reused across containers (vLLM's docker docs)
  caches: [...commonCaches, { env: "VLLM_CACHE_ROOT", path: "~/.cache/vllm" }],
  // the host's own parser is not run: vLLM's parser module moved between releases
  remoteCheck: undefined,
  sim: {
    prefix: Sim.prefix,
    files: Sim.files,
    programs: [Sim.python, Sim.vllm],
    readyLine: "INFO:     Application startup complete.",
    versions: Sim.versions,
    defaultVersion: Sim.defaultVersion
  }
}
