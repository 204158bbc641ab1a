/**
 * `bench`: a short load against a running deployment, through the connection's forward (no
 * port opened anywhere): streamed completions of the model it serves, at one or more
 * concurrencies, each level reported as output tokens/s, requests/s, TTFT, inter-token latency
 * (between chunks), time per output token and end-to-end latency (mean, p50, p90, p99) and
 * errors, with the engine's own `/metrics` read before and after it (the speculative
 * acceptance length as the engine reports it: vLLM's over the level from its counters,
 * SGLang's gauge of its last logging interval; the tokens it counted).
 *
 * The server is watched while the load runs (is it alive, every 250 ms): if it dies, the run
 * stops at once with `ServerDiedDuringBench` carrying the classifier's failure from its log
 * (not a pile of connection errors).
 *
 * ```ts
 * const result = yield* Bench.run("ct129", "qwen3.6-27b", engines, { concurrency: [1, 8, 32] })
 * const moved = Bench.compare(baseline, result) // which figures moved, by how much
 * ```
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as HttpClient from "@mlops/core/HttpClient"
import * as LogTail from "@mlops/core/LogTail"
import { Clock, type Duration, Effect, Schedule, Schema } from "effect"
import * as Classifier from "./Classifier.js"
import * as Deployment from "./Deployment.js"
import * as Engine from "./Engine.js"
import { LaunchFailure, ProcessExited } from "./Failures.js"
import * as load from "./internal/bench/load.js"
import { spread } from "./internal/bench/stats.js"
import * as Metrics from "./Metrics.js"
import * as Placements from "./Placements.js"
import { modelIdOf } from "./Readiness.js"

/** @category models */
export interface BenchOptions {
  /** One level per value, in order. Default `[1]`. */
  readonly concurrency?: ReadonlyArray<number>
  /** Requests per level. Default: 4 × its concurrency, at least 8. */
  readonly requests?: number
  /** Words per synthetic prompt (about one token each). Default 128. */
  readonly inputTokens?: number
  /** Tokens asked of every request (`max_tokens`, with `ignore_eos`). Default 128. */
  readonly outputTokens?: number
  /** Prompts to send instead of synthetic ones (used in turn). */
  readonly prompts?: ReadonlyArray<string>
  /** The server's API key, when it was launched with one. */
  readonly apiKey?: string
  /** One request's budget (head and whole stream). Default 5 minutes. */
  readonly requestTimeout?: Duration.DurationInput
  /** The longest wait for a request's next event before it counts as failed. Default 60 s. */
  readonly idleTimeout?: Duration.DurationInput
  /** How often the server is checked while the load runs. Default 250 ms. */
  readonly watchEvery?: Duration.DurationInput
}

const Spread = Schema.Struct({
  mean: Schema.optional(Schema.Number),
  p50: Schema.optional(Schema.Number),
  p90: Schema.optional(Schema.Number),
  p99: Schema.optional(Schema.Number)
})

/** One concurrency's figures. @category models */
export const LevelResult = Schema.Struct({
  concurrency: Schema.Number,
  requests: Schema.Number,
  completed: Schema.Number,
  errors: Schema.Number,
  /** The first failed request's reason, when one failed. */
  firstError: Schema.optional(Schema.String),
  durationS: Schema.Number,
  outputTokens: Schema.Number,
  outputTokensPerS: Schema.Number,
  requestsPerS: Schema.Number,
  ttftMs: Spread,
  itlMs: Spread,
  /** Per output token after the first: (end-to-end − TTFT) / (tokens − 1), per request. */
  tpotMs: Spread,
  e2eMs: Spread,
  /** Mean tokens per speculative decoding step, from the engine's `/metrics` (vLLM: over the level; SGLang: its last logging interval). */
  acceptLength: Schema.optional(Schema.Number),
  /** Tokens the engine counted during the level, and per second of it. */
  engineGenerationTokens: Schema.optional(Schema.Number),
  engineTokensPerS: Schema.optional(Schema.Number)
})
/** @category models */
export type LevelResult = typeof LevelResult.Type

