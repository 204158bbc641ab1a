import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import { parseNodes, parsePartitions } from "../../src/internal/slurmClusterParsers.js"
import { parseSacct, parseScontrolJobs, parseSqueue } from "../../src/internal/slurmJobParsers.js"
import {
  formatTime,
  gresCount,
  jobState,
  parseGres,
  parseKeyValues,
  parseSubmitted,
  parseTime
} from "../../src/internal/slurmParsers.js"
import { describeState, firstNode, type SlurmJob } from "../../src/SlurmJob.js"
import { captured } from "../support/slurmCaptured.js"

const out = captured

const right = <A>(either: Either.Either<A, string>): A => {
  if (Either.isLeft(either)) throw new Error(either.left)
  return either.right
}

const byName = (jobs: ReadonlyArray<SlurmJob>, name: string) => {
  const job = jobs.find((j) => j.name === name)
  if (job === undefined) throw new Error(`no job ${name} in ${jobs.map((j) => j.name).join(", ")}`)
  return job
}

describe("slurmParsers", () => {
  it("parseTime reads every Slurm time form; UNLIMITED is null; junk is undefined", () => {
    assert.deepStrictEqual(
      [
        "30",
        "5:00",
        "0:03",
        "1:00:00",
        "00:10:00",
        "2-12",
        "2-12:30",
        "1-00:00:01",
        "UNLIMITED",
        "INFINITE",
        "soon",
        ""
      ].map(parseTime),
      [1800, 300, 3, 3600, 600, 216_000, 217_800, 86_401, null, null, undefined, undefined]
    )
    assert.deepStrictEqual([formatTime(600), formatTime(86_401)], ["00:10:00", "1-00:00:01"])
  })

  it("parseGres reads sinfo, scontrol, squeue (22.05: gres:gpu:N) and TRES spellings", () => {
    assert.deepStrictEqual(parseGres("gpu:2"), [{ name: "gpu", count: 2 }])
    assert.deepStrictEqual(parseGres("gres:gpu:1"), [{ name: "gpu", count: 1 }])
    assert.deepStrictEqual(parseGres("gpu:a100:4(S:0-1),mps:100"), [
      { name: "gpu", type: "a100", count: 4 },
      { name: "mps", count: 100 }
    ])
    assert.deepStrictEqual(parseGres("gres/gpu=2"), [{ name: "gpu", count: 2 }])
    assert.deepStrictEqual([parseGres("(null)"), parseGres("N/A")], [[], []])
    const node = parseGres("gpu:a100:4(S:0),gpu:v100:2(S:1)")
    assert.deepStrictEqual(
      [gresCount(node, "gpu"), gresCount(node, "gpu", "v100"), gresCount(node, "GPU")],
      [6, 2, 0]
    )
  })

  it("parseKeyValues keeps values with spaces and = inside (scontrol show node -o)", () => {
    const record = parseKeyValues(out("scontrol show node").stdout.trim())
    assert.strictEqual(record.get("Gres"), "gpu:2")
    assert.strictEqual(record.get("Partitions"), "debug,short")
    assert.match(record.get("OS")!, /^Linux .+ #1 SMP/)
    assert.strictEqual(record.get("CfgTRES"), "cpu=2,mem=2000M,billing=2")
    assert.strictEqual(record.get("AllocTRES"), "")
  })

  it("parseSubmitted reads sbatch --parsable (ID and ID;cluster) and refuses anything else", () => {
    assert.deepStrictEqual(parseSubmitted(out("sbatch mlops-hold").stdout), Either.right("2"))
    assert.deepStrictEqual(parseSubmitted("4242;cluster2\n"), Either.right("4242"))
    assert.isTrue(Either.isLeft(parseSubmitted("Submitted batch job 12\n")))
  })

  it("squeue: a RUNNING job on its node, PENDING with Resources and PartitionTimeLimit reasons, GPUs from %b", () => {
    const jobs = right(parseSqueue(out("squeue running and pending").stdout))
    const hold = byName(jobs, "mlops-hold")
    assert.deepStrictEqual(hold.state, { _tag: "Running", node: "vm" })
    assert.deepStrictEqual(
      [hold.gpus, hold.partition, hold.user, hold.timeLimitSeconds],
      [2, "debug", "root", null]
    )
    const wait = byName(jobs, "mlops-wait")
    assert.deepStrictEqual(wait.state, { _tag: "Pending", reason: "Resources" })
    assert.deepStrictEqual([wait.gpus, wait.nodes, wait.timeLimitSeconds], [1, undefined, 300])
    assert.deepStrictEqual(byName(jobs, "mlops-too-long").state, {
      _tag: "Pending",
      reason: "PartitionTimeLimit"
    })
    assert.strictEqual(byName(jobs, "mlops-overtime").gpus, undefined)
    assert.strictEqual(describeState(wait), "PENDING (Resources)")
    assert.strictEqual(describeState(hold), "RUNNING on vm")
  })

  it("squeue: an ended job is not listed, an unknown one is an error (22.05)", () => {
    assert.deepStrictEqual(right(parseSqueue(out("squeue ended job").stdout)), [])
    assert.match(out("squeue unknown job").stderr, /Invalid job id specified/)
    assert.isTrue(Either.isLeft(parseSqueue("JOBID PARTITION NAME\n")))
  })

  it("scontrol show job: each end with Slurm's state and ExitCode", () => {
    const one = (name: string) => right(parseScontrolJobs(out(name).stdout))[0]!
    const cases: Array<[string, string]> = [
      ["scontrol show job exit 3", "FAILED ExitCode=3:0"],
      ["scontrol show job child killed", "FAILED ExitCode=137:0"],
      ["scontrol show job cancelled", "CANCELLED ExitCode=0:15"],
      ["scontrol show job completed", "COMPLETED ExitCode=0:0"],
      ["scontrol show job running", "RUNNING on vm"],
      ["scontrol show job pending", "PENDING (Resources)"]
    ]
    assert.deepStrictEqual(
      cases.map(([name]) => describeState(one(name))),
      cases.map(([, want]) => want)
    )
    // the batch shell ends by SIGTERM (0:15) or traps it (143:0), depending on timing
    assert.match(describeState(one("scontrol show job timeout")), /^TIMEOUT ExitCode=(?:143:0|0:15)$/)
    assert.strictEqual(one("scontrol show job timeout").state._tag, "Timeout")
    assert.deepStrictEqual(one("scontrol show job exit 3").state, {
      _tag: "Failed",
      exitCode: { code: 3, signal: 0 },
      reason: "NonZeroExitCode"
    })
    const running = one("scontrol show job running")
    assert.deepStrictEqual([running.gpus, running.user, running.source], [2, "root", "scontrol"])
  })

  it("sacct -c (jobcomp file): ended jobs with exit codes; Timelimit in minutes; user without uid", () => {
    const jobs = right(parseSacct(out("sacct -c").stdout))
    assert.deepStrictEqual(
      ["mlops-hold", "mlops-exit3", "mlops-child-killed", "mlops-ok", "mlops-overtime"].map((name) =>
        describeState(byName(jobs, name))
      ),
      [
        "CANCELLED ExitCode=0:0",
        "FAILED ExitCode=3:0",
        "FAILED ExitCode=137:0",
        "COMPLETED ExitCode=0:0",
        "TIMEOUT ExitCode=0:0"
      ]
    )
    const wait = byName(jobs, "mlops-wait")
    assert.deepStrictEqual([wait.timeLimitSeconds, wait.source], [300, "sacct"])
    assert.deepStrictEqual(right(parseSacct(out("sacct -c unknown job").stdout)), [])
    assert.match(out("sacct without accounting storage").stderr, /Slurm accounting storage is disabled/)
  })

  it("sacct from a database: steps are skipped, `CANCELLED by UID` is CANCELLED", () => {
    const rows = [
      "812|CANCELLED by 1000|0:15|gpu07|00:12:01|04:00:00|gpu|alice|mlops-qwen",
      "812.batch|CANCELLED|0:15|gpu07|00:12:02|||| batch",
      "813|OUT_OF_MEMORY|0:125|gpu02|00:00:40|04:00:00|gpu|alice|mlops-big",
      "814|NODE_FAIL|0:0|gpu03|01:00:00|04:00:00|gpu|bob|mlops-x",
      "815|PREEMPTED|0:0|gpu04|00:30:00|04:00:00|gpu|bob|mlops-y"
    ].join("\n")
    const jobs = right(parseSacct(rows))
    assert.deepStrictEqual(
      jobs.map((job) => [job.id, job.state._tag, job.slurmState]),
      [
        ["812", "Cancelled", "CANCELLED"],
        ["813", "OutOfMemory", "OUT_OF_MEMORY"],
        ["814", "NodeFail", "NODE_FAIL"],
        ["815", "Preempted", "PREEMPTED"]
      ]
    )
    assert.deepStrictEqual(jobs[1]!.state, { _tag: "OutOfMemory", exitCode: { code: 0, signal: 125 } })
  })

  it("jobState: the reference's end states, and rare ones by name", () => {
    // the reference (Debian 22.05 on a CI machine): exit 3, scancel, a child killed by SIGKILL
    assert.deepStrictEqual(
      jobState({ state: "FAILED", reason: "NonZeroExitCode", exitCode: "3:0", nodes: "vm" }),
      {
        _tag: "Failed",
        exitCode: { code: 3, signal: 0 },
        reason: "NonZeroExitCode"
      }
    )
    assert.deepStrictEqual(jobState({ state: "CANCELLED", exitCode: "0:15" }), {
      _tag: "Cancelled",
      exitCode: { code: 0, signal: 15 }
    })
    assert.deepStrictEqual(jobState({ state: "NODE_FAIL", nodes: "gpu3" }), {
      _tag: "NodeFail",
      node: "gpu3"
    })
    assert.deepStrictEqual(jobState({ state: "BOOT_FAIL" }), { _tag: "Ended", slurmState: "BOOT_FAIL" })
    assert.deepStrictEqual(jobState({ state: "CONFIGURING" }), { _tag: "Other", slurmState: "CONFIGURING" })
    assert.deepStrictEqual(jobState({ state: "COMPLETED+" }), { _tag: "Completed" })
  })

  it("partitions and nodes (scontrol show partition -o, sinfo -N)", () => {
    const partitions = right(parsePartitions(out("scontrol show partition").stdout))
    assert.deepStrictEqual(
      partitions.map((p) => [p.name, p.isDefault, p.state, p.maxTimeSeconds, p.allowAccounts]),
      [
        ["debug", true, "UP", null, "ALL"],
        ["short", false, "UP", 600, "ALL"]
      ]
    )
    assert.match(out("scontrol show partition nope").stdout, /Partition nope not found/)
    const nodes = right(parseNodes(out("sinfo nodes").stdout))
    assert.deepStrictEqual(nodes, [
      {
        name: "vm",
        partitions: ["debug", "short"],
        state: "idle",
        gres: [{ name: "gpu", count: 2 }],
        features: []
      }
    ])
  })

  it("the first node of a node list, as Slurm compresses them (rank 0 runs there)", () => {
    assert.strictEqual(firstNode("vm"), "vm")
    assert.strictEqual(firstNode("node-a,node-b"), "node-a")
    assert.strictEqual(firstNode("gpu[01-02,05]"), "gpu01")
    assert.strictEqual(firstNode("gpu[07,09-10],cpu1"), "gpu07")
    assert.strictEqual(firstNode("rack1-[3-4]-gpu"), "rack1-3-gpu")
    assert.strictEqual(firstNode("a[1-2]b[3-4]"), "a1b3")
    assert.strictEqual(firstNode("a[1-2]b[3-4],c9"), "a1b3")
  })
})
