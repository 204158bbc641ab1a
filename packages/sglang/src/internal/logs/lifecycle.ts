/**
 * SGLang's lifecycle lines (those with its `[date time( PREFIX)]` header) as phases, resolved
 * args, capacity, warnings and auto-adjustments, reported to the neutral classifier's sink.
 * @internal
 */
import type { LifecycleReader, LifecycleSink, NormalizedLine } from "@mlops/serve/Classifier"
import type { Capacity } from "@mlops/serve/LaunchEvent"
import { headerProcess } from "@mlops/serve/LogLine"
import { parseServerArgs } from "../serverArgsRepr.js"

const startsAt = (line: string, at: number, prefix: string) => line.startsWith(prefix, at)

/** Rank 0's `max_total_num_tokens=..., max_running_requests=..., context_len=..., available_gpu_mem=... GB`. */
export const capacityEvent = (line: string, at: number, no: number): Capacity => {
  const message = line.slice(at)
  const get = (key: string) => {
    const m = new RegExp(`${key}=([\\d.]+)`).exec(message)
    return m ? Number(m[1]) : 0
  }
  return {
    _tag: "Capacity",
    maxTotalNumTokens: get("max_total_num_tokens"),
    maxRunningRequests: get("max_running_requests"),
    contextLen: get("context_len"),
    availableGpuMemGB: get("available_gpu_mem"),
    line: no
  }
}

const uvicorn = (line: string, at: number, no: number, sink: LifecycleSink) => {
  const running = line.indexOf("Uvicorn running on ", at)
  if (running !== -1) {
    const url = line.slice(running + 19).split(" ")[0]!
    sink.reach("http-up", "launcher", line, no)
    return sink.emit({ _tag: "Listening", url, line: no })
  }
  if (sink.phase() === "http-up" && /"POST \/(generate|v1\/chat\/completions|encode)/.test(line))
    sink.reach("warmup", "launcher", line, no)
}

const serverArgs = (line: string, at: number, no: number, sink: LifecycleSink) => {
  const values = parseServerArgs(line, at + "server_args=ServerArgs(".length)
  sink.reach("args-resolved", "launcher", line, no)
  sink.emit({ _tag: "ServerArgsLine", values, line: no })
}

/**
 * One headed line; dispatches on the message's first letter to stay cheap. `pastKvCache`: the
 * processes (scheduler ranks, `TP3`) that allocated their KV cache: a `Load weight begin` of one
 * of them is its draft model's; another rank's is its own target weights, still loading (the
 * ranks' lines interleave in one log).
 */
const headed = (line: string, at: number, no: number, sink: LifecycleSink, pastKvCache: Set<string>) => {
  const process = headerProcess(line, at)
  const phase = sink.phase()
  const c = line.charCodeAt(at)
  if (c === 73 /* I */) {
    if (startsAt(line, at, "Init torch distributed begin"))
      return sink.reach("distributed-init", process, line, no)
    if (startsAt(line, at, "Ignore import error when loading"))
      return sink.emit({ _tag: "Warning", text: line.slice(at), process, line: no })
    if (startsAt(line, at, "INFO:")) return uvicorn(line, at, no, sink)
  } else if (c === 76 /* L */) {
    if (startsAt(line, at, "Load weight begin"))
      return sink.reach(pastKvCache.has(process) ? "draft-weights" : "weights-loading", process, line, no)
    if (startsAt(line, at, "Load weight end")) return sink.reach("weights-loaded", process, line, no)
  } else if (c === 67 /* C */) {
    if (startsAt(line, at, "Capture draft")) return sink.reach("draft-cuda-graph", process, line, no)
    if (
      startsAt(line, at, "Capture cuda graph begin") ||
      startsAt(line, at, "Capture piecewise CUDA graph begin")
    )
      return sink.reach(phase === "draft-weights" ? "draft-cuda-graph" : "cuda-graph", process, line, no)
  } else if (c === 75 /* K */ && startsAt(line, at, "KV Cache is allocated")) {
    pastKvCache.add(process)
    return sink.reach(phase === "draft-weights" ? "draft-weights" : "kv-cache", process, line, no)
  } else if (c === 77 /* M */ && startsAt(line, at, "Mamba Cache is allocated")) {
    return sink.reach(phase === "draft-weights" ? "draft-weights" : "mamba-cache", process, line, no)
  } else if (c === 80 /* P */) {
    if (startsAt(line, at, "Prefill batch")) return sink.reach("warmup", process, line, no)
  } else if (c === 115 /* s */ && startsAt(line, at, "server_args=ServerArgs(")) {
    return serverArgs(line, at, no, sink)
  } else if (c === 109 /* m */ && startsAt(line, at, "max_total_num_tokens=")) {
    return sink.emit(capacityEvent(line, at, no))
  } else if (c === 84 /* T */ && startsAt(line, at, "The server is fired up and ready to roll")) {
    return sink.reach("ready", process, line, no)
  }
  if (
    line.includes("memory capacity is unbalanced") ||
    line.includes("Health check failed") ||
    line.includes("Port is already in use")
  ) {
    return sink.emit({ _tag: "Warning", text: line.slice(at), process, line: no })
  }
  // ServerArgs prints its auto-adjustments before the resolved args line
  if (phase === "starting" && process === "launcher" && !line.includes("hit an exception")) {
    sink.emit({ _tag: "Adjustment", text: line.slice(at), line: no })
  }
}

/** SGLang's reader: every line with its header is its own. */
export const reader = (): LifecycleReader => {
  const pastKvCache = new Set<string>()
  return {
    line: (n: NormalizedLine, no, sink) => {
      if (n.sglangAt < 0) return false
      headed(n.line, n.sglangAt, no, sink, pastKvCache)
      return true
    }
  }
}
