/**
 * The typed reasons a launch fails, as recognised from its log. Every failure carries
 * the log lines that prove it (`evidence`, with 1-based line numbers), the process that
 * reported it (`launcher`, a rank prefix such as `TP1`, `detokenizer`), the last lifecycle
 * phase reached, and a `fix` when one is known (flags to change or an action in words).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { Phase } from "./internal/phase.js"

/** One log line cited as evidence. @category models */
export const EvidenceLine = Schema.Struct({ line: Schema.Number, text: Schema.String })
/** @category models */
export type EvidenceLine = typeof EvidenceLine.Type

/**
 * How to fix it. `flags` maps a flag (`--mem-fraction-static`) to its new value; `null` means a
 * switch without a value (`--disable-cuda-graph`). `removeFlags` lists flags to drop.
 * @category models
 */
export const Fix = Schema.Struct({
  flags: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Union(Schema.String, Schema.Number, Schema.Null) })
  ),
  removeFlags: Schema.optional(Schema.Array(Schema.String)),
  action: Schema.optional(Schema.String)
})
/** @category models */
export type Fix = typeof Fix.Type

const common = {
  /** The log lines that show the failure (root cause first). */
  evidence: Schema.Array(EvidenceLine),
  /** `launcher`, a scheduler rank prefix (`TP1`, `DP0 TP1`), `detokenizer`, ... */
  process: Schema.String,
  /** The last lifecycle phase reached before the failure. */
  phase: Phase,
  /** One sentence: what went wrong, in SGLang's or PyTorch's own words where possible. */
  reason: Schema.String,
  fix: Schema.optional(Fix),
  /** Set when the offline check predicted this failure before anything started: the rule's id. */
  ruleId: Schema.optional(Schema.String),
  /**
   * How the verdict was reached: absent for a signature that knows the wording; `fallback` when
   * no signature did and the class comes from the exception's type, module and words (less sure).
   */
  basis: Schema.optional(Schema.Literal("fallback"))
}

/** Renders a fix as the flags to pass (`--a 1 --b`), the flags to drop and the action. */
export const renderFix = (fix: Fix): string => {
  const parts: Array<string> = []
  for (const [flag, value] of Object.entries(fix.flags ?? {})) {
    parts.push(value === null ? flag : `${flag} ${value}`)
  }
  const set = parts.length > 0 ? `use ${parts.join(" ")}` : undefined
  const drop = fix.removeFlags && fix.removeFlags.length > 0 ? `drop ${fix.removeFlags.join(" ")}` : undefined
  return [set, drop, fix.action].filter((part) => part !== undefined).join("; ")
}

interface Describable {
  readonly _tag: string
  readonly process: string
  readonly phase: Phase
  readonly reason: string
  readonly fix?: Fix | undefined
}

const describe = (failure: Describable, headline: string): string =>
  `${headline} (${failure.process}, after phase ${failure.phase}): ${failure.reason.replace(/\.$/, "")}` +
  (failure.fix ? `. Fix: ${renderFix(failure.fix)}` : "")

/** `sglang serve: error: ...` from argparse; nothing was started (exit 2). @category errors */
export class ArgparseError extends Schema.TaggedError<ArgparseError>()("ArgparseError", {
  ...common,
  kind: Schema.Literal("invalid-choice", "unrecognized", "required", "invalid-value", "other"),
  flags: Schema.Array(Schema.String),
  /** The engine's display name (`SGLang`, `vLLM`) when the log shows which one wrote it. */
  engine: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, `${this.engine ?? "the engine"} rejected the command line`)
  }
}

/** An `assert` failed; for a bare assert the asserted source line is the only explanation. @category errors */
export class AssertionFailure extends Schema.TaggedError<AssertionFailure>()("AssertionFailure", {
  ...common,
  file: Schema.String,
  line: Schema.Number,
  function: Schema.String,
  /** The asserted source, as the traceback shows it (joined when it spans lines). */
  source: Schema.String,
  /** The flags the assertion is about (from the source and the message). */
  flags: Schema.Array(Schema.String)
}) {
  override get message() {
    return describe(this, `Assertion failed in ${this.function} (${this.file}:${this.line})`)
  }
}

