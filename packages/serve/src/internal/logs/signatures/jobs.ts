/**
 * How training and evaluation jobs fail (torchrun, deepspeed, accelerate, plain scripts), as
 * their launchers and trainers say it: the host's memory running out (the kernel's OOM killer, a
 * memory monitor, a refused allocation, a process killed by SIGKILL with nothing else said), the
 * session that started the job hanging up (SIGHUP), a loss that became NaN/inf and stopped the
 * run, and the launcher's word on the rank that failed first (torchrun's `ChildFailedError`
 * table, `failed (exitcode: 1) local_rank: 0`, deepspeed's `exits with return code = 1`) when
 * nothing above it names a cause. Written from the launchers' and trainers' own messages
 * (torch.distributed.elastic, deepspeed/launcher/launch.py, the HF Trainer, detectron2, the
 * Linux OOM killer) and the public logs of corpus/logs batch 6.
 * @internal
 */
import type { EvidenceLine } from "../../../Failures.js"
import * as F from "../../../Failures.js"
import { base, reasonOf, type Signature, says, Tier } from "../../../LogSignature.js"
import { signalName } from "./deaths.js"

// ---- the host's memory ---------------------------------------------------------------------------

/** What a job can do about the host's RAM. */
const HOST_MEMORY_FIX =
  "the host's RAM ran out: lower the DataLoader workers (num_workers) and their prefetch, keep less on the host (smaller host-side buffers and caches, no pinned-memory or CPU-offload excess, a streamed rather than in-memory dataset), or give the host more RAM or swap; `dmesg -T | grep -i oom` shows the OOM killer's word"

/** What a job can do about its session hanging up. */
const HANGUP_FIX =
  "the terminal or ssh session that started the job closed and took it down (SIGHUP): run it detached, as `mlops run` does (else setsid or nohup with `& disown`, or tmux/screen)"

const OOM_KILLER =
  /Out of memory: Kill(?:ed)? process|oom-kill:constraint=|oom_reaper: reaped process|invoked oom-killer|Memory cgroup out of memory|Reason:\s+OOMKilled/
const MEMORY_MONITOR = /running low on memory|memory usage threshold/i
// the host refused an allocation (not the GPU's words)
const HOST_ALLOCATION =
  /\[Errno 12\] Cannot allocate memory|Cannot allocate memory \(errno 12\)|std::bad_alloc|_ArrayMemoryError|Unable to allocate [\d.]+ [KMGT]i?B for an array|Not enough host memory available/
// a DataLoader worker (or a pool's) killed by SIGKILL: the OOM killer, nearly always
const WORKER_KILLED = /worker \(pid\(?s?\)? ?[\d, ]*\)? (?:is )?killed by signal: Killed/i
const GPU_WORDS = /CUDA|cuda|GPU|HIP|cudaMalloc/

const killedProcess = (text: string): { pid?: number; command?: string; residentGiB?: number } => {
  const killed = /(?:Killed process|reaped process) (\d+) \(([^)]+)\)/.exec(text)
  const rss = /anon-rss:\s*(\d+)\s*kB/.exec(text)
  return {
    ...(killed === null ? {} : { pid: Number(killed[1]), command: killed[2]! }),
    ...(rss === null ? {} : { residentGiB: Math.round((Number(rss[1]) / 1048576) * 100) / 100 })
  }
}

export const hostMemory: Signature = {
  id: "host-out-of-memory",
  tag: "HostOutOfMemory",
  tier: Tier.Root,
  variants: [
    {
      from: "Linux OOM killer (dmesg)",
      text: "[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, anon-rss:12918388kB, file-rss:68668kB, shmem-rss:53352kB, UID:1000 pgtables:49772kB oom_score_adj:0"
    },
    {
      from: "Linux OOM killer (dmesg)",
      text: "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,task_memcg=/user.slice,task=python,pid=698405,uid=1000"
    },
    {
      from: "Ray's memory monitor",
      text: "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
    },
    { from: "CPython", text: "OSError: [Errno 12] Cannot allocate memory" },
    {
      from: "torch DataLoader",
      text: "RuntimeError: DataLoader worker (pid 4066) is killed by signal: Killed."
    }
  ],
  match: (s) =>
    OOM_KILLER.test(s.flat) ||
    MEMORY_MONITOR.test(s.flat) ||
    WORKER_KILLED.test(s.flat) ||
    (HOST_ALLOCATION.test(s.flat) && !GPU_WORDS.test(s.flat)),
  build: (s) => {
    const kind = OOM_KILLER.test(s.flat)
      ? "oom-killer"
      : MEMORY_MONITOR.test(s.flat)
        ? "memory-monitor"
        : WORKER_KILLED.test(s.flat)
          ? "sigkill"
          : "allocation"
    return new F.HostOutOfMemory({
      ...base(
        s,
        reasonOf(s, kind === "allocation" ? HOST_ALLOCATION : undefined),
        kind === "sigkill"
          ? {
              action: `a DataLoader worker was killed by SIGKILL (the OOM killer): ${HOST_MEMORY_FIX}`
            }
          : { action: HOST_MEMORY_FIX }
      ),
      kind,
      ...killedProcess(s.flat),
      ...(kind === "sigkill" ? { signal: "SIGKILL" as const } : {})
    })
  }
}

