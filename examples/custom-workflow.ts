/**
 * A custom workflow from the core services, no SGLang program involved: find the GPU with the
 * most free memory, write a job file on the host, run a command that reads it back, and follow
 * a log until the job says it is done.
 *
 *   npx tsx examples/custom-workflow.ts          # on the built-in simulated host `sim`
 *
 * `main(alias)` needs only a `ConnectionPool`, so the same code runs on a real host with
 * `ConnectionPool.layer()` + `Hosts.layerConfig()` instead of `Simulator.layer`.
 */

import { pathToFileURL } from "node:url"
import { Command, ConnectionPool, LogTail, Probes, RemoteCommand, RemoteFiles } from "@mlops/core"
import * as Simulator from "@mlops/sglang/Simulator"
import { Console, Effect, Fiber, Stream } from "effect"

export interface WorkflowResult {
  readonly gpuCount: number
  /** The index of the GPU with the most free memory. */
  readonly chosenGpu: number
  readonly freeMiB: number
  /** What the command read back from the job file. */
  readonly jobFile: string
  /** The log lines followed until `done`. */
  readonly logLines: ReadonlyArray<string>
}

export const main = (alias: string) =>
  Effect.gen(function* () {
    const pool = yield* ConnectionPool.ConnectionPool
    const conn = yield* pool.get(alias)
    const home = yield* conn.files.resolvePath("~/")
    const dir = `${home.replace(/\/$/, "")}/mlops-example`

    // 1. probe the GPUs and pick the one with the most free memory
    const gpus = yield* Probes.gpus(conn)
    const best = gpus.reduce((a, b) =>
      b.memoryTotalMiB - b.memoryUsedMiB > a.memoryTotalMiB - a.memoryUsedMiB ? b : a
    )
    const freeMiB = best.memoryTotalMiB - best.memoryUsedMiB

    // 2. write a job file on the host
    yield* RemoteFiles.writeText(conn, `${dir}/job.env`, `CUDA_VISIBLE_DEVICES=${best.index}\n`)

    // 3. run a command that reads it back (a non-zero exit would be a CommandFailed)
    const read = yield* Command.runOrFail(alias, RemoteCommand.make(["cat", `${dir}/job.env`]))

    // 4. follow a log while a writer appends to it, until the job says it is done
    const logPath = `${dir}/job.log`
    yield* RemoteFiles.writeText(conn, logPath, "")
    const jobLines = ["loading", "step 1/2", "step 2/2", "done"]
    const writer = yield* Effect.fork(
      Effect.forEach(
        jobLines,
        (_, i) =>
          Effect.sleep("50 millis").pipe(
            Effect.zipRight(RemoteFiles.writeText(conn, logPath, `${jobLines.slice(0, i + 1).join("\n")}\n`))
          ),
        { discard: true }
      )
    )
    const logLines = yield* LogTail.follow(alias, logPath, { pollInterval: "20 millis" }).pipe(
      Stream.map((line) => line.text),
      Stream.takeUntil((text) => text === "done"),
      Stream.runCollect,
      Effect.timeout("10 seconds")
    )
    yield* Fiber.join(writer)

    return {
      gpuCount: gpus.length,
      chosenGpu: best.index,
      freeMiB,
      jobFile: read.stdout.trim(),
      logLines: [...logLines]
    } satisfies WorkflowResult
  })

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(Simulator.alias).pipe(
    Effect.tap((result) => Console.log(JSON.stringify(result, null, 2))),
    Effect.provide(Simulator.layer),
    Effect.runPromise
  )
}