/** A whole run, as `--json` writes it and `--baseline` reads it back. @category models */
export const BenchResult = Schema.Struct({
  host: Schema.String,
  name: Schema.String,
  engine: Schema.String,
  engineVersion: Schema.NullOr(Schema.String),
  model: Schema.String,
  argv: Schema.Array(Schema.String),
  startedAt: Schema.String,
  inputTokens: Schema.Number,
  outputTokens: Schema.Number,
  /** What the run could not measure, and why (`/metrics` off). */
  notes: Schema.Array(Schema.String),
  levels: Schema.Array(LevelResult)
})
/** @category models */
export type BenchResult = typeof BenchResult.Type

/** The deployment cannot be benchmarked as it is (not running, not ready, behind a key not given). @category errors */
export class BenchRefused extends Schema.TaggedError<BenchRefused>()("BenchRefused", {
  host: Schema.String,
  name: Schema.String,
  reason: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `cannot benchmark ${this.name} on ${this.host}: ${this.reason}. ${this.fix}`
  }
}

/** The server died while the load ran: its failure as the classifier read it from its log. @category errors */
export class ServerDiedDuringBench extends Schema.TaggedError<ServerDiedDuringBench>()(
  "ServerDiedDuringBench",
  {
    host: Schema.String,
    name: Schema.String,
    /** The level that was running. */
    concurrency: Schema.Number,
    /** Since the run started. */
    afterMs: Schema.Number,
    failure: LaunchFailure
  }
) {
  override get message() {
    return `${this.name} on ${this.host} died during the benchmark (concurrency ${this.concurrency}, ${Math.round(this.afterMs)} ms in): ${this.failure.message}`
  }
}

/** A figure that moved between a baseline and a later run. @category models */
export interface Change {
  readonly concurrency: number
  /** `outputTokensPerS`, `ttftMs.p50`, ... */
  readonly figure: string
  readonly before: number
  readonly after: number
  /** (after − before) / before. */
  readonly change: number
  /** Whether the move is for the better (more throughput, less latency, fewer errors). */
  readonly better: boolean
}

const nowMs = Effect.map(Clock.currentTimeNanos, (ns) => Number(ns) / 1e6)

const sum = (values: ReadonlyArray<number>) => values.reduce((a, b) => a + b, 0)

/** A level's figures from its outcomes. */
const summarize = (
  concurrency: number,
  outcomes: ReadonlyArray<load.RequestOutcome>,
  wallMs: number,
  engine: Metrics.RunFigures | undefined
): LevelResult => {
  const done = outcomes.filter((o): o is Extract<load.RequestOutcome, { ok: true }> => o.ok)
  const failed = outcomes.filter((o): o is Extract<load.RequestOutcome, { ok: false }> => !o.ok)
  const seconds = Math.max(wallMs, 1e-3) / 1000
  const tokens = sum(done.map((o) => o.outputTokens))
  return {
    concurrency,
    requests: outcomes.length,
    completed: done.length,
    errors: failed.length,
    firstError: failed[0]?.error,
    durationS: seconds,
    outputTokens: tokens,
    outputTokensPerS: tokens / seconds,
    requestsPerS: done.length / seconds,
    ttftMs: spread(done.map((o) => o.ttftMs)),
    itlMs: spread(done.flatMap((o) => o.itlMs)),
    tpotMs: spread(done.flatMap((o) => (o.tpotMs === undefined ? [] : [o.tpotMs]))),
    e2eMs: spread(done.map((o) => o.e2eMs)),
    acceptLength: engine?.acceptLength,
    engineGenerationTokens: engine?.generationTokens,
    engineTokensPerS: engine?.generationTokens === undefined ? undefined : engine.generationTokens / seconds
  }
}

/**
 * Benchmark deployment `name` on `host` (it must be ready and running).
 *
 * @category programs
 */
