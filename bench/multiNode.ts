/**
 * One deployment across hosts, on three network-namespace hosts (their own addresses and sshd)
 * running the stand-in SGLang, whose nodes really meet at the rendezvous (needs root):
 *
 * - launch overhead: launch → Launched on 1, 2 and 3 hosts (two ranks per host, the same
 *   stand-in and model; LAUNCH_RUNS each, median), as ratios to one host;
 * - one Slurm job across two nodes (a slurmd in each of two more namespaces, the login node's
 *   sshd on this machine): launch → Launched on one node and on two (SLURM_RUNS each, median),
 *   and rank 1's process killed (SIGKILL) while it loads → `SlurmJobEnded` naming its task and
 *   node (SLURM_RUNS), median and max; the job's state is polled every second;
 * - rank death → typed failure: DEATH_RUNS (20) launches on two hosts whose rank 1 is killed
 *   (its process group, SIGKILL) while it loads its weights; from the kill (its log's last line)
 *   to `RankFailed` naming rank 1 and node-b, median and max. Baseline, same run: the same kill of
 *   a launch on one host (its death → `ProcessExited`). Anchors: NCCL's watchdog (10 minutes by
 *   default; vLLM's open PR asks 30), ~600 s for a start-up death in Dynamo's launcher.
 *
 *   npx tsx bench/multiNode.ts      (or `npm run bench -- multiNode`)
 */
import * as Launch from "@mlops/serve/Launch"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import * as Stop from "@mlops/serve/Stop"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import { Effect, Exit, Stream } from "effect"
import * as Cluster from "../packages/sglang/test/integration/cluster.js"
import * as Standin from "../packages/sglang/test/integration/standin/install.js"
import { median } from "./support/stats.js"

const LAUNCH_RUNS = Number(process.env.LAUNCH_RUNS ?? 5)
const DEATH_RUNS = Number(process.env.DEATH_RUNS ?? 20)
const BASELINE_RUNS = Number(process.env.BASELINE_RUNS ?? 10)
const SLURM_RUNS = Number(process.env.SLURM_RUNS ?? 10)

/** One Slurm job across two nodes: launch overhead against one node, and a rank's death → SlurmJobEnded. */
const slurm = Effect.gen(function* () {
  const login = "login"
  const standin = yield* Standin.install
  const nodes = yield* Cluster.slurmNodes(2, standin, login)
  const request = (count: number, name: string, phaseSeconds: string): Launch.LaunchRequest => ({
    host: login,
    engine: SglangEngine.engine,
    name,
    argv: ["--model-path", standin.modelPath, "--tp", String(2 * count), "--host", "0.0.0.0"],
    env: { STANDIN_PHASE_SECONDS: phaseSeconds },
    placement: SlurmPlacement.spec({ nodes: count })
  })
  yield* Effect.gen(function* () {
    console.log(`one Slurm job across nodes (median of ${SLURM_RUNS}, launch → Launched, 2 GPUs per node)`)
    const medians: Array<number> = []
    for (const count of [1, 2]) {
      const times: Array<number> = []
      for (let run = 0; run < SLURM_RUNS; run++) {
        const name = `slurm-${count}-${run}`
        const started = Date.now()
        yield* Launch.launchDeployment(request(count, name, "0.02"))
        times.push(Date.now() - started)
        yield* Stop.stop(login, name)
      }
      medians.push(median(times))
      console.log(
        `  ${count} node${count === 1 ? " " : "s"}: ${median(times).toFixed(0)} ms (ratio ${(median(times) / medians[0]!).toFixed(2)} to one node)`
      )
    }
    const deaths: Array<number> = []
    let named = 0
    for (let run = 0; run < SLURM_RUNS; run++) {
      let killedAt = 0
      const exit = yield* Launch.launch(request(2, `slurm-death-${run}`, "0.5")).pipe(
        Stream.tap((e) =>
          e._tag === "Log" &&
          e.event._tag === "PhaseStarted" &&
          e.event.phase === "weights-loading" &&
          killedAt === 0
            ? Effect.sync(() => {
                const pid = Cluster.rankPid(1, standin.modelPath)
                if (pid === undefined) return
                killedAt = Date.now()
                process.kill(pid, "SIGKILL")
              })
            : Effect.void
        ),
        Stream.runDrain,
        Effect.exit
      )
      const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
      if (error?._tag === "SlurmJobEnded" && error.message.includes("task 1 on node-b")) named++
      if (killedAt > 0) deaths.push(Date.now() - killedAt)
    }
    console.log(
      `  rank 1 killed while loading (${SLURM_RUNS} runs): named task 1 on node-b ${named}/${SLURM_RUNS}`
    )
    console.log(
      `  kill → SlurmJobEnded: median ${median(deaths).toFixed(0)} ms, max ${Math.max(...deaths).toFixed(0)} ms (the job's state polled every 1000 ms)`
    )
  }).pipe(Effect.provide(nodes.layer))
}).pipe(Effect.scoped)

