/**
 * A process died: a hard crash (a signal, a segfault; a shell's `Killed` is a job's host memory,
 * see jobs.ts), an exception no signature knows (`Unclassified`: never "no failure" when the log
 * shows one), and the launcher's own consequences of a child's death (`Rank 0 scheduler is
 * dead`, vLLM's `Engine core initialization failed. See root cause above`), which name nothing
 * and rank last.
 * @internal
 */
import * as F from "../../../Failures.js"
import { base, namedEngine, reasonOf, type Signature, type Subject, Tier } from "../../../LogSignature.js"
import { fallbackOf } from "./fallback.js"

const SIGNALS: Record<number, string> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  4: "SIGILL",
  6: "SIGABRT",
  7: "SIGBUS",
  8: "SIGFPE",
  9: "SIGKILL",
  11: "SIGSEGV",
  15: "SIGTERM"
}
export const signalName = (n: number): string => SIGNALS[n] ?? `signal ${n}`

const CRASH =
  /Fatal Python error: (?:Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction)|Segmentation fault|double free detected|free\(\): invalid pointer|malloc\(\): |corrupted size vs\. prev_size|stack smashing detected|core dumped|^\s*Killed\s*$|^\s*已杀死\s*$|died with <Signals\.(SIG\w+)|terminated by signal|killed by signal/

const signalOf = (text: string): string | undefined =>
  /Segmentation fault/.test(text)
    ? "SIGSEGV"
    : /Killed|已杀死/.test(text)
      ? "SIGKILL"
      : /Aborted/.test(text)
        ? "SIGABRT"
        : /Bus error/.test(text)
          ? "SIGBUS"
          : (/Signals\.(SIG\w+)/.exec(text)?.[1] ?? undefined)

export const crash: Signature = {
  id: "hard-crash",
  tag: "ProcessExited",
  tier: Tier.Crash,
  variants: [
    { from: "CPython faulthandler", text: "Fatal Python error: Segmentation fault" },
    { from: "multiprocessing", text: "Process SpawnProcess-1 died with <Signals.SIGKILL: 9>" }
  ],
  // srun's lines about its tasks are srunTask's (the first) or consequences
  match: (s) => s.record === undefined && CRASH.test(s.text) && !SRUN_TASK.test(s.text.trim()),
  build: (s, ctx) => {
    const signal = signalOf(s.text)
    // SGLang enables faulthandler in its schedulers: a bare `Fatal Python error` there is a rank's
    const scheduler = ctx.engine === "sglang" && s.process === "launcher" && /Fatal Python error/.test(s.text)
    return new F.ProcessExited({
      ...base(
        s,
        s.text.trim(),
        signal === "SIGKILL"
          ? {
              action: "killed from outside, most often the host's OOM killer: check `dmesg -T | grep -i oom`"
            }
          : signal === "SIGBUS"
            ? {
                action:
                  "a bus error: most often the shared memory (/dev/shm) ran out (a container's is 64 MB unless given more: mlops --shm-size 64g or hosts.json's \"shm\"; `df -h /dev/shm`), else a memory-mapped file (a checkpoint shard) was truncated or sits on a failing disk"
              }
            : undefined
      ),
      ...(scheduler ? { process: "scheduler" } : {}),
      ...(signal === undefined ? {} : { signal }),
      ...namedEngine(ctx.engine)
    })
  }
}

/**
 * srun's word on a task of a step across nodes (Slurm 22.05, seen on the test cluster):
 * `srun: error: node-b: task 1: Killed`; a cgroup's memory limit reads `task 1: Out Of Memory`.
 * With `--kill-on-bad-exit` the first such line is the task that ended the step: srun then ends
 * the others (`task 0: Terminated`, or `Killed` after KillWait), and their lines are consequences.
 */
const SRUN_TASK = /^srun: error: (\S+): tasks? ([\d,-]+): (.+)$/

const srunEnd = (what: string): { readonly signal?: string; readonly exitCode?: number } => {
  const code = /Exited with exit code (\d+)/.exec(what)
  if (code !== null) return { exitCode: Number(code[1]) }
  return /Killed|Out Of Memory/.test(what)
    ? { signal: "SIGKILL" }
    : /Segmentation fault/.test(what)
      ? { signal: "SIGSEGV" }
      : /Aborted/.test(what)
        ? { signal: "SIGABRT" }
        : /Bus error/.test(what)
          ? { signal: "SIGBUS" }
          : /Terminated/.test(what)
            ? { signal: "SIGTERM" }
            : {}
}

export const srunTask: Signature = {
  id: "srun-task-died",
  tag: "ProcessExited",
  tier: Tier.Crash,
  variants: [
    { from: "Slurm 22.05 srun (--kill-on-bad-exit)", text: "srun: error: node-b: task 1: Killed" },
    { from: "Slurm srun (task/cgroup memory limit)", text: "srun: error: gpu02: task 1: Out Of Memory" },
    { from: "Slurm srun", text: "srun: error: gpu02: task 0: Segmentation fault (core dumped)" }
  ],
  // only the first task line, and only a task ended by a signal (one that exited with a code
  // printed its own error above it; one srun terminated is another's consequence)
  match: (s, ctx) => {
    if (s.record !== undefined || ctx.srunTaskLines > 0) return false
    const m = SRUN_TASK.exec(s.text.trim())
    const signal = m === null ? undefined : srunEnd(m[3]!).signal
    return signal !== undefined && signal !== "SIGTERM"
  },
  build: (s, ctx) => {
    const [, node, task, what] = SRUN_TASK.exec(s.text.trim())!
    const end = srunEnd(what!)
    const action = /Out Of Memory/.test(what!)
      ? `task ${task} on ${node} went over the job's memory limit on that node (its cgroup): ask for more host memory (--mem, hosts.json "slurm": {"mem": ...}) or load less at once`
      : end.signal === "SIGKILL"
        ? `task ${task} on ${node} was killed from outside, most often that node's OOM killer: check \`dmesg -T | grep -i oom\` on ${node}`
        : `task ${task} on ${node} crashed (${end.signal}): its own lines above say where`
    return new F.ProcessExited({
      ...base(s, s.text.trim(), { action }),
      process: `task ${task} on ${node}`,
      ...end,
      ...namedEngine(ctx.engine)
    })
  }
}

