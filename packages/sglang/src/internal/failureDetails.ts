/**
 * The details of a recognised failure: fixes, flags, the assert and ValueError readings, and
 * the link from a late generic error back to an early ignored import error.
 * @internal
 */

import type { EvidenceLine } from "../Failures.js"
import * as F from "../Failures.js"
import type { Phase } from "./phase.js"
import { flagOf } from "./rules/helpers.js"
import type { Traceback } from "./traceback.js"

export interface Context {
  readonly memFractionStatic: number | undefined
  /** `Ignore import error when loading ...` lines seen so far */
  readonly importErrors: ReadonlyArray<EvidenceLine>
}

export type Base = { evidence: Array<EvidenceLine>; process: string; phase: Phase }

export const round2 = (n: number) => Math.round(n * 100) / 100
export const toGiB = (value: string, unit: string) =>
  round2(unit === "MiB" ? Number(value) / 1024 : Number(value))
const FLAG = /--[a-z][a-z0-9-]*[a-z0-9]/g
export const flagsIn = (text: string): Array<string> => [...new Set(text.match(FLAG) ?? [])]
/** A signal number as its name (`9` -> `SIGKILL`). */
const SIGNALS: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  15: "SIGTERM"
}
export const signalName = (n: number) => SIGNALS[n] ?? `signal ${n}`

export const firstLine = (text: string) => {
  const nl = text.indexOf("\n")
  return nl === -1 ? text : text.slice(0, nl)
}

export const memFraction = (ctx: Context) =>
  ctx.memFractionStatic === undefined ? {} : { memFractionStatic: ctx.memFractionStatic }

export const oomFix = (phase: Phase, captureFailed: boolean, ctx: Context): F.Fix => {
  const lower = round2(Math.max(0.5, (ctx.memFractionStatic ?? 0.85) - 0.05))
  if (captureFailed || phase === "cuda-graph" || phase === "draft-cuda-graph")
    return { flags: { "--cuda-graph-max-bs": 16, "--mem-fraction-static": lower } }
  if (phase === "weights-loading" || phase === "distributed-init" || phase === "draft-weights")
    return { action: "the weights do not fit: use more GPUs (--tp-size) or a quantized checkpoint" }
  return { flags: { "--mem-fraction-static": lower } }
}

export const cudaFix = (text: string): F.Fix =>
  /no kernel image|compute capability|Ampere|Unsupported gpu architecture/.test(text)
    ? {
        action:
          "this GPU's compute capability is not supported by the installed kernels: use a build for this GPU or another backend"
      }
    : /driver/i.test(text)
      ? { action: "update the NVIDIA driver to match the installed CUDA/PyTorch" }
      : /ECC|Xid/.test(text)
        ? { action: "GPU hardware fault: check nvidia-smi -q for ECC errors and reset or drain the GPU" }
        : { action: "rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel" }

