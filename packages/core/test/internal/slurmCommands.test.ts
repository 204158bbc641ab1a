import { assert, describe, it } from "@effect/vitest"
import { unavailable } from "../../src/internal/slurmCommands.js"
import { captured } from "../support/slurmCaptured.js"

const result = (name: string) => {
  const entry = captured(name)
  return { exitCode: entry.exitCode, signal: null, stdout: entry.stdout, stderr: entry.stderr }
}

describe("slurmCommands.unavailable", () => {
  it("a controller that does not answer, munge that fails, no slurm.conf: SlurmUnavailable with the line and the fix", () => {
    const down = unavailable("login1", ["squeue"], result("squeue controller down"))
    assert.strictEqual(
      down?.reason,
      "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"
    )
    assert.include(down?.fix, "scontrol ping` on login1")
    const submit = unavailable("login1", ["sbatch"], result("sbatch controller down"))
    assert.include(submit?.reason, "Unable to contact slurm controller")
    const munge = unavailable("login1", ["sinfo"], result("sinfo munge down"))
    assert.match(munge?.reason ?? "", /^Munge encode failed: Failed to access/)
    assert.include(munge?.fix, "munged runs on login1")
    const noConf = unavailable("login1", ["sinfo"], result("sinfo no slurm.conf"))
    assert.include(noConf?.fix, "no slurm.conf on login1")
  })

  it("a missing command (exit 127) says this is not a login node; a job-level failure is not unavailability", () => {
    const missing = unavailable("gpu7", ["sbatch", "x"], {
      exitCode: 127,
      signal: null,
      stdout: "",
      stderr: "sh: sbatch: not found"
    })
    assert.deepStrictEqual([missing?._tag, missing?.reason], ["SlurmUnavailable", "sbatch not found"])
    assert.include(missing?.fix, "login node")
    assert.strictEqual(unavailable("login1", ["sbatch"], result("sbatch too many gpus")), undefined)
    assert.strictEqual(unavailable("login1", ["squeue"], result("squeue unknown job")), undefined)
  })
})