const CONSEQUENCE =
  /^srun: error: \S+: tasks? [\d,-]+: |Engine core initialization failed|Initialization failed\. Please see the error messages above|scheduler died during initialization|Rank \d+ scheduler is dead|Received sigquit from a child process|SIGQUIT received|crashed with exit code|died unexpectedly|Got fatal signal from worker processes|EngineDeadError|EngineCore encountered (?:a fatal error|an issue)|Exit code: -?\d+|exited with code -?\d+|exited unexpectedly with code|Engine process failed to start|\bfailed to start\b|Worker failed with error|please check the stack trace above for the root cause|ChildFailedError|ActorDiedError|RayActorError|The actor died unexpectedly|ZMQError: Operation not supported/

const exitOf = (text: string): { exitCode?: number; signal?: string } => {
  const m = /exit code:? (-?\d+)|Exit code: (-?\d+)|exited (?:unexpectedly )?with code (-?\d+)/i.exec(text)
  if (!m) return {}
  const code = Number(m[1] ?? m[2] ?? m[3])
  return code < 0
    ? { signal: signalName(-code) }
    : code > 128
      ? { signal: signalName(code - 128) }
      : { exitCode: code }
}

export const consequence: Signature = {
  id: "child-death-consequence",
  tag: "ProcessExited",
  tier: Tier.Consequence,
  variants: [
    {
      from: "SGLang 0.4-0.5.x",
      text: "Received sigquit from a child process. It usually means the child failed."
    },
    {
      from: "SGLang 0.5.x",
      text: "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer."
    },
    { from: "SGLang 0.5.6", text: "Rank 0 scheduler is dead. Please check if there are relevant logs." },
    {
      from: "vLLM V1",
      text: "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    },
    { from: "vLLM V1", text: "Worker proc VllmWorker-3 died unexpectedly, shutting down executor." }
  ],
  // a record is a consequence only when all it raised is; a real exception in it is the finding
  match: (s) =>
    s.record === undefined
      ? CONSEQUENCE.test(s.text)
      : s.record.exceptions.length > 0 &&
        s.record.exceptions.every((e) => CONSEQUENCE.test(`${e.type}: ${e.message}`)),
  build: (s, ctx) => {
    const exit = exitOf(s.flat)
    const rank = /Rank (\d+) scheduler/.exec(s.flat)
    return new F.ProcessExited({
      ...base(
        s,
        reasonOf(s, CONSEQUENCE),
        exit.signal === "SIGKILL"
          ? { action: "likely the OS OOM killer (host RAM): check `dmesg -T | grep -i oom`" }
          : { action: "the root cause was printed earlier by the process that died: look above this line" }
      ),
      ...(rank ? { process: `rank ${rank[1]}` } : {}),
      ...exit,
      ...namedEngine(ctx.engine)
    })
  }
}

// an error a tool reports in its own words: docker, a CLI, a wrapper
const ERROR_WORDS = /^(?:Error|ERROR|FATAL|Fatal|fatal)(?: response from daemon)?:\s\S/

/** A log record at ERROR level before the server was up, or a tool's `Error: ...`, that no signature knows. */
export const errorLine: Signature = {
  id: "unrecognised-error-line",
  tag: "Unclassified",
  tier: Tier.Unknown,
  variants: [
    {
      from: "docker",
      text: "Error response from daemon: OCI runtime create failed: runc create failed: unable to start container process"
    },
    {
      from: "python logging",
      text: "2025-11-20 14:08:21,700 gpustack.worker.serve_manager ERROR Error provisioning model instance x: 'NoneType' object has no attribute 'y'"
    }
  ],
  match: (s) =>
    s.record === undefined && !s.afterUp && (s.level === "error" || ERROR_WORDS.test(s.text.trim())),
  build: (s) =>
    new F.Unclassified({
      ...base(s, s.text.trim(), {
        action:
          "no known cause matches: read this error and the lines above it; `mlops diagnose --json` shows the evidence"
      })
    })
}

/** The record's first exception that is not a launcher's consequence (the one to read). */
const unknownReason = (s: Subject): string => {
  const own = s.record?.exceptions.find((e) => !CONSEQUENCE.test(`${e.type}: ${e.message}`))
  return own === undefined ? reasonOf(s) : `${own.type}: ${own.message.split("\n")[0]}`.replace(/: $/, "")
}

/** The exception itself as the finding, when no signature knows it. */
export const unclassified: Signature = {
  id: "unclassified-exception",
  tag: "Unclassified",
  tier: Tier.Unknown,
  variants: [{ from: "any", text: "KeyError: 'lm_head.weight'" }],
  match: (s: Subject) =>
    s.final !== undefined && !/Warning$|^(?:SystemExit|KeyboardInterrupt)$/.test(s.final.type),
  // from the exception's structure when it says enough (`basis: "fallback"`), else the exception itself
  build: (s, ctx) =>
    fallbackOf(s, ctx) ??
    new F.Unclassified({
      ...base(s, unknownReason(s), {
        action:
          "no known cause matches: read the exception and the lines above it; `mlops diagnose --json` shows the evidence"
      }),
      exception: s.final!.type
    })
}