const program = Effect.gen(function* () {
  const cluster = yield* Cluster.make(3)
  const model = Cluster.sixWayModel(cluster)
  const request = (
    hosts: ReadonlyArray<string>,
    name: string,
    phaseSeconds: string
  ): Launch.LaunchRequest => ({
    host: hosts[0]!,
    ...(hosts.length > 1 ? { hosts } : {}),
    engine: SglangEngine.engine,
    name,
    argv: ["--model-path", model, "--tp", String(2 * hosts.length)],
    env: { STANDIN_PHASE_SECONDS: phaseSeconds }
  })

  yield* Effect.gen(function* () {
    console.log(`launch overhead (median of ${LAUNCH_RUNS}, launch → Launched, 2 ranks per host)`)
    const medians: Array<number> = []
    for (const count of [1, 2, 3]) {
      const hosts = cluster.aliases.slice(0, count)
      const times: Array<number> = []
      for (let run = 0; run < LAUNCH_RUNS; run++) {
        const name = `overhead-${count}-${run}`
        const started = Date.now()
        yield* Launch.launchDeployment(request(hosts, name, "0.02"))
        times.push(Date.now() - started)
        yield* Stop.stop(hosts[0]!, name)
      }
      medians.push(median(times))
      console.log(
        `  ${count} host${count === 1 ? " " : "s"}: ${median(times).toFixed(0)} ms (ratio ${(median(times) / medians[0]!).toFixed(2)} to one host)`
      )
    }

    // kill the process group of `rank` when its log says it loads weights; the time to the verdict
    const killWhileLoading = (hosts: ReadonlyArray<string>, rank: number, name: string) =>
      Effect.gen(function* () {
        let killedAt = 0
        const exit = yield* Launch.launch(request(hosts, name, "0.5")).pipe(
          Stream.tap((e) =>
            e._tag === "Log" &&
            (e.rank?.rank ?? 0) === rank &&
            e.event._tag === "PhaseStarted" &&
            e.event.phase === "weights-loading" &&
            killedAt === 0
              ? Effect.sync(() => {
                  killedAt = Cluster.killRank(cluster, rank, name)
                })
              : Effect.void
          ),
          Stream.runDrain,
          Effect.exit
        )
        const tookMs = Date.now() - killedAt
        const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
        return { tookMs, error }
      })

    const baseline: Array<number> = []
    for (let run = 0; run < BASELINE_RUNS; run++) {
      const { tookMs, error } = yield* killWhileLoading(cluster.aliases.slice(0, 1), 0, `baseline-${run}`)
      if (error?._tag !== "ProcessExited")
        throw new Error(`baseline run ${run}: ${error?._tag ?? "no failure"}`)
      baseline.push(tookMs)
    }
    const deaths: Array<number> = []
    let named = 0
    for (let run = 0; run < DEATH_RUNS; run++) {
      const { tookMs, error } = yield* killWhileLoading(cluster.aliases.slice(0, 2), 1, `death-${run}`)
      if (error?._tag === "RankFailed" && error.rank === 1 && error.host === "node-b") named++
      deaths.push(tookMs)
    }
    console.log(`rank death → typed failure (${DEATH_RUNS} runs on 2 hosts, rank 1 killed while loading)`)
    console.log(`  named rank 1 on node-b: ${named}/${DEATH_RUNS}`)
    console.log(
      `  kill → RankFailed: median ${median(deaths).toFixed(0)} ms, max ${Math.max(...deaths).toFixed(0)} ms (goal ≤ 2000 ms)`
    )
    console.log(
      `  baseline, one host (kill → ProcessExited, ${BASELINE_RUNS} runs): median ${median(baseline).toFixed(0)} ms, max ${Math.max(...baseline).toFixed(0)} ms; ratio ${(median(deaths) / median(baseline)).toFixed(2)}`
    )
    console.log(
      `  anchors: NCCL's watchdog 600 000 ms (${(600_000 / median(deaths)).toFixed(0)}× the median), Dynamo's start-up death ~600 000 ms`
    )
  }).pipe(Effect.provide(cluster.layer))
}).pipe(Effect.scoped)

Effect.runPromise(Effect.zipRight(program, slurm)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