export const run = Effect.fn("Bench.run")(function* (
  host: string,
  name: string,
  engines: Engine.Registry,
  options: BenchOptions = {}
) {
  const conn = yield* (yield* ConnectionPool).get(host)
  const state = yield* Deployment.readExisting(conn, name)
  const refuse = (reason: string, fix: string) => new BenchRefused({ host, name, reason, fix })
  const engine = Engine.byName(engines, state.meta?.engine ?? "sglang")
  if (engine === undefined || state.meta === undefined)
    return yield* refuse("its record names no engine mlops knows", "launch it again with mlops")
  const { placed } = yield* Placements.ofDeployment(conn, state)
  const seen = placed === undefined ? undefined : yield* placed.inspect(conn)
  if (placed === undefined || seen === undefined || !seen.alive || seen.address === undefined)
    return yield* refuse(
      state.stopped !== undefined ? `it was stopped (${state.stopped})` : "it is not running",
      `launch it first: mlops launch --host ${host} --name ${name} -- ...`
    )
  if (state.ready === undefined)
    return yield* refuse(
      "it is not ready yet",
      `wait for it (mlops logs --host ${host} --name ${name} -f), then run the benchmark`
    )
  const argv = state.argv?.argv ?? []
  const keyFlag = engine.apiKeyFlag
  const keyed =
    keyFlag !== undefined && argv.some((word) => word === keyFlag || word.startsWith(`${keyFlag}=`))
  if (keyed && options.apiKey === undefined)
    return yield* refuse(
      `it was launched with ${keyFlag}`,
      "give its key (the CLI: --api-key-env with the name of a variable that holds it)"
    )
  const headers: Record<string, string> =
    options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }

  const concurrencies = options.concurrency ?? [1]
  const widest = Math.max(1, ...concurrencies)
  const client = yield* HttpClient.make(conn, {
    port: state.meta.port,
    target: seen.address,
    maxChannels: widest + 2
  })
  const models = yield* client.request({ method: "GET", path: "/v1/models", timeout: "30 seconds", headers })
  if (models.status === 401 || models.status === 403)
    return yield* refuse(
      `GET /v1/models answered ${models.status}: the server wants an API key${options.apiKey === undefined ? "" : " other than the one given"}`,
      "give its key (the CLI: --api-key-env with the name of a variable that holds it)"
    )
  const model = models.status === 200 ? modelIdOf(models.body) : undefined
  if (model === undefined)
    return yield* refuse(
      `GET /v1/models answered ${models.status} with no model: ${models.body.slice(0, 200)}`,
      `look at its log: mlops logs --host ${host} --name ${name}`
    )

  const notes: Array<string> = []
  // a page that cannot be read costs the engine's figures, not the run
  const page = Effect.gen(function* () {
    const answer = yield* client.request({ method: "GET", path: "/metrics", timeout: "30 seconds", headers })
    return answer.status === 200 ? Metrics.parse(answer.body) : undefined
  }).pipe(
    Effect.catchAll((error) =>
      Effect.sync(() => {
        const note = `reading /metrics failed (${error._tag}): no engine figures for some levels`
        if (!notes.includes(note)) notes.push(note)
        return undefined
      })
    )
  )
  const inputTokens = options.inputTokens ?? 128
  const outputTokens = options.outputTokens ?? 128
  const startedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
  const runStart = yield* nowMs
  let running = concurrencies[0] ?? 1

  const levels = Effect.forEach(concurrencies, (concurrency) =>
    Effect.gen(function* () {
      running = concurrency
      const count = options.requests ?? Math.max(8, 4 * concurrency)
      const before = yield* page
      const { outcomes, wallMs } = yield* load.level(
        client,
        {
          model,
          prompts: options.prompts ?? load.syntheticPrompts(count, inputTokens),
          outputTokens,
          headers,
          timeout: options.requestTimeout ?? "5 minutes",
          idleTimeout: options.idleTimeout ?? "60 seconds"
        },
        count,
        concurrency
      )
      const after = yield* page
      const missing = `no /metrics page${engine.metrics.enable === undefined ? "" : ` (launch with ${engine.metrics.enable} for it)`}: no acceptance length or engine counters`
      if (
        (before === undefined || after === undefined) &&
        !notes.some((n) => n.startsWith("reading /metrics")) &&
        !notes.includes(missing)
      )
        notes.push(missing)
      const figures =
        before === undefined || after === undefined ? undefined : engine.metrics.figures(before, after)
      return summarize(concurrency, outcomes, wallMs, figures)
    })
  )

  // the server, watched while the load runs: its death ends the run with its own failure. The
  // poll is the placement's cheapest question (a signal 0, a queue query); a poll that fails
  // (a dropped connection) says nothing; only a dead server is inspected and its log read
  const check = Effect.gen(function* () {
    if (yield* placed.isAlive(conn).pipe(Effect.orElseSucceed(() => true))) return
    const now = yield* placed.inspect(conn)
    if (now.alive) return
    const lines = yield* LogTail.tail(host, state.logPath, { lines: 300 }).pipe(
      Effect.orElseSucceed(() => [] as ReadonlyArray<LogTail.LogLine>)
    )
    const classifier = Classifier.make([engine.logs])
    for (const line of lines) classifier.feed(line.text)
    const reported = now.report(classifier.finish(now.exit))
    // what its placement says instead (a scheduler's word), as it is
    if (reported !== undefined && !Schema.is(LaunchFailure)(reported)) return yield* reported
    const failure =
      reported ??
      new ProcessExited({
        evidence: [],
        process: "launcher",
        phase: classifier.phase(),
        reason: "it ended while requests were running, and its log names no failure",
        ...(now.exit?.exitCode === null || now.exit === undefined ? {} : { exitCode: now.exit.exitCode }),
        ...(now.exit?.signal === null || now.exit === undefined ? {} : { signal: now.exit.signal })
      })
    return yield* new ServerDiedDuringBench({
      host,
      name,
      concurrency: running,
      afterMs: (yield* nowMs) - runStart,
      failure
    })
  })
  const watch = check.pipe(
    Effect.repeat(Schedule.spaced(options.watchEvery ?? "250 millis")),
    Effect.zipRight(Effect.never)
  )

  const results = yield* Effect.raceFirst(levels, watch).pipe(
    // requests or a read that failed because the server died: its death, not theirs
    Effect.tapError((error) => (error._tag === "ServerDiedDuringBench" ? Effect.void : check)),
    Effect.tap((done) => (done.some((level) => level.errors > 0) ? check : Effect.void))
  )
  return {
    host,
    name,
    engine: engine.name,
    engineVersion: Deployment.versionOf(state.meta),
    model,
    argv,
    startedAt,
    inputTokens,
    outputTokens,
    notes,
    levels: results
  } satisfies BenchResult
}, Effect.scoped)

