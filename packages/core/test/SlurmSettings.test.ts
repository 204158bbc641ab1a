import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import * as Hosts from "../src/Hosts.js"
import { decode } from "../src/internal/hostsFile.js"
import * as SlurmSettings from "../src/SlurmSettings.js"

const hostsWith = (entry: unknown) => {
  const home = mkdtempSync(join(tmpdir(), "mlops-slurm-hosts-"))
  const file = join(home, "hosts.json")
  writeFileSync(file, JSON.stringify({ hosts: { login1: entry } }))
  return { home, file }
}

describe("SlurmSettings", () => {
  it.effect('a hosts.json entry with "slurm" makes the host a login node with those settings', () =>
    Effect.gen(function* () {
      const slurm = {
        partition: "gpu",
        account: "lab",
        qos: "normal",
        constraint: "a100",
        time: "8:00:00",
        gres: "gpu:a100"
      }
      const { home } = hostsWith({ hostname: "127.0.0.1", slurm })
      const hosts = yield* Hosts.make({ homeDir: home, localUser: "tester", mlopsHome: home })
      const host = yield* hosts.resolve("login1")
      assert.deepStrictEqual(host.slurm, slurm)
      const plain = hostsWith({ hostname: "127.0.0.1" })
      const other = yield* (yield* Hosts.make({
        homeDir: plain.home,
        localUser: "tester",
        mlopsHome: plain.home
      })).resolve("login1")
      assert.strictEqual(other.slurm, undefined)
    })
  )

  it('a bad "slurm" field names slurm.<field>, what it must be, and a did-you-mean', () => {
    const problem = (slurm: unknown) => {
      const { file } = hostsWith({ slurm })
      const decoded = decode(file, JSON.stringify({ hosts: { login1: { slurm } } }))
      if (Either.isRight(decoded)) throw new Error(`accepted ${JSON.stringify(slurm)}`)
      return decoded.left
    }
    const time = problem({ time: "four hours" })
    assert.deepStrictEqual([time.host, time.field], ["login1", "slurm.time"])
    assert.include(time.reason, 'expected a Slurm time such as 30, 4:00:00 or 1-12:00:00, got "four hours"')
    const typo = problem({ partiton: "gpu" })
    assert.strictEqual(typo.field, "slurm.partiton")
    assert.include(typo.fix ?? "", 'did you mean "slurm.partition"?')
    assert.strictEqual(problem({ gres: "gpu a100" }).field, "slurm.gres")
    assert.strictEqual(problem({ cpusPerTask: 0 }).field, "slurm.cpusPerTask")
    assert.strictEqual(problem("gpu").field, "slurm")
  })

  it("CLI options override hosts.json field by field; sbatch options for tp×pp GPUs on one node", () => {
    const merged = SlurmSettings.merge(
      { partition: "gpu", time: "8:00:00", gres: "gpu:a100" },
      { time: "1:00:00", qos: "debug" }
    )
    assert.deepStrictEqual(merged, { partition: "gpu", time: "1:00:00", gres: "gpu:a100", qos: "debug" })
    assert.deepStrictEqual(SlurmSettings.sbatchOptions(merged, 4), [
      "--partition=gpu",
      "--qos=debug",
      "--time=1:00:00",
      "--nodes=1",
      "--ntasks=1",
      "--gres=gpu:a100:4"
    ])
    assert.deepStrictEqual(SlurmSettings.sbatchOptions({}, 2), ["--nodes=1", "--ntasks=1", "--gres=gpu:2"])
  })

  it("across nodes: a task per node and the GRES count per node", () => {
    assert.deepStrictEqual(SlurmSettings.sbatchOptions({ nodes: 2, partition: "gpu" }, 4), [
      "--partition=gpu",
      "--nodes=2",
      "--ntasks=2",
      "--ntasks-per-node=1",
      "--gres=gpu:4"
    ])
  })
})