// ---- a launcher's word on the rank that failed ----------------------------------------------------

/** What a launcher says about a rank's end: its exit, the signal that ended it, who it was. */
export interface RankEnd {
  /** torchrun's and deepspeed's `-9`; a shell's `137`. */
  readonly exitCode?: number
  readonly signal?: string
  readonly rank?: number
  readonly pid?: number
}

/** A launcher's exit code as an end: negative codes are signals (`-9`: SIGKILL). */
const endOf = (code: number): Pick<RankEnd, "exitCode" | "signal"> =>
  code < 0 ? { exitCode: code, signal: signalName(-code) } : { exitCode: code }

const SIGNAL_RECEIVED = /Signal (\d+) \((SIG\w+)\) received by PID (\d+)/
const ELASTIC_FAILED = /failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)/
const OLD_ELASTIC_FAILED = /Child process (\d+) \(local_rank (\d+)\) FAILED \(exitcode (-?\d+)\)/
const DEEPSPEED_EXIT = /exits with return code = (-?\d+)/
// a shell's word: `Killed` alone, bash's job report, an IDE's `exit code 137`
const SHELL_KILLED =
  /^\s*(?:Killed|已杀死)\s*$|\bline \d+: +\d+ Killed\b|exit code 137\b|interrupted by signal 9\b/

/** The end a launcher line reports, or undefined. */
const launcherEnd = (text: string): RankEnd | undefined => {
  const received = SIGNAL_RECEIVED.exec(text)
  if (received) return { exitCode: -Number(received[1]), signal: received[2]!, pid: Number(received[3]) }
  const elastic = ELASTIC_FAILED.exec(text)
  if (elastic) return { ...endOf(Number(elastic[1])), pid: Number(elastic[3]) }
  const old = OLD_ELASTIC_FAILED.exec(text)
  if (old) return { ...endOf(Number(old[3])), pid: Number(old[1]) }
  const deepspeed = DEEPSPEED_EXIT.exec(text)
  if (deepspeed) return endOf(Number(deepspeed[1]))
  return SHELL_KILLED.test(text) ? { exitCode: 137, signal: "SIGKILL" } : undefined
}

/** The local rank a launcher line names (`local_rank: 5`, `--local_rank=1`). */
const localRankOf = (text: string): number | undefined => {
  const m = /local_rank(?::|=| ) ?(\d+)/.exec(text)
  return m === null ? undefined : Number(m[1])
}

const exitFix =
  "the rank's own error is not in this log: look at its output above (rerun with the script's traceback shown, e.g. torch.distributed.elastic's @record on the entry point or TORCHELASTIC_ERROR_FILE)"

/** The failure a rank's end means when nothing else in the log names a cause. */
export const failureOfEnd = (
  end: RankEnd,
  shown: Pick<F.ProcessExited, "evidence" | "process" | "phase" | "reason">
): F.HostOutOfMemory | F.Hangup | F.ProcessExited => {
  const who = end.rank === undefined ? {} : { rank: end.rank }
  if (end.signal === "SIGKILL")
    return new F.HostOutOfMemory({
      ...shown,
      fix: {
        action: `nothing in the log says why the process was killed (SIGKILL): most often the host's OOM killer; ${HOST_MEMORY_FIX}`
      },
      kind: "sigkill",
      ...who,
      ...(end.pid === undefined ? {} : { pid: end.pid }),
      ...(end.exitCode === undefined ? {} : { exitCode: end.exitCode }),
      signal: "SIGKILL"
    })
  if (end.signal === "SIGHUP")
    return new F.Hangup({
      ...shown,
      fix: { action: HANGUP_FIX },
      signal: "SIGHUP",
      ...(end.pid === undefined ? {} : { pid: end.pid })
    })
  return new F.ProcessExited({
    ...shown,
    fix: { action: exitFix },
    ...who,
    ...(end.exitCode === undefined ? {} : { exitCode: end.exitCode }),
    ...(end.signal === undefined ? {} : { signal: end.signal })
  })
}

