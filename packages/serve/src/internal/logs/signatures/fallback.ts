/**
 * When no signature knows an exception: a class from the structure that is there instead of
 * `Unclassified`, marked `basis: "fallback"` so users and tests see how sure it is. Decided, in
 * order, from the message's own words (memory, a port, CUDA, NCCL), then the exception's type
 * (an import or a version conflict is a dependency problem), then where it was raised (a
 * `ValueError`/`TypeError`/`AssertionError` from the engine's argument or config modules, or one
 * naming a `--flag`, is an argument problem; so is one anywhere that rejects a value in the
 * engines' usual words: "Invalid …", "Unknown …", "Supported policies: …"). Written from the engines' module layout and
 * Python's exception hierarchy, not fitted to any log; an exception none of this describes stays
 * `Unclassified`.
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, type Context, engineName, flagsIn, type Subject } from "../../../LogSignature.js"

/** The engines' argument and configuration modules (SGLang's server_args and arg groups, vLLM's arg_utils and config package). */
const ARGUMENT_MODULES =
  /server_args\.py|arg_groups|arg_utils\.py|\/config\/[\w/]*\.py|argparse\.py|cli_args\.py/

// GPU memory only: a host's MemoryError or /dev/shm running out is not what the OOM fix is for
const OUT_OF_MEMORY =
  /(?:CUDA|GPU|device)\b.*out of memory|out of memory.*\b(?:CUDA|GPU|device)\b|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED/i
const PORT_TAKEN = /address already in use|EADDRINUSE/i
const CUDA =
  /\bCUDA error\b|cudaError|CUDA driver|CUBLAS_STATUS|CUDNN_STATUS|cuDNN error|no kernel image is available|CUDA kernel errors/i
// the transport's names, and the engines' own words for ranks, nodes and Ray workers that cannot meet
const DISTRIBUTED =
  /\bNCCL\b|nccl[A-Z]\w*|ProcessGroup|c10d|\b[Gg]loo\b|[Tt]ransfer [Ee]ngine|DistBackendError|DistNetworkError|peer-to-peer access|unique IP address|Ray workers have not started|\bbarrier_id\b|signal barrier|placement bundle|DP placement groups?|DP ranks? on|data parallel rank/
// an API that is not there (a torch version's) or a library not installed is no transport failure
const NOT_TRANSPORT_TYPES = /^(?:AttributeError|TypeError|ImportError|ModuleNotFoundError)$/
const DEPENDENCY_TYPES = /^(?:ImportError|ModuleNotFoundError)$/
const DEPENDENCY_WORDS =
  /undefined symbol|cannot import name|No module named|is not installed|requires [\w.-]+\s*(?:[<>=!~]=?)\s*\d[\w.]*.* but you have|version conflict|incompatible with (?:the installed|this version)|version [\w.]+ is required, but found|Failed to import \w+|please install \w+ with|Please use \w+ version >= ?\d|Failed to load \w+ library/i
// a setting this build has dropped or has no implementation for (the words the engines use)
const NOT_RUNNABLE =
  /\bhas been removed\b|\bNot support\b|No valid [\w ]*backend found|\brequires? the V1 engine\b|\bnot (?:yet )?implemented\b/i
// "Invalid load balance method: x", "Unknown eviction policy: y. Supported policies: ...", "must be one of"
const REJECTED_VALUE =
  /^(?:Invalid|Unknown|Unrecognized|Unsupported value)\b|\b(?:Available|Supported|Valid) (?:choices|options|values|policies|methods|backends|formats)\b|\bmust be one of\b|\bexpected one of\b/i
const ARGUMENT_TYPES =
  /^(?:ValueError|TypeError|AssertionError|argparse\.ArgumentError|pydantic_core\._pydantic_core\.ValidationError|ValidationError)$/

/** The fallback's failure for a record no signature knows, or undefined (then `Unclassified`). */
export const fallbackOf = (s: Subject, ctx: Context): F.LaunchFailure | undefined => {
  const final = s.final
  if (final === undefined) return undefined
  const text = `${final.type}: ${final.message}`
  const basis = { basis: "fallback" as const }
  const engine = engineName(ctx)
  if (OUT_OF_MEMORY.test(text))
    return new F.OOM({
      ...base(s, undefined, {
        action: `free GPU memory or ask for less: lower --mem-fraction-static (SGLang) / --gpu-memory-utilization (vLLM), --max-model-len or the batch size`
      }),
      kind: "cuda-alloc",
      ...basis
    })
  if (PORT_TAKEN.test(text))
    return new F.PortInUse({
      ...base(s, undefined, {
        action: "a port the server needs is taken: stop what holds it or give another port"
      }),
      kind: "other",
      ...basis
    })
  if (CUDA.test(text))
    return new F.CudaError({
      ...base(s, undefined, {
        action: `a CUDA failure: check the driver against the ${engine} build's CUDA (nvidia-smi), and rerun with CUDA_LAUNCH_BLOCKING=1 to see where`
      }),
      ...basis
    })
  if (DISTRIBUTED.test(text) && !NOT_TRANSPORT_TYPES.test(final.type) && !DEPENDENCY_WORDS.test(text))
    return new F.DistributedError({
      ...base(s, undefined, {
        action:
          "the ranks could not talk: rerun with NCCL_DEBUG=INFO, and check the interfaces (NCCL_SOCKET_IFNAME) and ports between them"
      }),
      ...basis
    })
  if (DEPENDENCY_TYPES.test(final.type) || DEPENDENCY_WORDS.test(text)) {
    const module = /No module named '([^']+)'/.exec(text)?.[1]
    return new F.DependencyError({
      ...base(s, undefined, {
        action: `install the missing package or the versions this ${engine} release pins`
      }),
      ...(module === undefined ? {} : { module }),
      ...basis
    })
  }
  const raisedIn = s.record?.frames.at(-1)?.file ?? ""
  const flags = flagsIn(text)
  if (ARGUMENT_TYPES.test(final.type) && (ARGUMENT_MODULES.test(raisedIn) || flags.length > 0))
    return new F.InvalidArgument({
      ...base(s, undefined, {
        action: `${engine} refused the launch's arguments: read the message above and change ${flags.length > 0 ? flags.join(", ") : "the flags it names"}`
      }),
      flags,
      ...basis
    })
  if (
    /^(?:ValueError|RuntimeError|AttributeError|NotImplementedError)$/.test(final.type) &&
    NOT_RUNNABLE.test(final.message)
  )
    return new F.UnsupportedConfig({
      ...base(s, undefined, {
        action: `this ${engine} build does not run that setting (see its message): choose one it supports, or a release that has it`
      }),
      kind: "combination",
      flags,
      ...basis
    })
  // a value the engine rejects, in its usual words, wherever it was raised: an argument problem
  if (ARGUMENT_TYPES.test(final.type) && REJECTED_VALUE.test(final.message))
    return new F.InvalidArgument({
      ...base(s, undefined, {
        action: `${engine} rejected a value it was given: read the message above for the accepted ones and change the flag (or config) that sets it`
      }),
      flags,
      ...basis
    })
  return undefined
}
