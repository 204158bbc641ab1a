/**
 * Literal SGLang log lines (v0.5.11 wording) for each lifecycle step and for common failure
 * tracebacks, as pure functions. Shared by the classifier's fixtures, the simulator and the
 * real-ssh stand-in, so that all of them print what SGLang prints.
 *
 * Message functions return the text after the `[time prefix] ` part; `line` adds the prefix.
 * Traceback functions return whole lines (the first one prefixed when a rank prints it).
 * @internal
 */
import type { Phase } from "./phase.js"

export type ArgValue = string | number | boolean | null

const PKG = "/usr/local/lib/python3.12/dist-packages/sglang"
const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`)

/** `2026-05-10 12:00:05` for an epoch-ms time (UTC). */
export const timestamp = (epochMs: number): string => {
  const d = new Date(epochMs)
  return (
    `${d.getUTCFullYear()}-${pad2(d.getUTCMonth() + 1)}-${pad2(d.getUTCDate())} ` +
    `${pad2(d.getUTCHours())}:${pad2(d.getUTCMinutes())}:${pad2(d.getUTCSeconds())}`
  )
}

/** A logged line: `[2026-05-10 12:00:05 TP0] message`; `process` is "" for the launcher. */
export const line = (epochMs: number, process: string, message: string): string =>
  `[${timestamp(epochMs)}${process === "" ? "" : ` ${process}`}] ${message}`

/** The scheduler prefix SGLang builds for a rank: `TP1` (empty when tp is 1). */
export const rankPrefix = (rank: number, tpSize: number): string => (tpSize > 1 ? `TP${rank}` : "")

const pyRepr = (value: ArgValue): string =>
  value === null
    ? "None"
    : value === true
      ? "True"
      : value === false
        ? "False"
        : typeof value === "number"
          ? String(value)
          : `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`

// ---- launcher, before the ranks -----------------------------------------------------------

export const entrypointWarning = (): ReadonlyArray<string> => [
  `${PKG}/launch_server.py:45: UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.`,
  "  Example: sglang serve --model-path <model> [options]",
  "  warnings.warn("
]
export const attentionBackendDefault = (backend: string) =>
  `Attention backend not specified. Use ${backend} backend by default.`
export const maxRunningRequestsReset = () =>
  "Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests."
export const specV2Enabled = () => "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."
export const draftTokensAdjusted = () =>
  "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
/** `server_args=ServerArgs(model_path='...', ...)`, Python repr of the given fields in order. */
export const serverArgs = (values: Readonly<Record<string, ArgValue>>): string =>
  `server_args=ServerArgs(${Object.entries(values)
    .map(([k, v]) => `${k}=${pyRepr(v)}`)
    .join(", ")})`
export const importErrorIgnored = (module: string, error: string) =>
  `Ignore import error when loading ${module}: ${error}`

// ---- each scheduler rank ------------------------------------------------------------------

export const initDistBegin = () => "Init torch distributed begin."
export const initDistEnd = (elapsedS: number, memUsageGB: number) =>
  `Init torch distributed ends. elapsed=${elapsedS.toFixed(2)} s, mem usage=${memUsageGB.toFixed(2)} GB`
export const loadWeightBegin = (availGB: number) => `Load weight begin. avail mem=${availGB.toFixed(2)} GB`
export const weightsFormat = () => "Using model weights format ['*.safetensors']"
/** tqdm bar as it appears once split on `\r` (the classifier reads the last segment). */
export const shardProgress = (done: number, total: number, elapsedS = 1) =>
  `Loading safetensors checkpoint shards: ${String(Math.floor((done / total) * 100)).padStart(3)}% Completed | ${done}/${total} [00:${pad2(elapsedS)}<00:00,  1.50it/s]`
export const loadWeightEnd = (o: { elapsedS: number; modelClass: string; availGB: number; usageGB: number }) =>
  `Load weight end. elapsed=${o.elapsedS.toFixed(2)} s, type=${o.modelClass}, avail mem=${o.availGB.toFixed(2)} GB, mem usage=${o.usageGB.toFixed(2)} GB.`
export const mambaCache = (o: { size: number; convGB: number; ssmGB: number; speculative: boolean }) =>
  `Mamba Cache is allocated. max_mamba_cache_size: ${o.size}, conv_state size: ${o.convGB.toFixed(2)}GB, ssm_state size: ${o.ssmGB.toFixed(2)}GB ` +
  (o.speculative ? "intermediate_ssm_state_cache size: 1.20GB intermediate_conv_window_cache size: 0.05GB" : "")
export const kvCache = (tokens: number, kGB: number, vGB: number) =>
  `KV Cache is allocated. #tokens: ${tokens}, K size: ${kGB.toFixed(2)} GB, V size: ${vGB.toFixed(2)} GB`