/** A ServerArgs ValueError/TypeError: the flags do not fit together. @category errors */
export class InvalidArgument extends Schema.TaggedError<InvalidArgument>()("InvalidArgument", {
  ...common,
  flags: Schema.Array(Schema.String)
}) {
  override get message() {
    return describe(this, "Invalid server arguments")
  }
}

/** Hybrid (mamba) model with radix cache and speculative decoding needs a scheduler strategy. @category errors */
export class MissingSchedulerStrategy extends Schema.TaggedError<MissingSchedulerStrategy>()(
  "MissingSchedulerStrategy",
  { ...common, architecture: Schema.optional(Schema.String) }
) {
  override get message() {
    return describe(this, "The mamba scheduler strategy does not allow this combination")
  }
}

/**
 * Out of GPU memory: a CUDA allocation (a server's or a training step's), the KV-cache pool, or a
 * memory-caused graph capture. The numbers are the allocator's own, in GiB, when its message
 * states them: torch >= 2.1 says `Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
 * 47.53 GiB of which 1.12 GiB is free. ... Of the allocated memory 44.10 GiB is allocated by
 * PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated`; torch 1.x says `(GPU 0; 23.69
 * GiB total capacity; 20.10 GiB already allocated; 1.12 GiB free; 21.30 GiB reserved in total by
 * PyTorch)`. Memory reserved by PyTorch but not allocated is fragmentation.
 * @category errors
 */
export class OOM extends Schema.TaggedError<OOM>()("OOM", {
  ...common,
  kind: Schema.Literal("cuda-alloc", "kv-pool", "cuda-graph", "unbalanced"),
  gpu: Schema.optional(Schema.Number),
  /** What the failing allocation asked for. */
  triedGiB: Schema.optional(Schema.Number),
  /** The GPU's total capacity. */
  totalGiB: Schema.optional(Schema.Number),
  /** What was free on the GPU. */
  freeGiB: Schema.optional(Schema.Number),
  /** Allocated by PyTorch (torch 1.x: `already allocated`). */
  allocatedGiB: Schema.optional(Schema.Number),
  /** Reserved by PyTorch's caching allocator in total (torch 1.x states it; else allocated + unallocated). */
  reservedGiB: Schema.optional(Schema.Number),
  /** Reserved by PyTorch but unallocated (torch >= 2.1 states it; else reserved - allocated): fragmentation. */
  reservedUnallocatedGiB: Schema.optional(Schema.Number),
  memFractionStatic: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, `Out of GPU memory (${this.kind})`)
  }
}

/** A port SGLang needs is taken. @category errors */
export class PortInUse extends Schema.TaggedError<PortInUse>()("PortInUse", {
  ...common,
  kind: Schema.Literal("http", "nccl", "zmq", "other"),
  port: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, `The ${this.kind} port ${this.port ?? "(unknown)"} is already in use`)
  }
}

/** The model path is neither a local folder nor a reachable Hugging Face repo. @category errors */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", {
  ...common,
  model: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, `Model not found${this.model ? `: ${this.model}` : ""}`)
  }
}

/** The checkpoint ships custom code and `--trust-remote-code` was not given. @category errors */
export class TrustRemoteCodeRequired extends Schema.TaggedError<TrustRemoteCodeRequired>()(
  "TrustRemoteCodeRequired",
  common
) {
  override get message() {
    return describe(this, "The model needs --trust-remote-code")
  }
}

/** This SGLang build cannot run the model architecture or the chosen backend here. @category errors */
export class UnsupportedConfig extends Schema.TaggedError<UnsupportedConfig>()("UnsupportedConfig", {
  ...common,
  /**
   * `architecture`: the model; `backend`: a kernel backend on this GPU; `combination`: flags this
   * build does not support together; `hardware`: the GPU lacks a capability (bf16, fp8).
   */
  kind: Schema.Literal("architecture", "backend", "combination", "hardware"),
  architectures: Schema.optional(Schema.Array(Schema.String)),
  flags: Schema.optional(Schema.Array(Schema.String))
}) {
  override get message() {
    return describe(this, `Unsupported ${this.kind}`)
  }
}

