import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Either } from "effect"
import * as RemoteCommand from "../src/RemoteCommand.js"
import * as SlurmScript from "../src/SlurmScript.js"

const SECRET = "hf_s3cr3t value with 'quotes'"

// the scripts' directories, removed when the tests end
const made: Array<string> = []
const tempDir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true })
})

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
    const dir = tempDir("mlops-slurm-script-")
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

  it("across nodes: the script runs one srun step with a task per node, and each task runs its own rank with the head's address", () => {
    const dir = tempDir("mlops-slurm-spread-")
    const token = "$MLOPS_HEAD"
    const rank = (n: number) =>
      RemoteCommand.make(
        [
          "python3",
          "-c",
          "import os,sys; print(os.environ['HF_TOKEN']); print(sys.argv[1:])",
          "--node-rank",
          String(n),
          "--dist-init-addr",
          `${token}:29500`
        ],
        { env: { HF_TOKEN: SECRET } }
      )
    const job = script(dir, {
      command: rank(0),
      spread: { others: [rank(1)], headToken: token, scriptPath: join(dir, "job.sh") }
    })
    const text = Either.getOrThrow(SlurmScript.render(job))
    assert.notInclude(text, "hf_s3cr3t")
    const last = text.trimEnd().split("\n").pop()!
    assert.strictEqual(
      last,
      `exec srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/sh ${join(dir, "job.sh")}`
    )
    writeFileSync(job.envPath, SlurmScript.envFile(job.command), { mode: 0o600 })
    writeFileSync(join(dir, "job.sh"), text)
    // as srun runs it on the second node: that node's rank, the head's address in its word
    const run = (nodeId: string) =>
      execFileSync("sh", [join(dir, "job.sh")], {
        cwd: dir,
        encoding: "utf8",
        env: {
          PATH: process.env.PATH,
          MLOPS_RANK_STEP: "1",
          SLURM_NODEID: nodeId,
          MLOPS_HEAD: "127.0.0.3"
        }
      })
    const second = run("1")
    assert.include(second, SECRET)
    assert.include(second, "['--node-rank', '1', '--dist-init-addr', '127.0.0.3:29500']")
    assert.include(run("0"), "['--node-rank', '0', '--dist-init-addr', '127.0.0.3:29500']")
    // a node the job has no rank for says so and fails
    const missing = (() => {
      try {
        run("2")
        return "ran"
      } catch (error) {
        return String((error as { readonly stdout?: string }).stdout)
      }
    })()
    assert.include(missing, "[mlops] no rank for node 2 of the job")
  })
})