/**
 * The tier of a rank's end: a hangup is the root cause; a SIGKILL with no cause stated ranks as
 * an unknown exception does (an exception printed before it, a stated cause, keeps its place);
 * any other end is a consequence.
 */
export const tierOfEnd = (end: RankEnd): Tier =>
  end.signal === "SIGHUP" ? Tier.Root : end.signal === "SIGKILL" ? Tier.Unknown : Tier.Consequence

const LAUNCHER_LINE = new RegExp(
  [SIGNAL_RECEIVED, ELASTIC_FAILED, OLD_ELASTIC_FAILED, DEEPSPEED_EXIT, SHELL_KILLED]
    .map((r) => r.source)
    .join("|")
)

/** A launcher's (or a shell's) line on how a rank or the job's process ended. */
export const rankEnded: Signature = {
  id: "job-rank-ended",
  tag: "ProcessExited",
  tier: Tier.Consequence,
  variants: [
    {
      from: "torchrun (torch 2.x)",
      text: "E0801 13:23:20.000000 32974 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) local_rank: 3 (pid: 33054) of binary: /usr/bin/python3"
    },
    {
      from: "torch.distributed.launch (torch 1.9)",
      text: "Child process 71952 (local_rank 0) FAILED (exitcode 1)"
    },
    {
      from: "deepspeed launcher",
      text: "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', '--local_rank=0'] exits with return code = 1"
    }
  ],
  match: (s) => s.record === undefined && LAUNCHER_LINE.test(s.text),
  build: (s) => {
    const end = launcherEnd(s.text) ?? {}
    const local = localRankOf(s.text)
    return failureOfEnd(
      { ...end, ...(local === undefined ? {} : { rank: local }) },
      {
        ...base(s, s.text.trim()),
        ...(local === undefined ? {} : { process: `local rank ${local}` })
      }
    )
  }
}

/** The same lines, named by the class their signal gives (tried before `rankEnded` for their tiers). */
export const rankKilled: Signature = {
  id: "job-rank-killed",
  tag: "HostOutOfMemory",
  tier: Tier.Unknown,
  variants: [
    {
      from: "torchrun (torch 2.x)",
      text: "E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python"
    },
    {
      from: "torchrun's ChildFailedError table",
      text: "  traceback : Signal 9 (SIGKILL) received by PID 14750"
    },
    {
      from: "deepspeed launcher",
      text: "[2023-05-15 13:14:32,960] [ERROR] [launch.py:434:sigkill_handler] ['python', '-u', '-m', 'training.trainer', '--local_rank=0'] exits with return code = -9"
    },
    { from: "a shell (the OOM killer, kill -9)", text: "Killed" },
    { from: "a shell (zh_CN locale)", text: "已杀死" },
    { from: "bash's job report", text: "/bin/bash: line 27: 318 Killed sh start.sh" },
    { from: "PyCharm", text: "Process finished with exit code 137 (interrupted by signal 9: SIGKILL)" }
  ],
  match: (s) => s.record === undefined && launcherEnd(s.text)?.signal === "SIGKILL",
  build: (s, ctx) => rankEnded.build(s, ctx)
}

// ---- the session hanging up -----------------------------------------------------------------------

const HANGUP =
  /Received 1 death signal|Received Signals\.SIGHUP death signal|closing signal SIGHUP|got signal: 1\b|Signal 1 \(SIGHUP\) received by PID|failed \(exitcode: -1\) local_rank/

