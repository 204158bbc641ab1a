/**
 * srun's lines about the tasks of a step across nodes: the first names the task that ended the
 * step (its node, its signal), the ones srun ends afterwards are consequences. The tail below is
 * what Slurm 22.05 printed on the test cluster (two slurmd in network namespaces) when rank 1's
 * process was SIGKILLed while it loaded its weights.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Classifier from "../../../src/Classifier.js"
import type { LaunchFailure } from "../../../src/Failures.js"

const loading = [
  "[2026-12-02 20:05:58 TP2] Load weight begin. avail mem=46.93 GB",
  "[2026-12-02 20:05:58 TP0] Load weight begin. avail mem=46.93 GB"
]

const killedTail = [
  "srun: error: node-b: task 1: Killed",
  "srun: launch/slurm: _step_signal: Terminating StepId=1.0",
  "slurmstepd-node-a: error: *** STEP 1.0 ON node-a CANCELLED AT 2026-12-02T20:05:58 ***",
  "srun: error: node-a: task 0: Terminated",
  "srun: Force Terminated StepId=1.0"
]

const failureOf = (lines: ReadonlyArray<string>, exit = { exitCode: 143, signal: null }): LaunchFailure => {
  const { failure } = Classifier.classifyText(lines.join("\n"), exit)
  assert.isDefined(failure, lines.join("\n"))
  return failure!
}

const field = (f: LaunchFailure, name: string): unknown => (f as unknown as Record<string, unknown>)[name]

describe("srun's task lines", () => {
  it("the task srun saw die first is named with its node and its own signal, not the job's SIGTERM", () => {
    const failure = failureOf([...loading, ...killedTail])
    assert.strictEqual(failure._tag, "ProcessExited")
    assert.strictEqual(failure.process, "task 1 on node-b")
    assert.strictEqual(field(failure, "signal"), "SIGKILL")
    assert.include(failure.fix?.action ?? "", "dmesg")
    assert.include(failure.fix?.action ?? "", "node-b")
  })

  it("a task that exited with its own error comes first: a task srun killed afterwards is not blamed", () => {
    const failure = failureOf([
      ...loading,
      "srun: error: node-b: task 1: Exited with exit code 1",
      "srun: launch/slurm: _step_signal: Terminating StepId=4.0",
      "srun: error: node-a: task 0: Killed"
    ])
    assert.notStrictEqual(failure.process, "task 0 on node-a")
    assert.notInclude(failure.message, "node-a")
  })

  it("a cgroup's memory limit and a crash each name their task and node", () => {
    const oom = failureOf([...loading, "srun: error: gpu02: task 1: Out Of Memory"])
    assert.strictEqual(oom.process, "task 1 on gpu02")
    assert.include(oom.fix?.action ?? "", "--mem")
    const segv = failureOf([...loading, "srun: error: gpu07: task 0: Segmentation fault (core dumped)"])
    assert.strictEqual(segv.process, "task 0 on gpu07")
    assert.strictEqual(field(segv, "signal"), "SIGSEGV")
  })
})