/** Known bare asserts and the fix for them; other asserts get flags from their source. */
export const assertion = (tb: Traceback, base: Base, message: string): F.AssertionFailure => {
  const last = tb.frames[tb.frames.length - 1]
  const source = last
    ? last.source.join(" ").replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")")
    : ""
  const fields = [
    ...source.matchAll(/(?:self\.|server_args\.|args\.)?\b([a-z]+(?:_[a-z0-9]+)+)\b(?!\s*\()/g)
  ].map((m) => flagOf(m[1]!))
  const flags = [...new Set([...fields, ...flagsIn(message)])]
  // the only bare assert in _handle_speculative_decoding is the all-or-nothing triple (rules R12);
  // older Pythons show just its first source line, `assert (`
  const speculative =
    (source.includes("speculative_eagle_topk") && source.includes("speculative_num_draft_tokens")) ||
    (last?.func === "_handle_speculative_decoding" && message.trim() === "")
  if (speculative)
    for (const f of ["--speculative-eagle-topk", "--speculative-num-draft-tokens"])
      if (!flags.includes(f)) flags.push(f)
  if (/is not divisible by/.test(message) && !flags.includes("--tp-size")) flags.push("--tp-size")
  if (speculative && !flags.includes("--speculative-num-steps")) flags.push("--speculative-num-steps")
  const what = speculative
    ? `bare assert \`${source || "assert (...)"}\`: --speculative-eagle-topk or --speculative-num-draft-tokens was given without --speculative-num-steps; SGLang wants all three or none`
    : message.trim() === ""
      ? `bare assert: ${source || "(source not shown)"}`
      : firstLine(message)
  return new F.AssertionFailure({
    ...base,
    reason: `AssertionError (${what})`,
    file: last?.file ?? "",
    line: last?.line ?? 0,
    function: last?.func ?? "",
    source,
    flags,
    ...(speculative
      ? {
          fix: {
            flags: { "--speculative-num-steps": 1, "--speculative-eagle-topk": 1 },
            action:
              "give --speculative-num-steps and --speculative-eagle-topk together with --speculative-num-draft-tokens, or none of the three"
          }
        }
      : {})
  })
}

export const invalidArgument = (
  tb: Traceback,
  base: Base,
  final: Traceback["exceptions"][number]
): F.InvalidArgument => {
  const message = firstLine(final.message)
  if (final.type === "TypeError" && /'>' not supported between instances of 'NoneType'/.test(message)) {
    const spec = tb.frames.some((f) => f.func.includes("speculative"))
    if (spec)
      return new F.InvalidArgument({
        ...base,
        reason: `${final.type}: ${message}`,
        flags: ["--speculative-num-steps", "--speculative-eagle-topk"],
        fix: { flags: { "--speculative-eagle-topk": 1 } }
      })
  }
  return new F.InvalidArgument({
    ...base,
    reason: `${final.type}: ${message}`,
    flags: flagsIn(final.message)
  })
}

/** An earlier `Ignore import error` line that explains this failure, if any. */
export const linkImportError = (
  ctx: Context,
  text: string,
  names: ReadonlyArray<string>
): EvidenceLine | undefined => {
  if (ctx.importErrors.length === 0) return undefined
  const normalized = names.map((n) => n.toLowerCase().replace(/[^a-z0-9]/g, ""))
  let weak: EvidenceLine | undefined
  for (const entry of ctx.importErrors) {
    const m = /loading ([\w.]+)[:.] (.*)$/.exec(entry.text)
    if (!m) continue
    const module = m[1]!.slice(m[1]!.lastIndexOf(".") + 1)
    const key = module.toLowerCase().replace(/[^a-z0-9]/g, "")
    const stem = module.split("_")[0]!.toLowerCase()
    if (normalized.some((n) => n.startsWith(key))) return entry
    const missing = /named '([^']+)'|import name '([^']+)'/.exec(m[2]!)
    const missingName = missing ? (missing[1] ?? missing[2]) : undefined
    if (missingName && text.includes(missingName)) return entry
    if (!weak && stem.length >= 3 && normalized.some((n) => n.startsWith(stem))) weak = entry
  }
  return weak
}

export const dependency = (
  base: Base,
  linked: EvidenceLine | undefined,
  reason: string,
  name?: string
): F.DependencyError => {
  const early = linked ? /loading ([\w.]+)[:.] (.*)$/.exec(linked.text) : null
  const module = name ?? early?.[1]
  return new F.DependencyError({
    ...base,
    evidence: linked ? [linked, ...base.evidence] : base.evidence,
    reason: early
      ? `${early[2]} (SGLang ignored this import error at line ${linked!.line}; later: ${reason})`
      : reason,
    ...(module ? { module } : {}),
    fix: {
      action:
        "install the missing package or the versions this SGLang release pins (pip install 'sglang[all]==<version>')"
    }
  })
}

