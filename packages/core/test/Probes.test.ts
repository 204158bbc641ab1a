import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Connection } from "../src/Connection.js"
import { ConnectionPool } from "../src/ConnectionPool.js"
import * as FakeHost from "../src/FakeHost.js"
import * as Probes from "../src/Probes.js"
import * as RemoteCommand from "../src/RemoteCommand.js"

const a10 = (index: number, cap?: string): FakeHost.FakeGpu => ({
  index,
  name: "NVIDIA A10",
  memoryTotalMiB: 23028,
  memoryUsedMiB: 100 * index,
  uuid: `GPU-${index}`,
  ...(cap === undefined ? {} : { computeCapability: cap })
})

/** A python that answers the probe script like the real one would for a venv with sglang. */
const withConn = <A, E>(
  programs: ReadonlyArray<FakeHost.Program>,
  f: (conn: Connection) => Effect.Effect<A, E>
) =>
  Effect.flatMap(ConnectionPool, (pool) => pool.get("gpu")).pipe(
    Effect.flatMap(f),
    Effect.provide(
      FakeHost.layer([
        {
          alias: "gpu",
          programs,
          // a program named by a path runs only where the file exists
          files: { "/opt/venv/bin/python": "#!python\n", "/root/venv/bin/python": "#!python\n" }
        }
      ])
    )
  )

describe("Probes", () => {
  it.effect("gpus parses nvidia-smi, with compute capability", () =>
    withConn([FakeHost.nvidiaSmi([a10(0, "8.6"), a10(1, "8.6")])], (c) =>
      Effect.gen(function* () {
        const gpus = yield* Probes.gpus(c)
        assert.deepStrictEqual(
          gpus.map((g) => [g.index, g.uuid, g.memoryUsedMiB, g.computeCapability]),
          [
            [0, "GPU-0", 0, "8.6"],
            [1, "GPU-1", 100, "8.6"]
          ]
        )
      })
    )
  )

  it.effect("gpus falls back without compute_cap on an old driver", () =>
    withConn([FakeHost.nvidiaSmi([a10(0)])], (c) =>
      Effect.gen(function* () {
        const [gpu] = yield* Probes.gpus(c)
        assert.deepStrictEqual(gpu, {
          index: 0,
          name: "NVIDIA A10",
          memoryTotalMiB: 23028,
          memoryUsedMiB: 0,
          uuid: "GPU-0"
        })
      })
    )
  )

  it.effect("a missing nvidia-smi is ProbeFailed with a fix", () =>
    withConn([], (c) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(Probes.gpus(c))
        assert.strictEqual(error._tag, "ProbeFailed")
        assert.isTrue(
          error._tag === "ProbeFailed" && error.fix !== undefined && error.fix.includes("NVIDIA driver")
        )
      })
    )
  )

  it.effect("gpuProcesses lists processes on GPUs", () =>
    withConn(
      [FakeHost.nvidiaSmi([a10(0, "8.6")], [{ pid: 42, gpuUuid: "GPU-0", usedMemoryMiB: 20000 }])],
      (c) =>
        Effect.gen(function* () {
          assert.deepStrictEqual(yield* Probes.gpuProcesses(c), [
            { pid: 42, gpuUuid: "GPU-0", usedMemoryMiB: 20000 }
          ])
        })
    )
  )

  it.live("portHolder names the program listening on a port, undefined when free", () =>
    Effect.gen(function* () {
      const c = yield* (yield* ConnectionPool).get("gpu")
      const host = yield* FakeHost.host("gpu")
      assert.isUndefined(yield* Probes.portHolder(c, 30000))
      const server = yield* c.spawnDetached(RemoteCommand.make(["python3"]), { runDir: "/tmp/srv" })
      while ((yield* host.ports).length === 0) yield* Effect.sleep("5 millis")
      assert.deepStrictEqual(yield* Probes.portHolder(c, 30000), {
        port: 30000,
        pid: server.pid,
        command: "python3"
      })
      assert.isUndefined(yield* Probes.portHolder(c, 30001))
    }).pipe(
      Effect.provide(
        FakeHost.layer([
          {
            alias: "gpu",
            programs: [
              FakeHost.ss,
              {
                match: "python3",
                run: (ctx) =>
                  Effect.zipRight(
                    ctx.listen(30000, () => Effect.succeed({ status: 200, body: "" })),
                    Effect.never
                  )
              }
            ]
          }
        ])
      )
    )
  )

  it.effect("portHolder without ss is ProbeFailed", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(withConn([], (c) => Probes.portHolder(c, 1)))
      assert.isTrue(error._tag === "ProbeFailed" && error.probe === "ss")
    })
  )
})
