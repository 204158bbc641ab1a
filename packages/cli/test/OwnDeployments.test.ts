/**
 * A pid or port of one of our own deployments is named as that deployment, with the
 * `mlops stop` that frees it: the port holder (PortUnavailable) and the GPU holders (GpusBusy).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ExitCode } from "../src/ExitCodes.js"
import { session } from "./support/run.js"

const flags = ["--model-path", "/root/models/Qwen3.6-27B", "--tp", "2"]

describe("our own deployments, named", () => {
  it.live("the port holder and the GPU holders are named as the deployment that holds them", () =>
    Effect.gen(function* () {
      const user = session()
      const first = yield* user.mlops("launch", "--host", "sim", "--name", "first", "--json", "--", ...flags)
      assert.strictEqual(first.code, ExitCode.Ok, first.text)
      const pid = (
        JSON.parse(first.stdout.filter((l) => l !== "").at(-1)!) as {
          deployment: { server: { ids: { pid: number } } }
        }
      ).deployment.server.ids.pid

      const port = yield* user.mlops(
        "launch",
        "--host",
        "sim",
        "--name",
        "second",
        "--allow-busy-gpus",
        "--",
        ...flags
      )
      assert.strictEqual(port.code, ExitCode.Preflight, port.text)
      const said = port.stderr.join("\n")
      assert.include(said, `port 30000 on sim is held by pid ${pid} (`)
      assert.include(
        said,
        `, our deployment first; stop first (mlops stop --host sim --name first) or pass another --port`
      )

      const gpus = yield* user.mlops(
        "launch",
        "--host",
        "sim",
        "--name",
        "third",
        "--json",
        "--",
        ...flags,
        "--port",
        "30001"
      )
      assert.strictEqual(gpus.code, ExitCode.Preflight, gpus.text)
      const refusal = JSON.parse(gpus.stdout.filter((l) => l !== "").at(-1)!) as {
        _tag: string
        holders: Array<{ pid: number; deployment?: string }>
      }
      assert.strictEqual(refusal._tag, "GpusBusy")
      assert.deepStrictEqual(
        refusal.holders.map((h) => [h.pid, h.deployment]),
        [
          [pid, "first"],
          [pid, "first"]
        ]
      )
    })
  )
})
