/**
 * The literal lines of a normal SGLang launch (v0.5.11 wording), one function per line kind.
 * Message functions return the text after the `[time prefix] ` part; `line` adds the prefix.
 * @internal
 */
import type { ArgValue } from "@mlops/serve/LaunchEvent"

export type { ArgValue }

export const PKG = "/usr/local/lib/python3.12/dist-packages/sglang"
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
export const specV2Enabled = () =>
  "Spec v2 is enabled by default for eagle/eagle3/standalone speculative decoding."
export const draftTokensAdjusted = () =>
  "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"
/** `server_args=ServerArgs(model_path='...', ...)`, Python repr of the given fields in order. */
export const serverArgs = (values: Readonly<Record<string, ArgValue>>): string =>
  `server_args=ServerArgs(${Object.entries(values)
    .map(([k, v]) => `${k}=${pyRepr(v)}`)
    .join(", ")})`

// ---- each scheduler rank ------------------------------------------------------------------

export const initDistBegin = () => "Init torch distributed begin."
export const initDistEnd = (elapsedS: number, memUsageGB: number) =>
  `Init torch distributed ends. elapsed=${elapsedS.toFixed(2)} s, mem usage=${memUsageGB.toFixed(2)} GB`
export const loadWeightBegin = (availGB: number) => `Load weight begin. avail mem=${availGB.toFixed(2)} GB`
export const weightsFormat = () => "Using model weights format ['*.safetensors']"
/** tqdm bar as it appears once split on `\r` (the classifier reads the last segment). */
export const shardProgress = (done: number, total: number, elapsedS = 1) =>
  `Loading safetensors checkpoint shards: ${String(Math.floor((done / total) * 100)).padStart(3)}% Completed | ${done}/${total} [00:${pad2(elapsedS)}<00:00,  1.50it/s]`
export const loadWeightEnd = (o: {
  elapsedS: number
  modelClass: string
  availGB: number
  usageGB: number
}) =>
  `Load weight end. elapsed=${o.elapsedS.toFixed(2)} s, type=${o.modelClass}, avail mem=${o.availGB.toFixed(2)} GB, mem usage=${o.usageGB.toFixed(2)} GB.`
export const mambaCache = (o: { size: number; convGB: number; ssmGB: number; speculative: boolean }) =>
  `Mamba Cache is allocated. max_mamba_cache_size: ${o.size}, conv_state size: ${o.convGB.toFixed(2)}GB, ssm_state size: ${o.ssmGB.toFixed(2)}GB ` +
  (o.speculative
    ? "intermediate_ssm_state_cache size: 1.20GB intermediate_conv_window_cache size: 0.05GB"
    : "")
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
export const uvicornStartup = () => [
  "INFO:     Waiting for application startup.",
  "INFO:     Application startup complete."
]
export const uvicornRunning = (host: string, port: number) =>
  `INFO:     Uvicorn running on http://${host}:${port} (Press CTRL+C to quit)`
export const accessLine = (method: string, path: string, status: number) =>
  `INFO:     127.0.0.1:50412 - "${method} ${path} HTTP/1.1" ${status} OK`
export const prefillBatch = (newTokens: number) =>
  `Prefill batch, #new-seq: 1, #new-token: ${newTokens}, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, `
export const decodeBatch = (o: {
  running: number
  tokens: number
  usage: number
  throughput: number
  accept?: number
}) =>
  `Decode batch, #running-req: ${o.running}, #token: ${o.tokens}, token usage: ${o.usage.toFixed(2)}, ` +
  (o.accept === undefined
    ? ""
    : `accept len: ${o.accept.toFixed(2)}, accept rate: ${(o.accept / 4).toFixed(2)}, `) +
  `cuda graph: True, gen throughput (token/s): ${o.throughput.toFixed(2)}, #queue-req: 0, `
export const ready = () => "The server is fired up and ready to roll!"
