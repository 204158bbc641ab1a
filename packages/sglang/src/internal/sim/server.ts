/**
 * The simulated `python -m sglang.launch_server`. It reuses `Argv` and `Resolve`, so it
 * refuses exactly what SGLang refuses, meeting only the FIRST fatal problem (as SGLang
 * does); otherwise it prints the lifecycle lines of a real launch (per TP rank, with the
 * draft phases when speculative) with phase durations scaled down, fails like SGLang when
 * the memory model says it does not fit or the port is taken, and then serves HTTP.
 *
 * Knobs (environment of the launch): `MLOPS_SIM_TIME_SCALE` (default 0.05: ~4 s of Clock
 * time for a launch that takes ~80 s for real), `MLOPS_SIM_HANG=<phase>` (stop making
 * progress when that phase starts, to exercise stall detection), `MLOPS_SIM_UNHEALTHY=1`
 * (`/health` stays 503 after the ready line).
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import type { Phase } from "@mlops/serve/LaunchEvent"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import * as Gpus from "@mlops/serve/SimGpus"
import { Clock, Duration, Effect, Either, Ref } from "effect"
import * as Argv from "../../Argv.js"
import * as Resolve from "../../Resolve.js"
import * as Rule from "../../Rule.js"
import * as Rules from "../../Rules.js"
import type { ServerArgs } from "../../ServerArgs.js"
import * as L from "../lifecycleLines.js"
import { handler, speculationOf } from "./http.js"
import * as Installed from "./installed.js"
import * as Memory from "./memory.js"
import { sglangDir } from "./paths.js"
import * as Resume from "./resume.js"
import * as Tracebacks from "./tracebacks.js"

/** The release a sim has unless another is installed. */
export const sglangVersion = Installed.defaultVersion

/** Real-ish durations (ms) of each step of a launch before scaling. */
const REAL_MS = {
  args: 1200,
  distributed: 4000,
  weights: 40000,
  mamba: 300,
  kv: 500,
  graph: 20000,
  draftWeights: 2000,
  draftGraph: 8000,
  http: 1000,
  warmup: 1500
} as const

const GiB = 1024 ** 3