/**
 * NCCL or torch.distributed failed (often a consequence of another rank's failure). When the log
 * says, the rank that reported it, the collective (`ALLREDUCE`), its sequence number and its
 * timeout: `[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5,
 * OpType=ALLREDUCE, ... Timeout(ms)=600000) ran for 600011 milliseconds before timing out`.
 * @category errors
 */
export class DistributedError extends Schema.TaggedError<DistributedError>()("DistributedError", {
  ...common,
  /**
   * `collective-timeout`: NCCL's watchdog timed a collective out; `watchdog-stuck`: the watchdog
   * itself hung in a NCCL/CUDA call; `nccl-error`: NCCL returned an error.
   */
  kind: Schema.optional(Schema.Literal("collective-timeout", "watchdog-stuck", "nccl-error")),
  /** The global rank that reported it. */
  rank: Schema.optional(Schema.Number),
  /** The collective (`ALLREDUCE`, `_ALLGATHER_BASE`, `BROADCAST`). */
  op: Schema.optional(Schema.String),
  seqNum: Schema.optional(Schema.Number),
  timeoutMs: Schema.optional(Schema.Number),
  /** How long the collective ran before the watchdog gave up. */
  ranForMs: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, "Distributed initialisation or communication failed")
  }
}

/** The CUDA driver, the GPU's compute capability or the hardware failed. @category errors */
export class CudaError extends Schema.TaggedError<CudaError>()("CudaError", common) {
  override get message() {
    return describe(this, "CUDA error")
  }
}

/**
 * The shared memory (`/dev/shm`) is too small or full: NCCL cannot create a segment for its
 * peers, a torch worker dies of SIGBUS writing a shared tensor, Ray's object store does not fit.
 * A container's `/dev/shm` is docker's 64 MB unless it is given more. @category errors
 */
export class SharedMemoryTooSmall extends Schema.TaggedError<SharedMemoryTooSmall>()("SharedMemoryTooSmall", {
  ...common,
  /** Who needed it: NCCL's segments, torch's shared tensors (DataLoader workers), Ray's object store. */
  kind: Schema.Literal("nccl", "torch", "ray"),
  /** The bytes asked for, when the log says (`(size 9637888)`, `The request is for N bytes`). */
  requestedBytes: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, "Not enough shared memory (/dev/shm)")
  }
}

/**
 * The NVIDIA driver runs an older CUDA than the engine was built for: the container tool refuses
 * the image (`nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4`), CUDA
 * refuses the driver (`The NVIDIA driver on your system is too old`, `driver version is
 * insufficient`), or the image's forward-compatibility libraries do not work on this GPU (error
 * 804). @category errors
 */
export class CudaDriverTooOld extends Schema.TaggedError<CudaDriverTooOld>()("CudaDriverTooOld", {
  ...common,
  /**
   * `container-requirement`: the NVIDIA container tool refused the image; `cuda-init`: the CUDA
   * runtime refused the driver; `forward-compatibility`: error 804, the image's CUDA is newer
   * than the driver and forward compatibility is for datacenter GPUs only.
   */
  kind: Schema.Literal("container-requirement", "cuda-init", "forward-compatibility"),
  /** The CUDA the image needs (`12.4`), when the log says. */
  requiredCuda: Schema.optional(Schema.String),
  /** The newest CUDA the driver runs (`12.8` from torch's `found version 12080`), when the log says. */
  driverCuda: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, "The NVIDIA driver is too old for this CUDA")
  }
}

/**
 * A container cannot reach the GPUs: the tool has no NVIDIA runtime or CDI spec to give them
 * (`could not select device driver "" with capabilities: [[gpu]]`), or a running container lost
 * them (`Failed to initialize NVML: Unknown Error`, after the host's `systemctl daemon-reload`).
 * @category errors
 */