/** The lines to cite for a traceback: where it was reported, the innermost frame, the exceptions. */
export const tracebackEvidence = (tb: Traceback): Array<EvidenceLine> => {
  const out: Array<EvidenceLine> = [tb.header]
  const last = tb.frames[tb.frames.length - 1]
  if (last) {
    out.push({ line: last.at, text: `  File "${last.file}", line ${last.line}, in ${last.func}` })
    for (const l of last.sourceLines.slice(0, 6)) out.push(l)
  }
  for (const e of tb.exceptions) for (const l of e.lines) if (l.line !== tb.header.line) out.push(l)
  return out.slice(0, 24)
}

/** CUDA allocation failures, the KV-pool `Not enough memory`, a memory-caused graph capture failure, imbalance. */
export const memoryFailure = (tb: Traceback, base: Base, ctx: Context): F.OOM | undefined => {
  const text = tb.text
  const final = tb.exceptions[tb.exceptions.length - 1]!
  const captureFailed = text.includes("Capture cuda graph failed") || text.includes("Piecewise CUDA Graph")
  if (
    text.includes("CUDA out of memory") ||
    text.includes("OutOfMemoryError") ||
    text.includes("CUDA error: out of memory")
  ) {
    const tried = /Tried to allocate ([\d.]+) (GiB|MiB)/.exec(text)
    const total = /GPU (\d+) has a total capacity of ([\d.]+) (GiB|MiB)/.exec(text)
    const free = /of which ([\d.]+) (GiB|MiB) is free/.exec(text)
    const oomLine = tb.exceptions.find((e) => e.message.includes("out of memory")) ?? final
    return new F.OOM({
      ...base,
      kind: captureFailed ? "cuda-graph" : "cuda-alloc",
      reason: `${oomLine.type}: ${firstLine(oomLine.message).replace(/ Including non-PyTorch.*$/, "")}`,
      ...(total ? { gpu: Number(total[1]), totalGiB: toGiB(total[2]!, total[3]!) } : {}),
      ...(tried ? { triedGiB: toGiB(tried[1]!, tried[2]!) } : {}),
      ...(free ? { freeGiB: toGiB(free[1]!, free[2]!) } : {}),
      ...memFraction(ctx),
      fix: oomFix(tb.phase, captureFailed, ctx)
    })
  }
  if (text.includes("Not enough memory. Please try to increase --mem-fraction-static")) {
    const current = /mem_fraction_static=([\d.]+)/.exec(text)
    const value = current ? Number(current[1]) : ctx.memFractionStatic
    return new F.OOM({
      ...base,
      kind: "kv-pool",
      reason: firstLine(final.message),
      ...(value === undefined ? {} : { memFractionStatic: value }),
      fix:
        value === undefined
          ? {
              action:
                "raise --mem-fraction-static (e.g. 0.85), or use more GPUs (--tp-size) or a smaller model"
            }
          : value >= 0.95
            ? {
                action:
                  "the KV cache does not fit even at 0.95: use more GPUs (--tp-size) or a smaller/quantized model"
              }
            : { flags: { "--mem-fraction-static": round2(Math.min(0.95, value + 0.05)) } }
    })
  }
  if (text.includes("The memory capacity is unbalanced")) {
    return new F.OOM({
      ...base,
      kind: "unbalanced",
      reason: firstLine(final.message),
      fix: {
        action: "free the GPUs held by other processes (nvidia-smi), or pick idle GPUs with --base-gpu-id"
      }
    })
  }

  return undefined
}

/** Flags this build refuses together (`... does not support ...`, `... only supports ...`). */
export const unsupportedCombination = (
  base: Base,
  final: Traceback["exceptions"][number]
): F.UnsupportedConfig =>
  new F.UnsupportedConfig({
    ...base,
    kind: "combination",
    reason: `${final.type}: ${firstLine(final.message)}`.replace(/: $/, ""),
    flags: flagsIn(final.message),
    fix: {
      action:
        "change one of the settings this SGLang build refuses together (see its message), or use a release that supports the combination"
    }
  })
