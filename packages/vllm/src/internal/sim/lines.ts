/**
 * vLLM's log lines as the simulated server prints them (reference §2): the header
 * `INFO MM-DD HH:MM:SS [file.py:line] `, and the engine core's `(EngineCore_DP0 pid=N) ` tag.
 *
 * @internal
 */

const pad = (n: number) => String(n).padStart(2, "0")

export type Level = "INFO" | "WARNING" | "ERROR"

/** One line: `INFO 12-16 10:00:00 [gpu_worker.py:376] message`, tagged when a worker prints it. */
export const line = (
  epochMs: number,
  level: Level,
  file: string,
  message: string,
  worker?: string
): string => {
  const d = new Date(epochMs)
  const stamp = `${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  return `${worker === undefined ? "" : `(${worker}) `}${level} ${stamp} [${file}] ${message}`
}

/** Python's repr of a flat dict of scalars and lists (`non-default args: {...}`). */
export const pyRepr = (value: unknown): string => {
  if (value === null || value === undefined) return "None"
  if (value === true) return "True"
  if (value === false) return "False"
  if (typeof value === "number") return String(value)
  if (typeof value === "string") return `'${value.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `'${k}': ${pyRepr(v)}`)
    .join(", ")}}`
}

/** The start-up messages in order, with the file each comes from and the real time before it (ms). */
export const startup = (o: {
  readonly version: string
  readonly args: Readonly<Record<string, unknown>>
  readonly architecture: string
  readonly maxModelLen: number
  readonly model: string
  readonly weightsGiB: number
  readonly kvGiB: number
  readonly kvTokens: number
  readonly port: number
  readonly host: string
}): ReadonlyArray<{
  readonly ms: number
  readonly file: string
  readonly message: string
  readonly worker?: boolean
}> => [
  { ms: 0, file: "api_server.py:1351", message: `vLLM API server version ${o.version}` },
  { ms: 10, file: "utils.py:253", message: `non-default args: ${pyRepr(o.args)}` },
  { ms: 1500, file: "model.py:514", message: `Resolved architecture: ${o.architecture}` },
  { ms: 10, file: "model.py:1661", message: `Using max model len ${o.maxModelLen}` },
  {
    ms: 3000,
    file: "gpu_model_runner.py:2602",
    message: `Starting to load model ${o.model}...`,
    worker: true
  },
  { ms: 20000, file: "default_loader.py:267", message: "Loading weights took 19.84 seconds", worker: true },
  {
    ms: 300,
    file: "gpu_model_runner.py:2653",
    message: `Model loading took ${o.weightsGiB.toFixed(4)} GiB memory and 20.412316 seconds`,
    worker: true
  },
  { ms: 9000, file: "monitor.py:34", message: "torch.compile takes 8.95 s in total", worker: true },
  {
    ms: 1500,
    file: "gpu_worker.py:376",
    message: `Available KV cache memory: ${o.kvGiB.toFixed(2)} GiB`,
    worker: true
  },
  {
    ms: 50,
    file: "kv_cache_utils.py:1291",
    message: `GPU KV cache size: ${o.kvTokens.toLocaleString("en-US")} tokens`,
    worker: true
  },
  {
    ms: 5,
    file: "kv_cache_utils.py:1296",
    message: `Maximum concurrency for ${o.maxModelLen.toLocaleString("en-US")} tokens per request: ${(o.kvTokens / o.maxModelLen).toFixed(2)}x`,
    worker: true
  },
  {
    ms: 6000,
    file: "",
    message:
      "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:05<00:00, 12.41it/s]"
  },
  {
    ms: 50,
    file: "gpu_model_runner.py:3480",
    message: "Graph capturing finished in 6 secs, took 0.52 GiB",
    worker: true
  },
  {
    ms: 100,
    file: "core.py:210",
    message: "init engine (profile, create kv cache, warmup model) took 38.20 seconds",
    worker: true
  },
  { ms: 300, file: "api_server.py:1634", message: "Supported tasks: ['generate']" },
  { ms: 20, file: "api_server.py:1912", message: `Starting vLLM API server 0 on http://${o.host}:${o.port}` },
  { ms: 1, file: "launcher.py:34", message: "Available routes are:" },
  { ms: 1, file: "launcher.py:42", message: "Route: /health, Methods: GET" },
  { ms: 1, file: "launcher.py:42", message: "Route: /v1/models, Methods: GET" },
  { ms: 1, file: "launcher.py:42", message: "Route: /v1/completions, Methods: POST" }
]

/** uvicorn's own lines (no vLLM header). */
export const uvicorn = (pid: number): ReadonlyArray<string> => [
  `INFO:     Started server process [${pid}]`,
  "INFO:     Waiting for application startup.",
  "INFO:     Application startup complete."
]