export class ContainerGpuUnavailable extends Schema.TaggedError<ContainerGpuUnavailable>()(
  "ContainerGpuUnavailable",
  {
    ...common,
    /** `no-runtime`: never given (no NVIDIA container toolkit, runtime or CDI spec); `lost`: access gone. */
    kind: Schema.Literal("no-runtime", "lost"),
    /** The tool, when the log shows which (`docker`, `podman`). */
    tool: Schema.optional(Schema.Literal("docker", "podman"))
  }
) {
  override get message() {
    return describe(this, this.kind === "lost" ? "The container lost its GPUs" : "The container gets no GPUs")
  }
}

/**
 * The container tool cannot talk to its daemon: this user may not open the socket
 * (`permission denied while trying to connect to the Docker daemon socket`) or no daemon answers
 * (`Cannot connect to the Docker daemon at …`). Nothing was started. @category errors
 */
export class ContainerEngineUnreachable extends Schema.TaggedError<ContainerEngineUnreachable>()(
  "ContainerEngineUnreachable",
  {
    ...common,
    kind: Schema.Literal("permission-denied", "not-running"),
    /** The socket the tool tried (`unix:///var/run/docker.sock`), when the log says. */
    socket: Schema.optional(Schema.String)
  }
) {
  override get message() {
    return describe(
      this,
      this.kind === "permission-denied"
        ? "The container daemon refused this user"
        : "No container daemon answers"
    )
  }
}

/** A Python dependency is missing or broken (import errors, missing symbols, failed JIT builds). @category errors */
export class DependencyError extends Schema.TaggedError<DependencyError>()("DependencyError", {
  ...common,
  module: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, `Broken or missing dependency${this.module ? ` (${this.module})` : ""}`)
  }
}

/** The launch stopped making progress (no new phase for too long, or SGLang's watchdog fired). @category errors */
export class StartupStalled extends Schema.TaggedError<StartupStalled>()("StartupStalled", {
  ...common,
  silentForMs: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, "The launch stalled")
  }
}

/** How a process ended, in words: `killed by SIGKILL`, `exited with code 1`, `failed`. @category rendering */
export const howEnded = (end: {
  readonly exitCode?: number | undefined
  readonly signal?: string | undefined
}): string =>
  end.signal !== undefined
    ? `killed by ${end.signal}`
    : end.exitCode !== undefined
      ? `exited with code ${end.exitCode}`
      : "failed"

/**
 * The process ended and the log names no known cause: the exit and the last lines. For a job
 * under a launcher (torchrun, deepspeed), the rank the launcher names as the first failure.
 * @category errors
 */
export class ProcessExited extends Schema.TaggedError<ProcessExited>()("ProcessExited", {
  ...common,
  exitCode: Schema.optional(Schema.Number),
  signal: Schema.optional(Schema.String),
  /** The rank a job launcher names as the one that failed first (global in torchrun's table, else local). */
  rank: Schema.optional(Schema.Number),
  /** The engine's display name (`SGLang`, `vLLM`) when the log shows which one wrote it. */
  engine: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, `${this.engine ?? "the server"} ${howEnded(this)}`)
  }
}

/**
 * The host ran out of memory (RAM, not GPU): the kernel's OOM killer (`Out of memory: Killed
 * process 1234 (python)`, `oom-kill:constraint=...`), a memory monitor that killed the work
 * (Ray's), an allocation the host refused (`[Errno 12] Cannot allocate memory`), or a job's
 * process killed by SIGKILL with no other cause in its log (torchrun's `exitcode: -9` with
 * `Signal 9 (SIGKILL) received by PID`, deepspeed's `exits with return code = -9`, the shell's
 * `Killed`, exit code 137): nothing else kills a training process that way.
 * @category errors
 */