export const memoryPoolEnd = (availGB: number) => `Memory pool end. avail mem=${availGB.toFixed(2)} GB`
export const captureBegin = (availGB: number) =>
  `Capture cuda graph begin. This can take up to several minutes. avail mem=${availGB.toFixed(2)} GB`
export const captureBs = (bs: ReadonlyArray<number>) => `Capture cuda graph bs [${bs.join(", ")}]`
export const captureEnd = (elapsedS: number, usageGB: number, availGB: number) =>
  `Capture cuda graph end. Time elapsed: ${elapsedS.toFixed(2)} s. mem usage=${usageGB.toFixed(2)} GB. avail mem=${availGB.toFixed(2)} GB.`
export const draftCaptureBegin = (availGB: number) =>
  `Capture draft cuda graph begin. This can take up to several minutes. avail mem=${availGB.toFixed(2)} GB`
export const draftCaptureEnd = (elapsedS: number, usageGB: number, availGB: number) =>
  `Capture draft cuda graph end. Time elapsed: ${elapsedS.toFixed(2)} s. mem usage=${usageGB.toFixed(2)} GB. avail mem=${availGB.toFixed(2)} GB.`
export const capacity = (o: {
  maxTotalNumTokens: number
  chunkedPrefillSize: number
  maxRunningRequests: number
  contextLen: number
  availGB: number
}) =>
  `max_total_num_tokens=${o.maxTotalNumTokens}, chunked_prefill_size=${o.chunkedPrefillSize}, max_prefill_tokens=16384, max_running_requests=${o.maxRunningRequests}, context_len=${o.contextLen}, available_gpu_mem=${o.availGB.toFixed(2)} GB`

// ---- launcher: HTTP, warmup, steady state -------------------------------------------------

export const uvicornStarted = (pid: number) => `INFO:     Started server process [${pid}]`
export const uvicornStartup = () => ["INFO:     Waiting for application startup.", "INFO:     Application startup complete."]
export const uvicornRunning = (host: string, port: number) =>
  `INFO:     Uvicorn running on http://${host}:${port} (Press CTRL+C to quit)`
export const accessLine = (method: string, path: string, status: number) =>
  `INFO:     127.0.0.1:50412 - "${method} ${path} HTTP/1.1" ${status} OK`
export const prefillBatch = (newTokens: number) =>
  `Prefill batch, #new-seq: 1, #new-token: ${newTokens}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, `
export const decodeBatch = (o: { running: number; tokens: number; usage: number; throughput: number; accept?: number }) =>
  `Decode batch, #running-req: ${o.running}, #token: ${o.tokens}, token usage: ${o.usage.toFixed(2)}, ` +
  (o.accept === undefined ? "" : `accept len: ${o.accept.toFixed(2)}, accept rate: ${(o.accept / 4).toFixed(2)}, `) +
  `cuda graph: True, gen throughput (token/s): ${o.throughput.toFixed(2)}, #queue-req: 0, `
export const ready = () => "The server is fired up and ready to roll!"

// ---- failures ------------------------------------------------------------------------------

export const sigquitFromChild = () =>
  "Received sigquit from a child process. It usually means the child failed."

/** The first line of a rank's exception record, to be followed by `frames` and the exception. */
export const schedulerException = (epochMs: number, process: string): string =>
  line(epochMs, process, "Scheduler hit an exception: Traceback (most recent call last):")

const frame = (file: string, lineNo: number, fn: string, source: string) => [
  `  File "${PKG}/${file}", line ${lineNo}, in ${fn}`,
  `    ${source}`
]
const schedulerFrames = () => [
  ...frame("srt/managers/scheduler.py", 3210, "run_scheduler_process", "scheduler = Scheduler("),
  ...frame("srt/managers/scheduler.py", 368, "__init__", "self.init_model_worker()"),
  ...frame("srt/managers/tp_worker.py", 247, "__init__", "self._model_runner = ModelRunner(")
]
const serverArgsFrames = (handler: string, lineNo: number, source: string) => [
  "Traceback (most recent call last):",
  `  File "<frozen runpy>", line 198, in _run_module_as_main`,
  ...frame("launch_server.py", 51, "<module>", "server_args = prepare_server_args(sys.argv[1:])"),
  ...frame("srt/server_args.py", 7290, "prepare_server_args", "return ServerArgs.from_cli_args(raw_args)"),
  ...frame("srt/server_args.py", 6720, "from_cli_args", "return cls(**{attr: getattr(args, attr) for attr in attrs})"),
  `  File "<string>", line 312, in __init__`,
  ...frame("srt/server_args.py", 902, "__post_init__", `self.${handler}()`),
  ...frame("srt/server_args.py", lineNo, handler, source)
]

