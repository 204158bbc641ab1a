/**
 * Launches across cut connections, over the test sshd (127.0.0.1) with the stand-in SGLang:
 * FAULT_RUNS (20) launches, alternately one that comes up and one that crashes (a rank's CUDA
 * OOM), each with its connection cut at a random moment by killing the sshd session processes
 * serving it (by pid); every other run also keeps the host unreachable for a random 0.5–2 s
 * (the listener stopped, so a crash can happen while nothing can see it). For each run:
 *
 * - untracked: stand-in processes left running that the launch's result does not account for
 *   (a ready run accounts for its own group, a crash for none);
 * - named: a crash reported as `OOM` (never `StartupStalled`), a ready run `Launched`;
 * - reconnect → verdict: from the first new connection after the cut to the launch's result.
 *
 * Baseline, measured in the same run: the same launches without a cut (crash stamp → verdict
 * for crashes, total time for ready ones).
 *
 *   npx tsx bench/launchFaults.ts      (or `npm run bench -- launchFaults`)
 */
import { execFileSync } from "node:child_process"
import type { Connection } from "@mlops/core/Connection"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Launch from "@mlops/serve/Launch"
import * as Stop from "@mlops/serve/Stop"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import { Cause, Effect, Exit, Fiber, Layer, Random, Stream } from "effect"
import type * as Sshd from "../packages/core/test/support/Sshd.js"
import type * as Standin from "../packages/sglang/test/integration/standin/install.js"
import {
  alias,
  fixedStory,
  freePort,
  liveLayer,
  removeDeployment,
  standinEnv,
  startHost
} from "../packages/sglang/test/integration/support.js"

const RUNS = Number(process.env.FAULT_RUNS ?? 20)
const PHASE_SECONDS = "0.25"

const median = (xs: ReadonlyArray<number>): number => {
  if (xs.length === 0) return Number.NaN
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : "-")

/** When the pool handed out a connection it had not handed out before (a reconnect). */
const connects: Array<number> = []

/** The live pool, recording each new connection's first use. */
const recordingLayer = (host: { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd }) =>
  Layer.effect(
    ConnectionPool.ConnectionPool,
    Effect.gen(function* () {
      const inner = yield* ConnectionPool.ConnectionPool
      const seen = new WeakSet<Connection>()
      return ConnectionPool.ConnectionPool.of({
        get: (a) =>
          Effect.tap(inner.get(a), (conn) =>
            Effect.sync(() => {
              if (seen.has(conn)) return
              seen.add(conn)
              connects.push(Date.now())
            })
          ),
        invalidate: inner.invalidate
      })
    })
  ).pipe(Layer.provide(liveLayer(host)))

/** Stand-in processes on this machine (the test host), by process group. */
const standinGroups = (standin: Standin.Standin): Map<number, Array<string>> => {
  const groups = new Map<number, Array<string>>()
  const table = execFileSync("ps", ["-A", "-o", "pgid=", "-o", "stat=", "-o", "args="], { encoding: "utf8" })
  for (const line of table.split("\n")) {
    const [pgid, stat, ...args] = line.trim().split(/\s+/)
    if (pgid === undefined || stat?.startsWith("Z") || !args.join(" ").includes(`${standin.venv}/bin/python`))
      continue
    groups.set(Number(pgid), [...(groups.get(Number(pgid)) ?? []), args.join(" ")])
  }
  return groups
}

interface Run {
  readonly kind: "ready" | "crash"
  readonly cut: boolean
  readonly outageMs: number
  readonly result: string
  readonly correct: boolean
  readonly untracked: number
  /** Reconnect → verdict (cut runs), or the baseline figure. */
  readonly latencyMs: number
  /** The verdict after both the reconnect and the server's own outcome (its ready or crash stamp). */
  readonly excessMs: number
  /** The crash happened while the host could not be seen (before the reconnect). */
  readonly crashedWhileDown: boolean
  readonly disconnectedEvent: boolean
}

