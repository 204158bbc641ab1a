/**
 * `mlops` on a Slurm login node, end to end: a real Slurm 22.05 cluster (core's test support),
 * the harness sshd as its login node (its hosts.json entry has `slurm`), and the stand-in SGLang
 * (written from SGLang's facts) as the job. launch submits and follows the job to ready;
 * status shows it by its record and lists the cluster's mlops jobs; stop cancels it.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type * as TestSlurm from "../../../core/test/support/Slurm.js"
import type * as Sshd from "../../../core/test/support/Sshd.js"
import type * as Standin from "../../../sglang/test/integration/standin/install.js"
import { alias, fixedStory, freePort, startCluster } from "../../../sglang/test/integration/support.js"
import { ExitCode } from "../../src/ExitCodes.js"
import { mlopsOn, mlopsWith } from "../support/run.js"

class Cluster extends Context.Tag("test/CliSlurmCluster")<
  Cluster,
  { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd; readonly slurm: TestSlurm.SlurmCluster }
>() {}

const ClusterLayer = Layer.scoped(
  Cluster,
  Effect.gen(function* () {
    const { standin, sshd, slurm } = yield* startCluster
    // the login node: its entry has Slurm settings
    fs.writeFileSync(
      path.join(standin.mlopsHome, "hosts.json"),
      JSON.stringify({
        hosts: { [alias]: { python: standin.venv, stateDir: standin.stateDir, slurm: { time: "10:00" } } }
      })
    )
    return { standin, sshd, slurm }
  })
)

describe("mlops on a Slurm login node (real cluster, stand-in SGLang)", () => {
  layer(ClusterLayer, { excludeTestServices: true, timeout: "180 seconds" })((it) => {
    it.effect(
      "launch submits the job and follows it to ready; status shows the job; a relaunch finds it, --replace resubmits; stop cancels it",
      () =>
        Effect.gen(function* () {
          const { standin, sshd, slurm } = yield* Cluster
          const run = mlopsOn(sshd.sshConfigPath, standin.mlopsHome)
          const name = `cli-slurm-${process.pid}`
          const port = yield* freePort

          const launch = (options: ReadonlyArray<string>, flags: ReadonlyArray<string>) =>
            run(
              "launch",
              "--host",
              alias,
              "--name",
              name,
              "--env",
              "STANDIN_PHASE_SECONDS=0.02",
              ...options,
              "--",
              ...fixedStory(standin.modelPath, port),
              // where the login node reaches a server on the node
              "--host",
              slurm.nodeAddress,
              ...flags
            )

          const launched = yield* launch([], [])
          assert.strictEqual(launched.code, ExitCode.Ok, launched.text)
          const submitted = /submitted Slurm job (\d+)/.exec(launched.text)
          assert.isNotNull(submitted, launched.text)
          const job = submitted![1]!
          // its states as polled (ready may come before a poll sees it RUNNING)
          assert.match(launched.text, new RegExp(`Slurm job ${job}: (?:PENDING|RUNNING on ${slurm.node})`))
          assert.include(launched.text, `${name} is ready on ${alias}`)

          const status = yield* run("status", "--host", alias)
          assert.strictEqual(status.code, ExitCode.Ok, status.text)
          const row = status.stdout.find((line) => line.includes(name) && line.includes("sglang"))
          assert.isDefined(row, status.text)
          assert.include(row!, `running (Slurm job ${job}: RUNNING on ${slurm.node}, 2 GPUs)`)
          assert.include(row!, "healthy")
          assert.include(status.text, "Slurm jobs named mlops-* on")
          assert.isDefined(
            status.stdout.find((line) => line.startsWith(job) && line.includes(name)),
            status.text
          )

          // the same launch again: the job that runs is the answer, nothing is submitted
          const again = yield* launch([], [])
          assert.strictEqual(again.code, ExitCode.Ok, again.text)
          assert.include(again.text, `already running with the same flags (Slurm job ${job})`)
          assert.notInclude(again.text, "submitted Slurm job")
          // --replace: the old job is cancelled, a new one runs
          const replaced = yield* launch(["--replace"], ["--mem-fraction-static", "0.85"])
          const second = /submitted Slurm job (\d+)/.exec(replaced.text)?.[1]
          assert.isDefined(second, replaced.text)
          assert.notStrictEqual(second, job)
          assert.notInclude(yield* slurm.client("squeue", ["-h", "-o", "%i"]), job)

          const stopped = yield* run("stop", "--host", alias, "--name", name)
          assert.strictEqual(stopped.code, ExitCode.Ok, stopped.text)
          assert.include(
            yield* slurm.client("scontrol", ["show", "job", "-o", second!]),
            "JobState=CANCELLED"
          )
          const after = yield* run("status", "--host", alias, "--json")
          const deployments = (
            JSON.parse(after.stdout.at(-1)!) as { deployments: Array<Record<string, unknown>> }
          ).deployments
          const mine = deployments.find((d) => d.name === name)
          assert.deepStrictEqual([mine?.alive, mine?.stopped], [false, "terminated"])
        })
    )

    it.effect(
      "Ctrl-C with --stop-on-interrupt during a Slurm launch: the job is cancelled and stderr confirms it through the job's state",
      () =>
        Effect.gen(function* () {
          const { standin, sshd, slurm } = yield* Cluster
          const name = `cli-slurm-int-${process.pid}`
          const port = yield* freePort
          // slow phases: the job runs well before it could be ready when Ctrl-C comes
          const ran = yield* mlopsWith(
            {
              mlopsHome: standin.mlopsHome,
              env: { MLOPS_SSH_CONFIG: sshd.sshConfigPath, MLOPS_HOME: standin.mlopsHome },
              interruptAfter: "8 seconds"
            },
            "launch",
            "--host",
            alias,
            "--name",
            name,
            "--stop-on-interrupt",
            "--env",
            "STANDIN_PHASE_SECONDS=3",
            "--",
            ...fixedStory(standin.modelPath, port),
            "--host",
            slurm.nodeAddress
          )
          const job = /submitted Slurm job (\d+)/.exec(ran.text)?.[1]
          assert.isDefined(job, ran.text)
          assert.include(
            ran.stderr.join("\n"),
            `interrupted: ${name} (Slurm job ${job}) was stopped on ${alias}`
          )
          const record = yield* slurm.client("scontrol", ["show", "job", "-o", job!])
          assert.include(record, "JobState=CANCELLED")
        })
    )
  })
})
