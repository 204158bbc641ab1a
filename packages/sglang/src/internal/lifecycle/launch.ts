/**
 * Whole launches as timed lines, for fixtures, the simulator and the real-ssh stand-in.
 * @internal
 */
import type { Phase } from "@mlops/serve/LaunchEvent"
import {
  type ArgValue,
  accessLine,
  attentionBackendDefault,
  capacity,
  captureBegin,
  captureBs,
  captureEnd,
  draftCaptureBegin,
  draftCaptureEnd,
  draftTokensAdjusted,
  entrypointWarning,
  initDistBegin,
  initDistEnd,
  kvCache,
  line,
  loadWeightBegin,
  loadWeightEnd,
  mambaCache,
  maxRunningRequestsReset,
  memoryPoolEnd,
  prefillBatch,
  rankPrefix,
  ready,
  serverArgs,
  shardProgress,
  specV2Enabled,
  uvicornRunning,
  uvicornStarted,
  uvicornStartup,
  weightsFormat
} from "./messages.js"

// ---- whole launches -------------------------------------------------------------------------

export interface TimedLine {
  /** ms after the launch started */
  readonly at: number
  readonly text: string
  /** the phase this line starts, when it starts one */
  readonly phase?: Phase
}

export interface LaunchOptions {
  readonly startEpochMs?: number
  readonly tpSize?: number
  readonly modelPath?: string
  readonly modelClass?: string
  readonly hybrid?: boolean
  readonly mtp?: boolean
  readonly port?: number
  readonly shards?: number
}

/** A complete successful launch, in order, with the time each line appears. */
export const successfulLaunch = (o: LaunchOptions = {}): ReadonlyArray<TimedLine> => {
  const start = o.startEpochMs ?? Date.UTC(2026, 4, 10, 12, 0, 0)
  const tp = o.tpSize ?? 1
  const mtp = o.mtp ?? false
  const hybrid = o.hybrid ?? false
  const shards = o.shards ?? 4
  const out: Array<TimedLine> = []
  let at = 0
  const ranks = Array.from({ length: tp }, (_, r) => rankPrefix(r, tp))
  const push = (dt: number, process: string, message: string, phase?: Phase) => {
    at += dt
    out.push(
      phase
        ? { at, text: line(start + at, process, message), phase }
        : { at, text: line(start + at, process, message) }
    )
  }
  const each = (dt: number, message: string, phase?: Phase) =>
    ranks.forEach((p, i) => {
      push(i === 0 ? dt : 0, p, message, i === 0 ? phase : undefined)
    })
  for (const text of entrypointWarning()) out.push({ at, text })
  out[0] = { at: 0, text: out[0]!.text, phase: "starting" }
  push(1000, "", attentionBackendDefault("fa3"))
  if (mtp) {
    push(0, "", maxRunningRequestsReset())
    push(0, "", specV2Enabled())
    push(0, "", draftTokensAdjusted())
  }
  const args: Record<string, ArgValue> = {
    model_path: o.modelPath ?? "Qwen/Qwen3-8B",
    tokenizer_path: o.modelPath ?? "Qwen/Qwen3-8B",
    tp_size: tp,
    mem_fraction_static: 0.85,
    max_running_requests: mtp ? 48 : null,
    chunked_prefill_size: 8192,
    page_size: 1,
    attention_backend: "fa3",
    speculative_algorithm: mtp ? "EAGLE" : null,
    speculative_num_steps: mtp ? 3 : null,
    speculative_eagle_topk: mtp ? 1 : null,
    speculative_num_draft_tokens: mtp ? 4 : null,
    mamba_scheduler_strategy: hybrid ? "extra_buffer" : "auto",
    disable_cuda_graph: false,
    cuda_graph_bs: "[1, 2, 4, 8]"
  }
  push(200, "", serverArgs(args), "args-resolved")
  each(2000, initDistBegin(), "distributed-init")
  each(1500, initDistEnd(1.5, 0.4))
  each(100, loadWeightBegin(78.5), "weights-loading")
  push(100, ranks[0]!, weightsFormat())
  for (let i = 0; i <= shards; i++) {
    at += 2000
    out.push({ at, text: shardProgress(i, shards, i) })
  }
  const modelClass = o.modelClass ?? (hybrid ? "Qwen3_5ForConditionalGeneration" : "Qwen3ForCausalLM")
  each(200, loadWeightEnd({ elapsedS: 8.2, modelClass, availGB: 62.1, usageGB: 16.4 }), "weights-loaded")
  if (hybrid) each(300, mambaCache({ size: 144, convGB: 0.3, ssmGB: 6.5, speculative: mtp }), "mamba-cache")
  each(400, kvCache(812_000, 24.8, 24.8), "kv-cache")
  each(50, memoryPoolEnd(11.2))
  each(100, captureBegin(11.2), "cuda-graph")
  push(0, ranks[0]!, captureBs([1, 2, 4, 8, 16, 24, 32, 48]))
  each(14_000, captureEnd(14.0, 0.9, 10.3))
  if (mtp) {
    each(100, loadWeightBegin(10.3), "draft-weights")
    each(
      1200,
      loadWeightEnd({ elapsedS: 1.1, modelClass: "Qwen3_5ForCausalLMMTP", availGB: 9.4, usageGB: 0.9 })
    )
    each(100, kvCache(812_000, 0.4, 0.4))
    each(100, draftCaptureBegin(9.0), "draft-cuda-graph")
    each(6000, draftCaptureEnd(6.0, 0.3, 8.7))
  }
  push(
    100,
    ranks[0]!,
    capacity({
      maxTotalNumTokens: 812_000,
      chunkedPrefillSize: 8192,
      maxRunningRequests: 48,
      contextLen: 262_144,
      availGB: 8.7
    })
  )
  push(300, "", uvicornStarted(4242))
  for (const m of uvicornStartup()) push(0, "", m)
  push(10, "", uvicornRunning("0.0.0.0", o.port ?? 30000), "http-up")
  push(1000, "", accessLine("GET", "/model_info", 200))
  push(50, ranks[0]!, prefillBatch(7), "warmup")
  push(400, "", accessLine("POST", "/generate", 200))
  push(10, "", ready(), "ready")
  return out
}

/** The text of timed lines, one per line, with a trailing newline. */
export const toText = (lines: ReadonlyArray<TimedLine | string>): string =>
  lines.map((l) => (typeof l === "string" ? l : l.text)).join("\n") + "\n"
