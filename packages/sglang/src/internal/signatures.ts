/**
 * Failure signatures: what a traceback (or a single telling line) means, as a typed failure
 * with a rank. Rank decides between several signatures in one log: a root cause (tier 3)
 * beats a distributed error that is usually its echo on another rank (tier 2), which beats an
 * unrecognised exception (tier 1), which beats the launcher's own consequences (tier 0).
 * @internal
 */
import * as F from "../Failures.js"
import type { EvidenceLine, LaunchFailure } from "../Failures.js"
import type { Phase } from "./phase.js"
import type { Traceback } from "./traceback.js"

export const ROOT = 3
export const ECHO = 2
export const UNKNOWN = 1
export const CONSEQUENCE = 0

export interface Candidate {
  readonly failure: LaunchFailure
  readonly tier: number
}

export interface Context {
  readonly memFractionStatic: number | undefined
  /** `Ignore import error when loading ...` lines seen so far */
  readonly importErrors: ReadonlyArray<EvidenceLine>
}

const round2 = (n: number) => Math.round(n * 100) / 100
const toGiB = (value: string, unit: string) => round2(unit === "MiB" ? Number(value) / 1024 : Number(value))
const FLAG = /--[a-z][a-z0-9-]*[a-z0-9]/g
const flagsIn = (text: string): Array<string> => [...new Set(text.match(FLAG) ?? [])]
const kebab = (field: string) => `--${field.replace(/_/g, "-")}`
const firstLine = (text: string) => {
  const nl = text.indexOf("\n")
  return nl === -1 ? text : text.slice(0, nl)
}

/** The lines to cite for a traceback: where it was reported, the innermost frame, the exceptions. */
const tracebackEvidence = (tb: Traceback): Array<EvidenceLine> => {
  const out: Array<EvidenceLine> = [tb.header]
  const last = tb.frames[tb.frames.length - 1]
  if (last) {
    out.push({ line: last.at, text: `  File "${last.file}", line ${last.line}, in ${last.func}` })
    for (const l of last.sourceLines.slice(0, 6)) out.push(l)
  }
  for (const e of tb.exceptions) for (const l of e.lines) if (l.line !== tb.header.line) out.push(l)
  return out.slice(0, 24)
}

