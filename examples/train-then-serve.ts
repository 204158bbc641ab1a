/**
 * What the seed's user did by hand, as one program on the simulated host `sim`: train a (toy)
 * speculative-decoding drafter as a job on one GPU, check what the trainer saved, serve the
 * model with that drafter, benchmark it (tokens/s and the drafter's acceptance), and stop it.
 *
 *   npx tsx examples/train-then-serve.ts
 *
 * The job and the server share the host's GPUs: the job holds GPU 0 while it trains and frees it
 * when it exits, so the server (two GPUs) starts only once the job is done. `main` needs only a
 * `ConnectionPool`: the same code runs on a real host with `ConnectionPool.layer()` +
 * `Hosts.layerConfig()` instead of `Simulator.layer`.
 */
import { pathToFileURL } from "node:url"
import { ConnectionPool, RemoteFiles } from "@mlops/core"
import * as Bench from "@mlops/serve/Bench"
import * as Job from "@mlops/serve/Job"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import * as Simulator from "@mlops/sglang/Simulator"
import { Console, Effect, Stream } from "effect"

const DRAFTER = "/root/drafters/qwen3.6-27b-eagle3"

export interface TrainThenServeResult {
  /** The training job's last loss line. */
  readonly lastLoss: string
  readonly jobState: Job.JobState
  /** The GPUs the job trained on. */
  readonly trainedOn: ReadonlyArray<number>
  /** The drafter's architecture, from the config the trainer saved. */
  readonly drafter: string
  readonly url: string
  readonly outputTokensPerS: number
  readonly acceptLength: number | undefined
}

export const main = (alias: string = Simulator.alias) =>
  Effect.gen(function* () {
    // 1. the drafter, trained as a job: detached on the host, its output followed to its exit
    let lastLoss = ""
    let trainedOn: ReadonlyArray<number> = []
    const finished = yield* Job.run({
      host: alias,
      name: "drafter",
      argv: [
        "torchrun",
        "--nproc-per-node",
        "1",
        "train_drafter.py",
        "--steps",
        "6",
        "--output-dir",
        DRAFTER
      ],
      gpus: 1
    }).pipe(
      Stream.tap((event) =>
        Effect.sync(() => {
          if (event._tag === "Output" && event.line.includes("'loss'")) lastLoss = event.line
          if (event._tag === "Started") trainedOn = event.gpus
        })
      ),
      Stream.runLast
    )
    const job =
      finished._tag === "Some" && finished.value._tag === "Finished" ? finished.value.job : undefined

    // 2. what it saved, read on the host
    const conn = yield* (yield* ConnectionPool.ConnectionPool).get(alias)
    const config = JSON.parse((yield* RemoteFiles.readTextIfExists(conn, `${DRAFTER}/config.json`)) ?? "{}")
    const drafter = String(config.architectures?.[0] ?? "none")

    // 3. the server with that drafter (EAGLE3), checked before it starts, followed to ready
    const deployment = yield* Launch.launchDeployment({
      engine: SglangEngine.engine,
      host: alias,
      name: "qwen-eagle3",
      argv: [
        "--model-path",
        "/root/models/Qwen3.6-27B",
        "--tp",
        "2",
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        DRAFTER,
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-num-draft-tokens",
        "4",
        "--mamba-scheduler-strategy",
        "extra_buffer"
      ]
    })

    // 4. how fast it serves, and how often the drafter is right
    const bench = yield* Bench.run(alias, deployment.name, [SglangEngine.engine], {
      concurrency: [4],
      requests: 8,
      outputTokens: 32
    })
    const level = bench.levels[0]

    // 5. done: stopped, its GPU memory confirmed free
    yield* Stop.stop(alias, deployment.name)
    return {
      lastLoss,
      jobState: job?.state ?? "failed",
      trainedOn,
      drafter,
      url: deployment.url,
      outputTokensPerS: level?.outputTokensPerS ?? 0,
      acceptLength: level?.acceptLength
    } satisfies TrainThenServeResult
  })

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main()
    .pipe(
      Effect.tap((result) => Console.log(JSON.stringify(result, null, 2))),
      Effect.provide(Simulator.layer),
      Effect.runPromise
    )
    .catch((error) => {
      console.error(error)
      process.exit(1)
    })
}