const once = (
  host: { readonly standin: Standin.Standin; readonly sshd: Sshd.Sshd },
  i: number,
  cut: boolean
) =>
  Effect.gen(function* () {
    const { standin, sshd } = host
    const kind = process.env.FAULT_ONLY_CRASH ? "crash" : i % 2 === 0 ? "ready" : "crash"
    const port = yield* freePort
    const name = `fault-${process.pid}-${cut ? "cut" : "base"}-${i}`
    const argv =
      kind === "ready"
        ? fixedStory(standin.modelPath, port)
        : [...fixedStory(standin.modelPath, port), "--mem-fraction-static", "0.99"]
    const started = Date.now()
    let disconnectedEvent = false
    // the cut: before the verdict (ready after ~3 s, crashed after ~1.5 s)
    const cutAfter = yield* Random.nextRange(100, kind === "ready" ? 3000 : 1500)
    const outageMs =
      cut && (process.env.FAULT_ONLY_CRASH || i % 4 >= 2) ? yield* Random.nextRange(500, 2000) : 0
    let cutAt: number | undefined
    let resumedAt: number | undefined
    // once begun, a cut runs to its end (the listener always comes back)
    const fault = Effect.zipRight(
      Effect.sleep(cutAfter),
      Effect.uninterruptible(
        Effect.gen(function* () {
          cutAt = Date.now()
          // the cut: the connection's session processes, by pid (what runs on the host lives on)
          yield* sshd.killSessionProcesses
          if (outageMs > 0) {
            // the listener stops only once the killed sessions are gone, so that stopping it
            // (which kills what is still below it) never kills what they had started
            yield* Effect.sleep("300 millis")
            // then nobody can connect for a while (the listener stopped; it has no sessions left)
            yield* sshd.pause
            yield* Effect.sleep(outageMs)
            yield* Effect.orDie(sshd.resume)
            resumedAt = Date.now()
          }
        })
      )
    )
    const timeline: Array<string> = []
    const launch = Launch.launch({
      engine: SglangEngine.engine,
      host: alias,
      name,
      argv,
      env: standinEnv(standin, PHASE_SECONDS),
      preflight: kind === "ready",
      overallTimeout: "90 seconds"
    }).pipe(
      Stream.tap((event) =>
        Effect.sync(() => {
          if (event._tag === "Disconnected") disconnectedEvent = true
          if (process.env.FAULT_TRACE === "live") console.log(`      +${Date.now() - started} ${event._tag}`)
          if (process.env.FAULT_TRACE)
            timeline.push(
              `${Date.now() - started} ${event._tag}${event._tag === "Log" ? ` ${event.event._tag}` : ""}`
            )
        })
      ),
      Stream.runLast,
      Effect.exit
    )
    const faulting = yield* Effect.fork(cut ? fault : Effect.void)
    const exit = yield* launch
    const verdictAt = Date.now()
    // a cut not begun by the verdict does not happen (the run counts as uncut)
    yield* Fiber.interrupt(faulting)
    const launched =
      Exit.isSuccess(exit) && exit.value._tag === "Some" && exit.value.value._tag === "Launched"
    const failure = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error._tag : undefined
    const result = launched ? "Launched" : (failure ?? (Exit.isFailure(exit) ? "defect" : "no result"))
    const correct = kind === "ready" ? launched : failure === "OOM"
    if (!correct && Exit.isFailure(exit))
      console.log(`    wrong verdict: ${String(Cause.squash(exit.cause))}`)
    const groups = standinGroups(standin)
    const own =
      launched && Exit.isSuccess(exit) && exit.value._tag === "Some" && exit.value.value._tag === "Launched"
        ? Number(exit.value.value.deployment.server.ids.pgid)
        : undefined
    const untracked = [...groups.keys()].filter((pgid) => pgid !== own).length
    // the reconnect: the first new connection after the cut (after the listener came back)
    const after = resumedAt ?? cutAt
    const reconnectAt = after === undefined ? undefined : connects.find((t) => t >= after)
    const crashStamp = standin.stamps().find((s) => s.event === "crash" && s.ms >= started)
    const readyStamp = standin.stamps().find((s) => s.event === "ready" && s.ms >= started)
    const outcomeAt = (kind === "crash" ? crashStamp : readyStamp)?.ms
    const excessMs =
      outcomeAt === undefined ? Number.NaN : verdictAt - Math.max(outcomeAt, cut ? (reconnectAt ?? 0) : 0)
    const crashedWhileDown =
      kind === "crash" && crashStamp !== undefined && reconnectAt !== undefined && crashStamp.ms < reconnectAt
    const latencyMs = cut
      ? reconnectAt === undefined || cutAt === undefined || cutAt > verdictAt
        ? Number.NaN
        : verdictAt - reconnectAt
      : kind === "crash" && crashStamp !== undefined
        ? verdictAt - crashStamp.ms
        : verdictAt - started
    if (process.env.FAULT_TRACE) {
      console.log(
        `    cut at +${cutAt === undefined ? "-" : cutAt - started} resumed +${resumedAt === undefined ? "-" : resumedAt - started} connects ${connects
          .filter((t) => t >= started)
          .map((t) => t - started)
          .join(",")} verdict +${verdictAt - started}`
      )
      console.log(`    ${timeline.filter((l) => !l.includes(" Log ") || l.includes("Failed")).join(" | ")}`)
    }
    if (process.env.FAULT_TRACE === "live")
      console.log(`      +${Date.now() - started} verdict ${result}; stopping`)
    yield* Stop.stop(alias, name).pipe(Effect.ignore)
    if (process.env.FAULT_TRACE === "live") console.log(`      +${Date.now() - started} stopped`)
    removeDeployment(standin, name)
    return {
      kind,
      cut,
      outageMs,
      result,
      correct,
      untracked,
      latencyMs,
      excessMs,
      crashedWhileDown,
      disconnectedEvent
    } satisfies Run
  })