export const run = (ctx: FakeHost.ProgramContext, argv: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.gen(function* () {
    const scale = Number(ctx.env.MLOPS_SIM_TIME_SCALE ?? "0.05")
    const hangAt = ctx.env.MLOPS_SIM_HANG as Phase | undefined
    const wait = (realMs: number) => Effect.sleep(Duration.millis(Math.max(1, Math.round(realMs * scale))))
    const now = Clock.currentTimeMillis
    // the lifecycle lines name a stock install's paths: print this host's (one Python layout)
    const here = (text: string) => text.replaceAll(L.PKG, sglangDir)
    const log = (process: string, message: string) =>
      Effect.flatMap(now, (t) => ctx.stdout.line(here(L.line(t, process, message))))
    const raw = (lines: ReadonlyArray<string>) =>
      Effect.forEach(lines, (l) => ctx.stderr.line(here(l)), { discard: true })
    const phase = (p: Phase) => (hangAt === p ? Effect.never : Effect.void)

    // restored by the persistent sim: it was ready when the last mlops run ended
    const { version, catalogue } = yield* Installed.installed(ctx)
    const resumePort = ctx.env[Resume.resumeEnv]
    if (resumePort !== undefined) return yield* Resume.run(ctx, argv, { port: Number(resumePort), version })

    // argparse runs first: a usage error, exit 2
    const decoded = yield* Effect.either(Argv.decodeArgv(argv, catalogue))
    if (Either.isLeft(decoded)) {
      yield* raw(Tracebacks.argparse(decoded.left))
      return 2
    }
    const { args, explicit } = decoded.right
    yield* raw(L.entrypointWarning())

    // the model config is read inside ServerArgs (step 10)
    const configText = yield* ctx.fs.readText(`${args.model_path}/config.json`)
    if (configText === undefined) {
      yield* raw(Tracebacks.modelNotFound(args.model_path))
      return 1
    }
    const traits = yield* Effect.orDie(ModelTraits.fromJson(configText, `${args.model_path}/config.json`))
    const gpu = Gpus.gpus[0]!
    const ctxResolve = { traits, gpus: Gpus.forRules, env: ctx.env, version }
    const resolved = Resolve.resolveEither(args, explicit, ctxResolve)
    // model-init checks fail later, in the scheduler ranks (the child-failure path)
    const first = Either.isLeft(resolved) ? resolved.left.violations[0] : undefined
    const atModelInit = first !== undefined && first.stage === "model-init" ? first : undefined
    if (first !== undefined && atModelInit === undefined) {
      yield* raw(Tracebacks.violation(first, traits.architecture))
      return 1
    }
    const launcherRules = Rules.forVersion(version).rules.filter(
      (r) => Rule.stageOf(r.order) !== "model-init"
    )
    const launcherResolved = Either.isRight(resolved)
      ? resolved
      : Resolve.resolveEither(args, explicit, ctxResolve, launcherRules)
    if (Either.isLeft(launcherResolved))
      return yield* Effect.dieMessage("launcher rules failed after model-init ones")
    const effective: ServerArgs = launcherResolved.right.effective
    yield* wait(REAL_MS.args)
    for (const message of launcherResolved.right.logLines) yield* log("", message)
    yield* log("", L.serverArgs(reprValues(effective)))

    const tp = effective.tp_size
    const ranks = Array.from({ length: tp }, (_, r) => L.rankPrefix(r, tp))
    // rank r runs on GPU base_gpu_id + r × gpu_id_step
    const gpuOf = (rank: number) => effective.base_gpu_id + rank * Math.max(1, effective.gpu_id_step)
    const each = (message: string) => Effect.forEach(ranks, (p) => log(p, message), { discard: true })
    const speculative = effective.speculative_algorithm !== null
    const contextLength = effective.context_length ?? traits.contextLength
    // what other processes hold is not free for this server (SGLang sizes from free memory)
    const others = yield* Gpus.heldByOthers(ctx.fs, ctx.pid)
    const otherMiB = ranks.map((_, r) => others[gpuOf(r)] ?? 0)
    const memory = Memory.plan({
      traits,
      tp,
      gpuMiB: gpu.memoryTotalMiB,
      memFractionStatic: effective.mem_fraction_static ?? 0.8,
      requiredTokens: explicit.has("context_length") ? contextLength : 4096,
      maxRunningRequests: effective.max_running_requests ?? 256,
      speculative,
      otherGiB: Math.max(0, ...otherMiB) / 1024
    })
    const holdGiB = (gib: number) =>
      Gpus.hold(ctx.fs, ctx.pid, Object.fromEntries(ranks.map((_, r) => [gpuOf(r), Math.round(gib * 1024)])))
    // Every rank prints its own traceback, then the launcher's handler SIGKILLs its own process
    // tree (kill_process_tree: its children, then itself), not its process group.
    const childFailure = (lines: (t: number, process: string) => ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const t = yield* now
        for (const p of ranks) yield* raw(lines(t, p === "" ? "" : p))
        yield* log("", L.sigquitFromChild())
        yield* ctx.kill({ pid: ctx.pid }, "KILL")
        return yield* Effect.never
      })

    yield* phase("distributed-init")
    yield* each(L.initDistBegin())
    yield* wait(REAL_MS.distributed)
    if (tp * effective.pp_size > Gpus.gpus.length || gpuOf(tp - 1) >= Gpus.gpus.length) {
      return yield* childFailure(Tracebacks.invalidDevice)
    }
    // SGLang compares the ranks' free memory before loading: one busy GPU fails the launch
    const freeGB = otherMiB.map((mib) => (gpu.memoryTotalMiB - mib) / 1024)
    const minFree = Math.min(...freeGB)
    const unbalanced = freeGB.findIndex((free) => minFree < free * 0.9)
    if (unbalanced !== -1) {
      return yield* childFailure((t, p) =>
        p === ranks[unbalanced]
          ? L.unbalancedTraceback(t, p, { minFreeGB: minFree, localFreeGB: freeGB[unbalanced]! })
          : []
      )
    }
    yield* each(L.initDistEnd(REAL_MS.distributed / 1000, 0.4))
    if (atModelInit !== undefined)
      return yield* childFailure((t, p) => Tracebacks.modelInit(t, p, atModelInit))

    yield* phase("weights-loading")
    const freeGiB = memory.totalGiB - Math.max(0, ...otherMiB) / 1024
    yield* each(L.loadWeightBegin(freeGiB - 0.6))
    yield* log(ranks[0]!, L.weightsFormat())
    const shards = Math.max(1, Math.ceil(traits.estimatedWeightBytes / GiB / 4.5))
    for (let i = 0; i <= shards; i++) {
      yield* ctx.stderr.line(L.shardProgress(i, shards, i))
      if (memory.outcome === "weights-oom" && i === Math.ceil(shards / 2)) {
        return yield* childFailure((t, p) =>
          L.oomTraceback({
            epochMs: t,
            process: p,
            gpu: 0,
            triedGiB: 1.26,
            totalGiB: memory.totalGiB,
            freeMiB: 214.75
          })
        )
      }
      yield* wait(REAL_MS.weights / (shards + 1))
    }
    yield* holdGiB(memory.weightsGiB)
    yield* phase("weights-loaded")
    yield* each(
      L.loadWeightEnd({
        elapsedS: REAL_MS.weights / 1000,
        modelClass: traits.architecture,
        availGB: freeGiB - memory.weightsGiB,
        usageGB: memory.weightsGiB
      })
    )
    if (traits.hybridLinearAttention !== undefined) {
      yield* phase("mamba-cache")
      yield* wait(REAL_MS.mamba)
      yield* each(L.mambaCache({ size: 144, convGB: 0.3, ssmGB: 6.5, speculative }))
    }
    yield* phase("kv-cache")
    yield* wait(REAL_MS.kv)
    if (memory.outcome === "kv-pool") {
      return yield* childFailure((t, p) => L.kvPoolTraceback(t, p, effective.mem_fraction_static ?? 0.8))
    }
    const kvGB = memory.kvGiB / 2
    yield* each(L.kvCache(memory.kvTokens, kvGB, kvGB))
    yield* holdGiB(memory.heldGiB)
    const avail = memory.totalGiB - memory.staticGiB
    yield* each(L.memoryPoolEnd(avail))
    if (!effective.disable_cuda_graph) {
      yield* phase("cuda-graph")
      yield* each(L.captureBegin(avail))
      yield* log(ranks[0]!, L.captureBs([1, 2, 4, 8, 16, 24, 32, 48]))
      yield* wait(REAL_MS.graph)
      if (memory.outcome === "graph-oom") {
        return yield* childFailure((t, p) =>
          L.oomTraceback({
            epochMs: t,
            process: p,
            gpu: 0,
            triedGiB: 0.5,
            totalGiB: memory.totalGiB,
            freeMiB: 96
          })
        )
      }
      yield* each(L.captureEnd(REAL_MS.graph / 1000, 0.9, avail - 0.9))
    }
    if (speculative) {
      yield* phase("draft-weights")
      yield* each(L.loadWeightBegin(avail - 0.9))
      yield* wait(REAL_MS.draftWeights)
      yield* each(
        L.loadWeightEnd({
          elapsedS: 1.1,
          modelClass: `${traits.architecture}MTP`,
          availGB: avail - 1.8,
          usageGB: 0.9
        })
      )
      if (!effective.disable_cuda_graph) {
        yield* phase("draft-cuda-graph")
        yield* each(L.draftCaptureBegin(avail - 1.8))
        yield* wait(REAL_MS.draftGraph)
        yield* each(L.draftCaptureEnd(REAL_MS.draftGraph / 1000, 0.3, avail - 2.1))
      }
    }
    yield* holdGiB(memory.heldGiB + memory.runtimeGiB / 2)
    yield* log(
      ranks[0]!,
      L.capacity({
        maxTotalNumTokens: memory.kvTokens,
        chunkedPrefillSize: effective.chunked_prefill_size ?? 4096,
        maxRunningRequests: effective.max_running_requests ?? 256,
        contextLen: contextLength,
        availGB: avail - 2.1
      })
    )

    // uvicorn binds only now, after everything is loaded
    const ready = yield* Ref.make(false)
    const startedAtMs = yield* now
    yield* wait(REAL_MS.http)
    yield* log("", L.uvicornStarted(ctx.pid))
    const bound = yield* Effect.either(
      ctx.listen(
        effective.port,
        handler({
          args: effective,
          architecture: traits.architecture,
          contextLength,
          version,
          ready,
          startedAtMs,
          unhealthy: ctx.env.MLOPS_SIM_UNHEALTHY === "1",
          decoder: yield* SimDecoding.make(SimDecoding.settingsFromEnv(ctx.env), speculationOf(effective))
        })
      )
    )
    if (Either.isLeft(bound)) {
      yield* ctx.stderr.line(L.portInUse(yield* now, effective.host, effective.port))
      return 1
    }
    for (const m of L.uvicornStartup()) yield* log("", m)
    yield* phase("http-up")
    yield* log("", L.uvicornRunning(effective.host, effective.port))
    yield* wait(REAL_MS.warmup / 2)
    yield* log("", L.accessLine("GET", "/model_info", 200))
    yield* phase("warmup")
    yield* log(ranks[0]!, L.prefillBatch(7))
    yield* wait(REAL_MS.warmup / 2)
    yield* log("", L.accessLine("POST", "/generate", 200))
    yield* Ref.set(ready, true)
    yield* log("", L.ready())
    return yield* Effect.never
  }).pipe(Effect.ensuring(Gpus.release(ctx.fs, ctx.pid)))

/** The fields shown in the `server_args=ServerArgs(...)` line (a readable subset). */
const reprValues = (args: ServerArgs): Record<string, L.ArgValue> => ({
  model_path: args.model_path,
  tokenizer_path: args.tokenizer_path ?? args.model_path,
  host: args.host,
  port: args.port,
  mem_fraction_static: args.mem_fraction_static,
  max_running_requests: args.max_running_requests,
  chunked_prefill_size: args.chunked_prefill_size,
  context_length: args.context_length,
  tp_size: args.tp_size,
  pp_size: args.pp_size,
  page_size: args.page_size,
  attention_backend: args.attention_backend,
  disable_radix_cache: args.disable_radix_cache,
  disable_cuda_graph: args.disable_cuda_graph,
  speculative_algorithm: args.speculative_algorithm,
  speculative_num_steps: args.speculative_num_steps,
  speculative_eagle_topk: args.speculative_eagle_topk,
  speculative_num_draft_tokens: args.speculative_num_draft_tokens,
  mamba_scheduler_strategy: args.mamba_scheduler_strategy
})
