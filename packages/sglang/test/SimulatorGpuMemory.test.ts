/**
 * The sim models held GPU memory honestly: a server sizes itself from what other processes
 * leave free, so one started on busy GPUs fails the way SGLang does, and nvidia-smi never shows
 * more memory in use than the GPU has.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConnectionPool, Probes } from "@mlops/core"
import { FakeHost } from "@mlops/core/testing"
import { llama3_8b } from "@mlops/serve/SampleModels"
import { Effect } from "effect"
import * as Simulator from "../src/Simulator.js"
import * as Serving from "./support/serving.js"
import { drive, fixedArgv } from "./support/sim.js"

const env = { SGLANG_ENABLE_SPEC_V2: "1" }
const smallModel = "/root/models/Llama-3-8B"

const gpuUse = Effect.flatMap(ConnectionPool.ConnectionPool, (pool) => pool.get("sim")).pipe(
  Effect.flatMap(Probes.gpus),
  Effect.map((gpus) => gpus.map((g) => [g.memoryUsedMiB, g.memoryTotalMiB] as const))
)

const withSmallModel = Effect.flatMap(FakeHost.host("sim"), (h) =>
  h.fs.write(`${smallModel}/config.json`, JSON.stringify(llama3_8b))
)

describe("Simulator GPU memory", () => {
  it.effect(
    "a second server on GPUs another one holds runs out of memory; nvidia-smi stays within the GPUs",
    () =>
      Effect.gen(function* () {
        yield* drive(Serving.launchDeployment({ host: "sim", argv: fixedArgv, env, name: "first" }))
        const second = yield* Effect.flip(
          drive(
            Serving.launchDeployment({
              host: "sim",
              argv: [...fixedArgv, "--port", "30001"],
              env,
              name: "second",
              allowBusyGpus: true
            })
          )
        )
        assert.strictEqual(second._tag, "OOM")
        for (const [used, total] of yield* gpuUse) assert.isAtMost(used, total)
      }).pipe(Effect.provide(Simulator.layer))
  )

  it.effect("one busy GPU of two: the ranks' free memory differs, SGLang's imbalance check fails it", () =>
    Effect.gen(function* () {
      yield* withSmallModel
      yield* drive(
        Serving.launchDeployment({ host: "sim", argv: ["--model-path", smallModel], name: "gpu0" })
      )
      const both = yield* Effect.flip(
        drive(
          Serving.launchDeployment({
            host: "sim",
            argv: ["--model-path", smallModel, "--tp", "2", "--port", "30001"],
            name: "both",
            allowBusyGpus: true
          })
        )
      )
      assert.strictEqual(both._tag, "OOM")
      if (both._tag === "OOM") assert.strictEqual(both.kind, "unbalanced")
      // the other GPU is free: --base-gpu-id 1 starts there
      const other = yield* drive(
        Serving.launchDeployment({
          host: "sim",
          argv: ["--model-path", smallModel, "--base-gpu-id", "1", "--port", "30002"],
          name: "gpu1"
        })
      )
      assert.isDefined(other.readyAt)
      for (const [used, total] of yield* gpuUse) assert.isAtMost(used, total)
    }).pipe(Effect.provide(Simulator.layer))
  )
})