const program = Effect.gen(function* () {
  const host = yield* startHost
  const runAll = (cut: boolean) =>
    Effect.gen(function* () {
      const runs: Array<Run> = []
      for (let i = 0; i < RUNS; i++) {
        const run = yield* once(host, i, cut)
        runs.push(run)
        console.log(
          `  ${cut ? "cut " : "base"} #${String(i).padStart(2)} ${run.kind.padEnd(5)} ${run.outageMs > 0 ? `outage ${ms(run.outageMs).padStart(7)}` : "cut only      "} → ${run.result.padEnd(14)} ${run.correct ? "ok" : "WRONG"}  untracked ${run.untracked}  ${cut ? "reconnect→verdict" : "baseline"} ${ms(run.latencyMs)}, after outcome ${ms(run.excessMs)}${run.crashedWhileDown ? " (crashed while down)" : ""}`
        )
      }
      return runs
    }).pipe(Effect.provide(recordingLayer(host)))

  console.log(`baseline: ${RUNS} launches without a cut`)
  const base = yield* runAll(false)
  console.log(`faults: ${RUNS} launches, each cut at a random moment`)
  const cut = yield* runAll(true)

  const finite = (xs: ReadonlyArray<number>) => xs.filter(Number.isFinite)
  const cutLatencies = finite(cut.map((r) => r.latencyMs))
  const whileDown = finite(cut.filter((r) => r.crashedWhileDown).map((r) => r.latencyMs))
  const excessCut = finite(cut.map((r) => r.excessMs))
  const excessBase = finite(base.map((r) => r.excessMs))
  console.log("\nlaunch across cut connections (real sshd, stand-in SGLang)")
  console.log(
    `  runs:                          ${cut.length} (${cut.filter((r) => r.kind === "crash").length} crashing, ${cut.filter((r) => r.outageMs > 0).length} with an outage, ${cut.filter((r) => r.crashedWhileDown).length} crashed while the host could not be seen)`
  )
  console.log(`  servers left untracked:        ${cut.reduce((n, r) => n + r.untracked, 0)}`)
  console.log(
    `  crashes named correctly:       ${cut.filter((r) => r.kind === "crash" && r.correct).length}/${cut.filter((r) => r.kind === "crash").length} (OOM; none StartupStalled)`
  )
  console.log(
    `  ready ones ready:              ${cut.filter((r) => r.kind === "ready" && r.correct).length}/${cut.filter((r) => r.kind === "ready").length}`
  )
  console.log(
    `  reconnect → verdict:           median ${ms(median(cutLatencies))}, max ${ms(Math.max(...cutLatencies))} (a ready run's verdict waits for the server to get ready)`
  )
  console.log(
    `  crash while down → verdict:    median ${ms(median(whileDown))}, max ${ms(whileDown.length === 0 ? Number.NaN : Math.max(...whileDown))} after the reconnect (${whileDown.length} runs; target ≤ 2000 ms)`
  )
  console.log(
    `  verdict after the outcome was knowable (max of reconnect and the server's ready/crash): median ${ms(median(excessCut))}, max ${ms(Math.max(...excessCut))}; without a cut ${ms(median(excessBase))} (baseline; ${(median(excessCut) / median(excessBase)).toFixed(1)}×)`
  )
  console.log(
    `  baseline runs correct:         ${base.filter((r) => r.correct).length}/${base.length}, untracked ${base.reduce((n, r) => n + r.untracked, 0)}`
  )
  const wrong =
    cut.filter((r) => !r.correct || r.untracked > 0).length +
    base.filter((r) => !r.correct || r.untracked > 0).length
  if (wrong > 0) process.exitCode = 1
}).pipe(Effect.scoped)

Effect.runPromise(program).then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