/** What `run` fails with. @category errors */
export type BenchError = Effect.Effect.Error<ReturnType<typeof run>>

/** The figures `compare` looks at, and whether more is better. */
const compared: ReadonlyArray<readonly [string, (l: LevelResult) => number | undefined, boolean]> = [
  ["outputTokensPerS", (l) => l.outputTokensPerS, true],
  ["requestsPerS", (l) => l.requestsPerS, true],
  ["ttftMs.p50", (l) => l.ttftMs.p50, false],
  ["ttftMs.p99", (l) => l.ttftMs.p99, false],
  ["itlMs.p50", (l) => l.itlMs.p50, false],
  ["itlMs.p99", (l) => l.itlMs.p99, false],
  ["tpotMs.p50", (l) => l.tpotMs.p50, false],
  ["e2eMs.p50", (l) => l.e2eMs.p50, false],
  ["acceptLength", (l) => l.acceptLength, true],
  ["errors", (l) => l.errors, false]
]

/**
 * The figures of `current` that moved by more than `threshold` (a fraction; default 0.05)
 * from `baseline`, level by level (levels matched by concurrency), largest move first.
 *
 * @category comparing
 */
export const compare = (
  baseline: BenchResult,
  current: BenchResult,
  threshold = 0.05
): ReadonlyArray<Change> => {
  const changes: Array<Change> = []
  for (const level of current.levels) {
    const old = baseline.levels.find((l) => l.concurrency === level.concurrency)
    if (old === undefined) continue
    for (const [figure, of, moreIsBetter] of compared) {
      const before = of(old)
      const after = of(level)
      if (before === undefined || after === undefined || before === after) continue
      const change = before === 0 ? Number.POSITIVE_INFINITY * Math.sign(after) : (after - before) / before
      if (Math.abs(change) <= threshold) continue
      changes.push({
        concurrency: level.concurrency,
        figure,
        before,
        after,
        change,
        better: moreIsBetter ? after > before : after < before
      })
    }
  }
  return changes.sort((a, b) => Math.abs(b.change) - Math.abs(a.change))
}

/** A saved result (`--json` output) read back; fails with the schema's reason. @category comparing */
export const decodeResult = Schema.decodeUnknown(Schema.parseJson(BenchResult))