export class HostOutOfMemory extends Schema.TaggedError<HostOutOfMemory>()("HostOutOfMemory", {
  ...common,
  /**
   * `oom-killer`: the kernel says so; `memory-monitor`: a scheduler's monitor (Ray) killed it;
   * `allocation`: the host refused an allocation; `sigkill`: killed by SIGKILL, no cause stated.
   */
  kind: Schema.Literal("oom-killer", "memory-monitor", "allocation", "sigkill"),
  /** The process killed, when the log names it. */
  pid: Schema.optional(Schema.Number),
  /** Its command name (`python`, `python3`), when the kernel names it. */
  command: Schema.optional(Schema.String),
  /** The rank a job launcher names (global in torchrun's table, else local). */
  rank: Schema.optional(Schema.Number),
  /** The exit as reported (`-9` from torchrun and deepspeed, `137` from a shell). */
  exitCode: Schema.optional(Schema.Number),
  signal: Schema.optional(Schema.Literal("SIGKILL")),
  /** The killed process's resident memory (the kernel's anon-rss), in GiB. */
  residentGiB: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(
      this,
      this.kind === "sigkill"
        ? "Killed by SIGKILL, most often the host's OOM killer (RAM)"
        : "The host ran out of memory (RAM)"
    )
  }
}

/**
 * The job's terminal or ssh session closed and took it down: its launcher got SIGHUP
 * (torchrun: `Received 1 death signal, shutting down workers`, `Sending process 1234 closing
 * signal SIGHUP`, `SignalException: Process 1234 got signal: 1`). @category errors
 */
export class Hangup extends Schema.TaggedError<Hangup>()("Hangup", {
  ...common,
  signal: Schema.Literal("SIGHUP"),
  /** The process that got it, when the log names it. */
  pid: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, "The job's session hung up (SIGHUP)")
  }
}

/**
 * The loss became NaN or infinite and the job stopped because of it: the script raised (`ValueError:
 * loss is nan`, detectron2's `FloatingPointError: Loss became infinite or NaN`), DeepSpeed's fp16
 * loss scale hit its minimum (`Current loss scale already at minimum`), or the job exited non-zero
 * after logging NaN losses with no other cause. NaN lines in a job that goes on are no failure.
 * @category errors
 */
export class LossDiverged extends Schema.TaggedError<LossDiverged>()("LossDiverged", {
  ...common,
  /**
   * `raised`: the script or trainer stopped on it; `loss-scale`: DeepSpeed's fp16 loss scale hit
   * its minimum; `exited-after-nan`: NaN/inf losses were logged, then the job exited non-zero.
   */
  kind: Schema.Literal("raised", "loss-scale", "exited-after-nan"),
  /** The step or iteration, when the message says. */
  step: Schema.optional(Schema.Number)
}) {
  override get message() {
    return describe(this, "The loss diverged (NaN/inf)")
  }
}

/**
 * The log holds an exception or a fatal line that no signature names: the exception itself is
 * the evidence. Never "no failure" when the text shows one. @category errors
 */
export class Unclassified extends Schema.TaggedError<Unclassified>()("Unclassified", {
  ...common,
  /** The exception type (`KeyError`, `torch._dynamo.exc.Unsupported`), when one was raised. */
  exception: Schema.optional(Schema.String)
}) {
  override get message() {
    return describe(this, "Unrecognised failure")
  }
}

/** Every way a launch (or a job) can fail. @category errors */
export const LaunchFailure = Schema.Union(
  ContainerEngineUnreachable,
  ContainerGpuUnavailable,
  CudaDriverTooOld,
  SharedMemoryTooSmall,
  ArgparseError,
  AssertionFailure,
  InvalidArgument,
  MissingSchedulerStrategy,
  OOM,
  HostOutOfMemory,
  PortInUse,
  ModelNotFound,
  TrustRemoteCodeRequired,
  UnsupportedConfig,
  DistributedError,
  CudaError,
  DependencyError,
  StartupStalled,
  Hangup,
  LossDiverged,
  ProcessExited,
  Unclassified
)
/** @category errors */
export type LaunchFailure = typeof LaunchFailure.Type