export const hangup: Signature = {
  id: "session-hangup",
  tag: "Hangup",
  tier: Tier.Root,
  variants: [
    {
      from: "torchrun (torch 2.x)",
      text: "W0920 09:10:41.194000 84933 site-packages/torch/distributed/elastic/agent/server/api.py:719] Received 1 death signal, shutting down workers"
    },
    {
      from: "torchrun (torch 1.x-2.x)",
      text: "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2704351 closing signal SIGHUP"
    },
    {
      from: "torchrun",
      text: "torch.distributed.elastic.multiprocessing.api.SignalException: Process 792735 got signal: 1"
    },
    {
      from: "torchrun's ChildFailedError table",
      text: "  traceback : Signal 1 (SIGHUP) received by PID 4242"
    }
  ],
  match: says(HANGUP),
  build: (s) => {
    const pid = /Process (\d+) got signal|received by PID (\d+)/.exec(s.flat)
    return new F.Hangup({
      ...base(s, reasonOf(s, HANGUP), { action: HANGUP_FIX }),
      signal: "SIGHUP",
      ...(pid === null ? {} : { pid: Number(pid[1] ?? pid[2]) })
    })
  }
}

// ---- the loss diverging ---------------------------------------------------------------------------

const LOSS_FIX =
  "lower the learning rate (or lengthen its warmup), clip gradients (max_grad_norm 1.0), train in bf16 rather than fp16 (fp16's loss scale overflows), and check the data for bad samples (empty labels, inf or NaN values)"

/** An exception a script or trainer raised about a NaN/inf loss (or outputs, or gradients). */
const LOSS_RAISED =
  /\bloss(?:es)?\b[^\n]{0,40}?\b(?:nan|inf|infinite|non-finite)\b|\b(?:nan|inf)\b[^\n]{0,20}?\bloss|outputs? (?:is|are) nan\b|returned nan values in its \d+\w* output|Current loss scale already at minimum/i
/** A line (not an exception) saying the run stops because of a NaN/inf loss. */
const LOSS_STOP_LINE =
  /\b(?:nan|inf)\b[^\n]{0,40}?\bstop(?:ping)? training|\bstop(?:ping)? training[^\n]{0,40}?\b(?:nan|inf)\b|Loss became infinite or NaN|Loss was NaN for \d+ times in a row|Current loss scale already at minimum/i
const LOSS_STOPPED = new RegExp(`${LOSS_RAISED.source}|${LOSS_STOP_LINE.source}`, "i")

export const lossDiverged: Signature = {
  id: "loss-diverged",
  tag: "LossDiverged",
  tier: Tier.Root,
  variants: [
    { from: "a training script", text: "ValueError: loss is nan" },
    { from: "torchvision's references, DETR, DEIM", text: "Loss is nan, stopping training" },
    {
      from: "detectron2",
      text: "FloatingPointError: Loss became infinite or NaN at iteration=1029!"
    },
    {
      from: "DeepSpeed fp16",
      text: "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."
    }
  ],
  // a progress line printing `loss: nan` is no stop: only a raise, or a line that says training stops
  match: (s) =>
    s.final !== undefined
      ? !/Warning$/.test(s.final.type) && LOSS_RAISED.test(s.flat)
      : LOSS_STOP_LINE.test(s.flat),
  build: (s) => {
    const step = /iteration[= ](\d+)|\bstep[= :](\d+)/i.exec(s.flat)
    const scale = /loss scale/i.test(s.flat)
    return new F.LossDiverged({
      ...base(
        s,
        reasonOf(s, LOSS_STOPPED),
        scale
          ? {
              action: `DeepSpeed's fp16 loss scale fell to its minimum (the gradients overflow at every scale): train in bf16 rather than fp16; else ${LOSS_FIX}`
            }
          : { action: LOSS_FIX }
      ),
      kind: scale ? "loss-scale" : "raised",
      ...(step === null ? {} : { step: Number(step[1] ?? step[2]) })
    })
  }
}