/** CUDA allocation failure in a rank (`phase` decides the frames: weights or KV cache). */
export const oomTraceback = (o: {
  epochMs: number
  process: string
  gpu: number
  triedGiB: number
  totalGiB: number
  freeMiB: number
}): ReadonlyArray<string> => [
  schedulerException(o.epochMs, o.process),
  ...schedulerFrames(),
  ...frame("srt/model_executor/model_runner.py", 512, "initialize", "self.load_model()"),
  ...frame("srt/model_loader/loader.py", 690, "load_model", "model = _initialize_model("),
  `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ${o.triedGiB.toFixed(2)} GiB. GPU ${o.gpu} has a total capacity of ${o.totalGiB.toFixed(2)} GiB of which ${o.freeMiB.toFixed(2)} MiB is free. Including non-PyTorch memory, this process has ${(o.totalGiB - 0.5).toFixed(2)} GiB memory in use. Of the allocated memory ${(o.totalGiB - 1.5).toFixed(2)} GiB is allocated by PyTorch, and 311.52 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`
]

/** The KV pool does not fit (`Not enough memory`). */
export const kvPoolTraceback = (epochMs: number, process: string, memFractionStatic: number) => [
  schedulerException(epochMs, process),
  ...schedulerFrames(),
  ...frame("srt/model_executor/model_runner.py", 530, "initialize", "self.init_memory_pool(min_per_gpu_memory)"),
  ...frame("srt/mem_cache/pool_configurator.py", 141, "__post_init__", "raise RuntimeError("),
  `RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=${memFractionStatic}`
]

/** The hybrid-model radix-cache ValueError (launcher, no prefix). */
export const mambaValueError = (arch = "Qwen3_5ForConditionalGeneration"): ReadonlyArray<string> => [
  ...serverArgsFrames("_handle_mamba_radix_cache", 2453, "raise ValueError("),
  `ValueError: Speculative decoding for ${arch} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`
]

/** The bare speculative assert (`multiline` shows it the way Python 3.13 prints it). */
export const bareAssertion = (multiline = false): ReadonlyArray<string> => [
  ...serverArgsFrames("_handle_speculative_decoding", 3518, multiline ? "assert (" : "assert ("),
  ...(multiline
    ? [
        "        self.speculative_eagle_topk is None",
        "        and self.speculative_num_draft_tokens is None",
        "    )"
      ]
    : []),
  "AssertionError"
]

/** uvicorn cannot bind the HTTP port (after the model is loaded). */
export const portInUse = (epochMs: number, host: string, port: number) =>
  line(
    epochMs,
    "",
    `ERROR:    [Errno 98] error while attempting to bind on address ('${host}', ${port}): address already in use`
  )

/** NCCL failure in a rank during distributed init. */
export const ncclError = (epochMs: number, process: string): ReadonlyArray<string> => [
  schedulerException(epochMs, process),
  ...schedulerFrames(),
  ...frame("srt/distributed/parallel_state.py", 1402, "init_distributed_environment", "torch.distributed.barrier()"),
  ...frame("srt/distributed/device_communicators/pynccl_wrapper.py", 398, "NCCL_CHECK", "raise RuntimeError(f\"NCCL error: {error_str}\")"),
  "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
]

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
    out.push(phase ? { at, text: line(start + at, process, message), phase } : { at, text: line(start + at, process, message) })
  }
  const each = (dt: number, message: string, phase?: Phase) =>
    ranks.forEach((p, i) => push(i === 0 ? dt : 0, p, message, i === 0 ? phase : undefined))
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
  for (let i = 0; i <= shards; i++) out.push({ at: (at += 2000), text: shardProgress(i, shards, i) })
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
    each(1200, loadWeightEnd({ elapsedS: 1.1, modelClass: "Qwen3_5ForCausalLMMTP", availGB: 9.4, usageGB: 0.9 }))
    each(100, kvCache(812_000, 0.4, 0.4))
    each(100, draftCaptureBegin(9.0), "draft-cuda-graph")
    each(6000, draftCaptureEnd(6.0, 0.3, 8.7))
  }
  push(100, ranks[0]!, capacity({ maxTotalNumTokens: 812_000, chunkedPrefillSize: 8192, maxRunningRequests: 48, contextLen: 262_144, availGB: 8.7 }))
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
