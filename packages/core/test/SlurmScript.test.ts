import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as SlurmScript from "../src/SlurmScript.js"

const SECRET = "hf_s3cr3t value with 'quotes'"

const script = (dir: string, overrides: Partial<SlurmScript.JobScript> = {}): SlurmScript.JobScript => ({
  jobName: "mlops-qwen",
  options: ["--partition=gpu", "--gres=gpu:2"],
  logPath: join(dir, "log"),
  envPath: join(dir, "env"),
  workDir: dir,
  command: RemoteCommand.make(
    ["python3", "-c", "import os,sys; print(os.environ['HF_TOKEN']); print(sys.argv[1:])", "--tp", "2"],
    {
      env: { HF_TOKEN: SECRET }
    }
  ),
  ...overrides
})

describe("SlurmScript", () => {
  it("#SBATCH lines for the job, output appended to the deployment log, no requeue", () => {
    const text = Either.getOrThrow(SlurmScript.render(script("/home/me/.mlops/deployments/qwen")))
    const directives = text.split("\n").filter((line) => line.startsWith("#SBATCH"))
    assert.deepStrictEqual(directives, [
      "#SBATCH --job-name=mlops-qwen",
      "#SBATCH --output=/home/me/.mlops/deployments/qwen/log",
      "#SBATCH --open-mode=append",
      "#SBATCH --no-requeue",
      "#SBATCH --chdir=/home/me/.mlops/deployments/qwen",
      "#SBATCH --partition=gpu",
      "#SBATCH --gres=gpu:2"
    ])
    assert.isTrue(text.startsWith("#!/bin/sh\n"))
  })

  it("the engine is exec'd (the job's main process), never backgrounded; the secret is only in the env file", () => {
    const dir = mkdtempSync(join(tmpdir(), "mlops-slurm-script-"))
    const job = script(dir)
    const text = Either.getOrThrow(SlurmScript.render(job))
    assert.notInclude(text, "hf_s3cr3t")
    assert.notInclude(text, "nohup")
    assert.notMatch(text, /&\s*$/m)
    const last = text.trimEnd().split("\n").pop()!
    assert.match(last, /^exec python3 /)
    // run it as sbatch would (sh, in the job's directory): the env file reaches the engine
    writeFileSync(job.envPath, SlurmScript.envFile(job.command), { mode: 0o600 })
    writeFileSync(join(dir, "job.sh"), text)
    const output = execFileSync("sh", [join(dir, "job.sh")], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH, SLURM_JOB_ID: "7" }
    })
    assert.include(output, SECRET)
    assert.include(output, "['--tp', '2']")
    assert.include(output, "[mlops] slurm job 7 on ")
    assert.include(readFileSync(job.envPath, "utf8"), "export HF_TOKEN=")
  })

  it("a value that cannot go on an #SBATCH line, or a relative path, is refused with the reason", () => {
    const dir = "/home/me/d"
    const spaced = SlurmScript.render(script(dir, { options: ["--constraint=a100 h100"] }))
    assert.include(Either.isLeft(spaced) ? spaced.left : "", '"--constraint=a100 h100"')
    const pattern = SlurmScript.render(script(dir, { logPath: "/home/me/%j.log" }))
    assert.isTrue(Either.isLeft(pattern))
    const relative = SlurmScript.render(script(dir, { envPath: "env" }))
    assert.include(Either.isLeft(relative) ? relative.left : "", "env file path must be absolute")
  })
})
