/**
 * Failure signatures: what a traceback (or a single telling line) means, as a typed failure
 * with a rank. Rank decides between several signatures in one log: a root cause (tier 3)
 * beats a distributed error that is usually its echo on another rank (tier 2), which beats an
 * unrecognised exception (tier 1), which beats the launcher's own consequences (tier 0).
 * @internal
 */

import type { LaunchFailure } from "../Failures.js"
import * as F from "../Failures.js"
import { argumentFailureTag, saysMissingSchedulerStrategy, saysUnsupported } from "./argumentFailure.js"
import {
  assertion,
  type Context,
  cudaFix,
  dependency,
  firstLine,
  flagsIn,
  invalidArgument,
  linkImportError,
  memoryFailure,
  signalName,
  tracebackEvidence,
  unsupportedCombination
} from "./failureDetails.js"
import type { Traceback } from "./traceback.js"

export type { Context } from "./failureDetails.js"

export const ROOT = 3
export const ECHO = 2
export const UNKNOWN = 1
export const CONSEQUENCE = 0

export interface Candidate {
  readonly failure: LaunchFailure
  readonly tier: number
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
  const memory = memoryFailure(tb, base, ctx)
  if (memory) return root(memory)

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
            ? {
                action:
                  "pass a free --nccl-port (outside the ephemeral range), or stop the process holding it"
              }
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
    const model =
      /^([^\s]+) is not a local folder|'([^']+)' is not a local folder|Repo id must be in the form[^:]*: '([^']+)'/.exec(
        firstLine(final.message)
      )
    const name = model ? (model[1] ?? model[2] ?? model[3]) : undefined
    return root(
      new F.ModelNotFound({
        ...base,
        reason,
        ...(name ? { model: name } : {}),
        fix: text.includes("couldn't connect")
          ? {
              action:
                "the host cannot reach huggingface.co: download the model there first and pass its local path"
            }
          : {
              action:
                "check --model-path (a local directory with config.json, or an existing repo id); for a private repo log in with `hf auth login`"
            }
      })
    )
  }
  if (text.includes("trust_remote_code=True")) {
    return root(
      new F.TrustRemoteCodeRequired({ ...base, reason, fix: { flags: { "--trust-remote-code": null } } })
    )
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
  if (
    /only supported backends? on|backend is only supported on|not supported .*backend|backend .*not supported/.test(
      text
    )
  ) {
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

  // --- ServerArgs: the same vocabulary as the offline rules (argumentFailure.ts) ------------
  if (saysMissingSchedulerStrategy(firstLine(final.message)) && final.type !== "AssertionError") {
    const a = /(?:Speculative decoding|Spec decoding) for (\w+)/.exec(text)
    return root(
      new F.MissingSchedulerStrategy({
        ...base,
        reason: firstLine(final.message),
        ...(a ? { architecture: a[1]! } : {}),
        fix: text.includes("--disable-radix-cache")
          ? { flags: { "--mamba-scheduler-strategy": "no_buffer" } }
          : { flags: { "--mamba-scheduler-strategy": "extra_buffer" } }
      })
    )
  }
  if (final.type === "AssertionError") {
    return root(
      saysUnsupported(firstLine(final.message))
        ? unsupportedCombination(base, final)
        : assertion(tb, base, final.message)
    )
  }
  if (text.includes("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN")) {
    return root(
      new F.InvalidArgument({
        ...base,
        reason,
        flags: ["--context-length"],
        fix: {
          action:
            "lower --context-length to the model's limit, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        }
      })
    )
  }

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
    /CUDA error:|CUDA driver|no kernel image is available|No CUDA GPUs are available|NVIDIA driver|ECC error|cudaError|device-side assert|compute capability|only supports Ampere|Unsupported gpu architecture/.test(
      text
    )
  ) {
    return root(new F.CudaError({ ...base, reason, fix: cudaFix(text) }))
  }
  if (text.includes("Capture cuda graph failed") || text.includes("Piecewise CUDA Graph")) {
    return root(
      new F.CudaError({
        ...base,
        reason,
        fix: {
          action: "CUDA graph capture failed: try --cuda-graph-max-bs 16, or --disable-cuda-graph (slow)"
        }
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
        fix: {
          action: "rerun with NCCL_DEBUG=INFO; check that all GPUs are visible and idle (nvidia-smi topo -m)"
        }
      })
    }
  }

  // --- invalid arguments ------------------------------------------------------------------------------
  const inServerArgs = tb.frames.some(
    (f) => f.file.endsWith("server_args.py") || f.func === "__post_init__" || f.func === "check_server_args"
  )
  if (
    (final.type === "ValueError" || final.type === "TypeError") &&
    (inServerArgs || flagsIn(final.message).length > 0)
  ) {
    return root(
      argumentFailureTag(final.type, final.message) === "UnsupportedConfig"
        ? unsupportedCombination(base, final)
        : invalidArgument(tb, base, final)
    )
  }

  if (tb.header.text.includes("warmup error") && /Timeout|timed out|timeout/.test(text)) {
    return root(
      new F.StartupStalled({
        ...base,
        reason: `warmup request timed out: ${reason}`,
        fix: {
          action:
            "the first request did not finish: check the scheduler lines above; raise SGLANG_WARMUP_TIMEOUT if the model is only slow"
        }
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
        ...(code < 0 ? { signal: signalName(-code) } : { exitCode: code }),
        ...(code === -9
          ? { fix: { action: "likely the OS OOM killer (host RAM): check `dmesg -T | grep -i oom`" } }
          : {})
      })
    }
  }
  const generic =
    text.includes("Initialization failed") || text.includes("Please see the error messages above")
  const linked = linkImportError(ctx, text, [])
  if (linked && !generic) return root(dependency(base, linked, reason))
  return {
    tier: generic ? CONSEQUENCE : UNKNOWN,
    failure: new F.ProcessExited({ ...base, reason })
  }
}