/** Classifies a finished traceback. */
export const classifyTraceback = (tb: Traceback, ctx: Context): Candidate | undefined => {
  if (tb.exceptions.length === 0) return undefined
  const text = tb.text
  const final = tb.exceptions[tb.exceptions.length - 1]!
  const base = { evidence: tracebackEvidence(tb), process: tb.process, phase: tb.phase }
  const reason = `${final.type}: ${firstLine(final.message)}`.replace(/: $/, "")
  const root = (failure: LaunchFailure): Candidate => ({ failure, tier: ROOT })

  // --- memory ----------------------------------------------------------------------------
  const captureFailed = text.includes("Capture cuda graph failed") || text.includes("Piecewise CUDA Graph")
  if (text.includes("CUDA out of memory") || text.includes("OutOfMemoryError") || text.includes("CUDA error: out of memory")) {
    const tried = /Tried to allocate ([\d.]+) (GiB|MiB)/.exec(text)
    const total = /GPU (\d+) has a total capacity of ([\d.]+) (GiB|MiB)/.exec(text)
    const free = /of which ([\d.]+) (GiB|MiB) is free/.exec(text)
    const oomLine = tb.exceptions.find((e) => e.message.includes("out of memory")) ?? final
    return root(
      new F.OOM({
        ...base,
        kind: captureFailed ? "cuda-graph" : "cuda-alloc",
        reason: `${oomLine.type}: ${firstLine(oomLine.message).replace(/ Including non-PyTorch.*$/, "")}`,
        ...(total ? { gpu: Number(total[1]), totalGiB: toGiB(total[2]!, total[3]!) } : {}),
        ...(tried ? { triedGiB: toGiB(tried[1]!, tried[2]!) } : {}),
        ...(free ? { freeGiB: toGiB(free[1]!, free[2]!) } : {}),
        ...memFraction(ctx),
        fix: oomFix(tb.phase, captureFailed, ctx)
      })
    )
  }
  if (text.includes("Not enough memory. Please try to increase --mem-fraction-static")) {
    const current = /mem_fraction_static=([\d.]+)/.exec(text)
    const value = current ? Number(current[1]) : ctx.memFractionStatic
    return root(
      new F.OOM({
        ...base,
        kind: "kv-pool",
        reason: firstLine(final.message),
        ...(value === undefined ? {} : { memFractionStatic: value }),
        fix:
          value === undefined
            ? { action: "raise --mem-fraction-static (e.g. 0.85), or use more GPUs (--tp-size) or a smaller model" }
            : value >= 0.95
              ? { action: "the KV cache does not fit even at 0.95: use more GPUs (--tp-size) or a smaller/quantized model" }
              : { flags: { "--mem-fraction-static": round2(Math.min(0.95, value + 0.05)) } }
      })
    )
  }
  if (text.includes("The memory capacity is unbalanced")) {
    return root(
      new F.OOM({
        ...base,
        kind: "unbalanced",
        reason: firstLine(final.message),
        fix: { action: "free the GPUs held by other processes (nvidia-smi), or pick idle GPUs with --base-gpu-id" }
      })
    )
  }

  // --- ports -------------------------------------------------------------------------------
  if (/EADDRINUSE|[Aa]ddress already in use|is not available in \d+ seconds/.test(text)) {
    const zmq = /ZMQError|tcp:\/\/|is not available in \d+ seconds/.test(text)
    const port = /port[:=]? ?(\d{2,5})|:(\d{2,5})['")]|at (\d{2,5}) is not available/.exec(text)
    const value = port ? Number(port[1] ?? port[2] ?? port[3]) : undefined
    const kind = zmq ? "zmq" : "nccl"
    return root(
      new F.PortInUse({
        ...base,
        kind,
        reason,
        ...(value === undefined ? {} : { port: value }),
        fix:
          kind === "nccl"
            ? { action: "pass a free --nccl-port (outside the ephemeral range), or stop the process holding it" }
            : { action: "stop the other SGLang server on this host, or change --port / --dist-init-addr" }
      })
    )
  }

  // --- model ---------------------------------------------------------------------------------
  if (
    /is not a local folder and is not a valid model identifier|HFValidationError|Repo id must be in the form|RepositoryNotFoundError|We couldn't connect to 'https:\/\/huggingface.co'|does not appear to have a file named config.json/.test(
      text
    )
  ) {
    const model = /^([^\s]+) is not a local folder|'([^']+)' is not a local folder|Repo id must be in the form[^:]*: '([^']+)'/.exec(
      firstLine(final.message)
    )
    const name = model ? (model[1] ?? model[2] ?? model[3]) : undefined
    return root(
      new F.ModelNotFound({
        ...base,
        reason,
        ...(name ? { model: name } : {}),
        fix: text.includes("couldn't connect")
          ? { action: "the host cannot reach huggingface.co: download the model there first and pass its local path" }
          : { action: "check --model-path (a local directory with config.json, or an existing repo id); for a private repo log in with `hf auth login`" }
      })
    )
  }
  if (text.includes("trust_remote_code=True")) {
    return root(new F.TrustRemoteCodeRequired({ ...base, reason, fix: { flags: { "--trust-remote-code": null } } }))
  }

  // --- unsupported ----------------------------------------------------------------------------
  const arch = /Model architectures \[([^\]]*)\] are not supported/.exec(text)
  if (arch || text.includes("does not recognize this architecture")) {
    const architectures = arch ? [...arch[1]!.matchAll(/'([^']+)'/g)].map((m) => m[1]!) : []
    const linked = linkImportError(ctx, architectures.join(" "), architectures)
    if (linked) return root(dependency(base, linked, reason))
    return root(
      new F.UnsupportedConfig({
        ...base,
        kind: "architecture",
        reason,
        architectures,
        fix: { action: "upgrade SGLang (and transformers) to a release that supports this model" }
      })
    )
  }
  if (/only supported backends? on|backend is only supported on|not supported .*backend|backend .*not supported/.test(text)) {
    return root(
      new F.UnsupportedConfig({
        ...base,
        kind: "backend",
        reason,
        fix: text.includes("hybrid GDN")
          ? { flags: { "--attention-backend": "triton" } }
          : { action: "choose another --attention-backend for this GPU" }
      })
    )
  }

  // --- ServerArgs ---------------------------------------------------------------------------------
  if (text.includes("is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer")) {
    const a = /Speculative decoding for (\w+) is not compatible/.exec(text)
    return root(
      new F.MissingSchedulerStrategy({
        ...base,
        reason: firstLine(final.message),
        ...(a ? { architecture: a[1]! } : {}),
        fix: { flags: { "--mamba-scheduler-strategy": "extra_buffer" } }
      })
    )
  }
  if (final.type === "AssertionError") return root(assertion(tb, base, final.message))

  // --- dependencies -------------------------------------------------------------------------------
  const dep =
    /(ModuleNotFoundError|ImportError): (?:No module named '([^']+)'|cannot import name '([^']+)')|undefined symbol: (\S+)|Error building extension '([^']+)'|ninja: build stopped|nvcc fatal|Failed to (?:compile|build)|has no attribute '([^']+)'/.exec(
      text
    )
  if (dep) {
    const name = dep[2] ?? dep[3] ?? dep[4] ?? dep[5] ?? dep[6]
    const linked = linkImportError(ctx, text, name ? [name] : [])
    return root(dependency(base, linked, reason, name))
  }

  // --- CUDA ------------------------------------------------------------------------------------------
  if (
    /CUDA error|CUDA driver|no kernel image is available|No CUDA GPUs are available|NVIDIA driver|ECC error|cudaError|device-side assert|compute capability|only supports Ampere|Unsupported gpu architecture/.test(
      text
    )
  ) {
    return root(new F.CudaError({ ...base, reason, fix: cudaFix(text) }))
  }
  if (captureFailed) {
    return root(
      new F.CudaError({
        ...base,
        reason,
        fix: { action: "CUDA graph capture failed: try --cuda-graph-max-bs 16, or --disable-cuda-graph (slow)" }
      })
    )
  }

  // --- distributed (often the echo of another rank's failure) ------------------------------
  if (/NCCL|DistBackendError|DistStoreError|torch\.distributed|ProcessGroup|TCPStore|Gloo/.test(text)) {
    return {
      tier: ECHO,
      failure: new F.DistributedError({
        ...base,
        reason,
        fix: { action: "rerun with NCCL_DEBUG=INFO; check that all GPUs are visible and idle (nvidia-smi topo -m)" }
      })
    }
  }

  // --- invalid arguments ------------------------------------------------------------------------------
  if (text.includes("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")) {
    return root(
      new F.InvalidArgument({
        ...base,
        reason,
        flags: ["--context-length"],
        fix: { action: "lower --context-length to the model's limit, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" }
      })
    )
  }
  const inServerArgs = tb.frames.some(
    (f) => f.file.endsWith("server_args.py") || f.func === "__post_init__" || f.func === "check_server_args"
  )
  if ((final.type === "ValueError" || final.type === "TypeError") && (inServerArgs || flagsIn(final.message).length > 0)) {
    return root(invalidArgument(tb, base, final))
  }

  if (tb.header.text.includes("warmup error") && /Timeout|timed out|timeout/.test(text)) {
    return root(
      new F.StartupStalled({
        ...base,
        reason: `warmup request timed out: ${reason}`,
        fix: { action: "the first request did not finish: check the scheduler lines above; raise SGLANG_WARMUP_TIMEOUT if the model is only slow" }
      })
    )
  }
  // --- the launcher reporting a child's death: a consequence ---------------------------------
  const died = /Rank (\d+) scheduler died during initialization \(exit code: (-?\d+)\)/.exec(text)
  if (died) {
    const code = Number(died[2])
    return {
      tier: CONSEQUENCE,
      failure: new F.ProcessExited({
        ...base,
        process: `rank ${died[1]}`,
        reason: firstLine(final.message),
        ...(code < 0 ? { signal: code === -9 ? "SIGKILL" : `signal ${-code}` } : { exitCode: code }),
        ...(code === -9 ? { fix: { action: "likely the OS OOM killer (host RAM): check `dmesg -T | grep -i oom`" } } : {})
      })
    }
  }
  const generic = text.includes("Initialization failed") || text.includes("Please see the error messages above")
  const linked = linkImportError(ctx, text, [])
  if (linked && !generic) return root(dependency(base, linked, reason))
  return {
    tier: generic ? CONSEQUENCE : UNKNOWN,
    failure: new F.ProcessExited({ ...base, reason })
  }
}

const memFraction = (ctx: Context) =>
  ctx.memFractionStatic === undefined ? {} : { memFractionStatic: ctx.memFractionStatic }

const oomFix = (phase: Phase, captureFailed: boolean, ctx: Context): F.Fix => {
  const lower = round2(Math.max(0.5, (ctx.memFractionStatic ?? 0.85) - 0.05))
  if (captureFailed || phase === "cuda-graph" || phase === "draft-cuda-graph")
    return { flags: { "--cuda-graph-max-bs": 16, "--mem-fraction-static": lower } }
  if (phase === "weights-loading" || phase === "distributed-init" || phase === "draft-weights")
    return { action: "the weights do not fit: use more GPUs (--tp-size) or a quantized checkpoint" }
  return { flags: { "--mem-fraction-static": lower } }
}

const cudaFix = (text: string): F.Fix =>
  /no kernel image|compute capability|Ampere|Unsupported gpu architecture/.test(text)
    ? { action: "this GPU's compute capability is not supported by the installed kernels: use a build for this GPU or another backend" }
    : /driver/i.test(text)
      ? { action: "update the NVIDIA driver to match the installed CUDA/PyTorch" }
      : /ECC|Xid/.test(text)
        ? { action: "GPU hardware fault: check nvidia-smi -q for ECC errors and reset or drain the GPU" }
        : { action: "rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel" }

/** Known bare asserts and the fix for them; other asserts get flags from their source. */
const assertion = (tb: Traceback, base: Base, message: string): F.AssertionFailure => {
  const last = tb.frames[tb.frames.length - 1]
  const source = last
    ? last.source
        .join(" ")
        .replace(/\s+/g, " ")
        .replace(/\( /g, "(")
        .replace(/ \)/g, ")")
    : ""
  const fields = [...source.matchAll(/(?:self\.|server_args\.|args\.)?\b([a-z]+(?:_[a-z0-9]+)+)\b(?!\s*\()/g)].map((m) =>
    kebab(m[1]!)
  )
  const flags = [...new Set([...fields, ...flagsIn(message)])]
  // the only bare assert in _handle_speculative_decoding is the all-or-nothing triple (rules R12);
  // older Pythons show just its first source line, `assert (`
  const speculative =
    (source.includes("speculative_eagle_topk") && source.includes("speculative_num_draft_tokens")) ||
    (last?.func === "_handle_speculative_decoding" && message.trim() === "")
  if (speculative) for (const f of ["--speculative-eagle-topk", "--speculative-num-draft-tokens"]) if (!flags.includes(f)) flags.push(f)
  if (/is not divisible by/.test(message) && !flags.includes("--tp-size")) flags.push("--tp-size")
  if (speculative && !flags.includes("--speculative-num-steps")) flags.push("--speculative-num-steps")
  const what = message.trim() === "" ? `bare assert: ${source || "(source not shown)"}` : firstLine(message)
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

type Base = { evidence: Array<EvidenceLine>; process: string; phase: Phase }

const invalidArgument = (tb: Traceback, base: Base, final: Traceback["exceptions"][number]): F.InvalidArgument => {
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
  return new F.InvalidArgument({ ...base, reason: `${final.type}: ${message}`, flags: flagsIn(final.message) })
}

/** An earlier `Ignore import error` line that explains this failure, if any. */
const linkImportError = (ctx: Context, text: string, names: ReadonlyArray<string>): EvidenceLine | undefined => {
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

const dependency = (base: Base, linked: EvidenceLine | undefined, reason: string, name?: string): F.DependencyError => {
  const early = linked ? /loading ([\w.]+)[:.] (.*)$/.exec(linked.text) : null
  const module = name ?? early?.[1]
  return new F.DependencyError({
    ...base,
    evidence: linked ? [linked, ...base.evidence] : base.evidence,
    reason: early ? `${early[2]} (SGLang ignored this import error at line ${linked!.line}; later: ${reason})` : reason,
    ...(module ? { module } : {}),
    fix: { action: "install the missing package or the versions this SGLang release pins (pip install 'sglang[all]==<version>')" }
  })
}
