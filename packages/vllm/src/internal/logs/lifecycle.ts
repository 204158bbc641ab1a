/**
 * vLLM's start-up lines (reference §2, V0 and V1 wordings) as lifecycle phases and events:
 * version and args → `starting`/`args-resolved`, the worker's rank line → `distributed-init`,
 * `Starting to load model` → `weights-loading`, `Model loading took` → `weights-loaded`, the
 * KV-cache sizing lines → `kv-cache` (and a `Capacity` event), CUDA-graph capture →
 * `cuda-graph`, `Starting vLLM API server` → `http-up` (`Listening`), uvicorn's `Application
 * startup complete.` → `ready` (the socket was bound long before: only now does it answer).
 *
 * @internal
 */
import type { LifecycleReader, LifecycleSink, NormalizedLine } from "@mlops/serve/Classifier"
import type { ArgValue, Phase } from "@mlops/serve/LaunchEvent"
import { parsePythonLiteral } from "../pythonLiteral.js"

/** `162,800` → 162800. */
const count = (text: string | undefined): number => Number((text ?? "0").replaceAll(",", ""))

const scalar = (v: unknown): ArgValue =>
  v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean"
    ? v
    : JSON.stringify(v)

/** `non-default args: {'model': 'Qwen/Qwen3-8B', 'tensor_parallel_size': 2}` → values. */
const nonDefaultArgs = (repr: string): Record<string, ArgValue> => {
  const parsed = parsePythonLiteral(repr.trim())
  if (!parsed.ok || typeof parsed.value !== "object" || parsed.value === null) return {}
  return Object.fromEntries(Object.entries(parsed.value).map(([k, v]) => [k, scalar(v)]))
}

interface Sizing {
  tokens: number
  gib: number
}

/** Lines whose start names a phase, tried in order on the message text. */
const PHASE_STARTS: ReadonlyArray<readonly [string | RegExp, Phase]> = [
  ["vLLM API server version", "starting"],
  ["Resolved architecture:", "args-resolved"],
  ["Using max model len", "args-resolved"],
  ["args: Namespace(", "args-resolved"],
  [/^world_size=\d+ rank=\d+|^rank \d+ in world size \d+ is assigned/, "distributed-init"],
  ["Starting to load model", "weights-loading"],
  ["Loading weights took", "weights-loaded"],
  ["Model loading took", "weights-loaded"],
  ["Memory profiling takes", "kv-cache"],
  ["Available KV cache memory:", "kv-cache"],
  ["GPU KV cache size:", "kv-cache"],
  ["Capturing cudagraphs", "cuda-graph"],
  ["Capturing CUDA graph", "cuda-graph"]
]

const phaseOf = (text: string): Phase | undefined => {
  for (const [start, phase] of PHASE_STARTS)
    if (typeof start === "string" ? text.startsWith(start) : start.test(text)) return phase
  return undefined
}

class VllmLifecycle implements LifecycleReader {
  private readonly sizing: Sizing = { tokens: 0, gib: 0 }

  /** An SGLang log read with both engines' readers: its uvicorn lines come before its warmup. */
  private sglang = false

  line(n: NormalizedLine, no: number, sink: LifecycleSink): boolean {
    if (n.sglangAt >= 0) this.sglang = true
    if (this.sglang) return false
    const text = n.text.trimEnd()
    const process = n.process ?? "launcher"
    const phase = phaseOf(text)
    if (phase !== undefined) this.reach(sink, phase, process, n.line, no)
    if (text.startsWith("non-default args:")) {
      this.reach(sink, "args-resolved", process, n.line, no)
      sink.emit({
        _tag: "ServerArgsLine",
        values: nonDefaultArgs(text.slice("non-default args:".length)),
        line: no
      })
      return true
    }
    const available = /^Available KV cache memory: ([\d.]+) GiB/.exec(text)
    if (available !== null) this.sizing.gib = Number(available[1])
    const reserved = /the rest of the memory reserved for KV Cache is ([\d.]+) ?GiB/.exec(text)
    if (reserved !== null) {
      this.sizing.gib = Number(reserved[1])
      this.reach(sink, "kv-cache", process, n.line, no)
    }
    const size = /^GPU KV cache size: ([\d,]+) tokens/.exec(text)
    if (size !== null) this.sizing.tokens = count(size[1])
    const concurrency = /^Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x/.exec(text)
    if (concurrency !== null) {
      this.reach(sink, "kv-cache", process, n.line, no)
      const perRequest = count(concurrency[1])
      sink.emit({
        _tag: "Capacity",
        maxTotalNumTokens: this.sizing.tokens || Math.round(perRequest * Number(concurrency[2])),
        // how many full-length requests fit at once, as vLLM reports it
        maxRunningRequests: Math.floor(Number(concurrency[2])),
        contextLen: perRequest,
        availableGpuMemGB: this.sizing.gib,
        line: no
      })
    }
    const api = /^Starting vLLM API server(?: \d+)? on (\S+)/.exec(text)
    if (api !== null) {
      this.reach(sink, "http-up", process, n.line, no)
      sink.emit({ _tag: "Listening", url: api[1]!, line: no })
      return true
    }
    if (/^(?:INFO:\s+)?Application startup complete\./.test(text)) {
      this.reach(sink, "ready", process, n.line, no)
      return true
    }
    return phase !== undefined
  }

  private reach(sink: LifecycleSink, phase: Phase, process: string, line: string, no: number) {
    sink.reach(phase, process, line, no)
  }
}

export const reader = (): LifecycleReader => new VllmLifecycle()