/** A progress line that prints a NaN/inf loss (`{'loss': nan, ...}`, `loss: nan`, `[Loss] nan`): no failure by itself. */
const NAN_LOSS = /(?:^|[\s{,'"[|_])(?:train_|total_)?loss['"\]]?\s*[:=]?\s*['"]?[-+]?(?:nan|inf)\b/i

/** Whether a line reports a NaN/inf loss (cheap for the lines that do not). */
export const nanLossLine = (text: string): boolean =>
  (text.includes("nan") || text.includes("NaN") || text.includes("inf")) &&
  (text.includes("oss") || text.includes("OSS")) &&
  NAN_LOSS.test(text)

/** The job stopped after logging NaN/inf losses, with nothing else named: the loss diverged. */
export const exitedAfterNan = (
  nan: EvidenceLine,
  ended: F.LaunchFailure | undefined,
  silent: Pick<F.LossDiverged, "evidence" | "process" | "phase">
): F.LossDiverged => {
  const shown = ended ?? silent
  return new F.LossDiverged({
    process: shown.process,
    phase: shown.phase,
    evidence: [nan, ...shown.evidence].slice(0, 24),
    reason: `the loss became NaN/inf (${nan.text.trim().slice(0, 160)}) and then the job ended`,
    fix: { action: LOSS_FIX },
    kind: "exited-after-nan"
  })
}

// ---- what the log shows of a job ------------------------------------------------------------------

const JOB_WORDS =
  /torch\.distributed\.elastic|torch\/distributed\/(?:elastic|run\.py|launch\.py)|\btorchrun\b|deepspeed[./](?:launcher|runtime)|\[launch\.py:\d+:(?:main|sigkill_handler)\]|accelerate(?:\/commands|-launch| launch)|transformers\/trainer\.py|ChildFailedError|\{'(?:train_)?loss': |\bloss[:=] ?-?(?:[\d.]+(?:e-?\d+)?|nan|inf)\b/i

/** Whether a line shows a training job: a launcher's or trainer's words (cheap for the lines that do not). */
export const jobLine = (text: string): boolean =>
  (text.includes("oss") ||
    text.includes("elastic") ||
    text.includes("torchrun") ||
    text.includes("deepspeed") ||
    text.includes("accelerate") ||
    text.includes("trainer") ||
    text.includes("ChildFailed") ||
    text.includes("launch")) &&
  JOB_WORDS.test(text)

/**
 * torchrun's `ChildFailedError` table, read line by line: the `Root Cause (first observed
 * failure)` entry's rank, exit code, pid and signal (`traceback : Signal 9 (SIGKILL) received by
 * PID 14750`). The table is printed after the rank's own output, so its entry is the job-level
 * word when that output named nothing.
 */
export class ElasticTable {
  private open = false
  private lines = 0
  private rank: number | undefined
  private exitCode: number | undefined
  private pid: number | undefined
  private signal: string | undefined
  private readonly evidence: Array<EvidenceLine> = []

  /** Reads one line; returns the root cause's end when the table closes on this line. */
  line(text: string, shown: string, no: number): { end: RankEnd; evidence: Array<EvidenceLine> } | undefined {
    if (!this.open) {
      if (!text.includes("Root Cause (first observed failure)")) return undefined
      this.open = true
      this.lines = 0
      this.rank = this.exitCode = this.pid = this.signal = undefined
      this.evidence.length = 0
      this.evidence.push({ line: no, text: shown })
      return undefined
    }
    const t = text.trim().replace(/^(?:stderr|stdout):\s*/, "")
    const rank = /^rank\s*:\s*(\d+)(?: \(local_rank: (\d+)\))?/.exec(t)
    const exit = /^exitcode\s*:\s*(-?\d+)(?: \(pid: (\d+)\))?/.exec(t)
    const traceback = /^traceback\s*:\s*(.*)$/.exec(t)
    if (rank) {
      this.rank = Number(rank[1])
      this.evidence.push({ line: no, text: shown })
    } else if (exit) {
      this.exitCode = Number(exit[1])
      if (exit[2] !== undefined) this.pid = Number(exit[2])
      this.evidence.push({ line: no, text: shown })
    } else if (traceback) {
      const signal = SIGNAL_RECEIVED.exec(traceback[1]!)
      if (signal) {
        this.signal = signal[2]
        this.evidence.push({ line: no, text: shown })
      }
    }
    // the table closes with a `====` rule; a pasted one may just stop
    if (/^={8,}/.test(t) || ++this.lines > 12) return this.close()
    return undefined
  }

  /** The root cause read so far, when the log ends inside the table. */
  close(): { end: RankEnd; evidence: Array<EvidenceLine> } | undefined {
    if (!this.open) return undefined
    this.open = false
    if (this.exitCode === undefined) return undefined
    const end: RankEnd = {
      ...endOf(this.exitCode),
      ...(this.signal === undefined ? {} : { signal: this.signal }),
      ...(this.rank === undefined ? {} : { rank: this.rank }),
      ...(this.pid === undefined ? {} : { pid: this.pid })
    }
    return { end, evidence: [...this.evidence] }
  }
}
