/**
 * The simulated `vllm serve`, for the `sim` host's demo (it shares our parser and checks, so it
 * proves nothing about them: the end-to-end test uses a stand-in written from the reference).
 * It refuses what our argv decoder refuses (argparse's usage and exit 2) and the first error of
 * our checks (a ValueError, exit 1), binds its port at once, prints vLLM's start-up lines with
 * the durations scaled (`MLOPS_SIM_TIME_SCALE`, default 0.05), fails at the KV-cache step when
 * one sequence of max_model_len does not fit, and serves `/health` (503 until ready),
 * `/v1/models`, `/v1/completions`, `/version`, `/ping`.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import * as SimDecoding from "@mlops/serve/SimDecoding"
import * as SimGpus from "@mlops/serve/SimGpus"
import { resumeEnv } from "@mlops/serve/SimHost"
import { Clock, Duration, Effect, Either, Ref } from "effect"
import type { VllmArgvError } from "../../ArgvErrors.js"
import * as Catalogue from "../../Catalogue.js"
import { verdict } from "../../Check.js"
import type { GpuFacts } from "../../Rule.js"
import { availableBytes, bytesPerToken } from "../../rules/Memory.js"
import { decode } from "../argv/decode.js"
import { handler, speculationOf } from "./http.js"
import * as L from "./lines.js"

/** The sim's two GPUs as the checks see them (RTX A6000, 48 GB, compute capability 8.6). */
export const simGpus: GpuFacts = {
  count: 2,
  computeCapability: "8.6",
  memoryMiB: 49140,
  name: "NVIDIA RTX A6000"
}

const GiB = 1024 ** 3

/** What argparse itself prints after `vllm serve: error: `, by refusal; others print their message. */
const argparseSays: {
  readonly [K in VllmArgvError["_tag"]]?: (e: Extract<VllmArgvError, { _tag: K }>) => string
} = {
  UnknownFlag: (e) => `unrecognized arguments: ${e.flag}`,
  UnexpectedArgument: (e) => `unrecognized arguments: ${e.argument}`,
  AmbiguousFlag: (e) => `ambiguous option: ${e.flag} could match ${e.candidates.join(", ")}`,
  MissingValue: (e) => `argument ${e.flag}: expected one argument`,
  InvalidValue: (e) => `argument ${e.flag}: invalid value: '${e.value}'`
}

const argparseMessage = (e: VllmArgvError): string => {
  // keyed by the tag, so the entry found takes this very error
  const say = argparseSays[e._tag] as ((e: VllmArgvError) => string) | undefined
  return say === undefined ? e.message : say(e)
}

const traceback = (exception: string): ReadonlyArray<string> => [
  "Traceback (most recent call last):",
  '  File "/root/vllm-env/bin/vllm", line 10, in <module>',
  "    sys.exit(main())",
  '  File "/root/vllm-env/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1330, in create_engine_config',
  "    model_config = self.create_model_config()",
  exception
]

export const run = (
  ctx: FakeHost.ProgramContext,
  argv: ReadonlyArray<string>,
  version: string
): Effect.Effect<number> =>
  Effect.gen(function* () {
    const scale = Number(ctx.env.MLOPS_SIM_TIME_SCALE ?? "0.05")
    const wait = (realMs: number) => Effect.sleep(Duration.millis(Math.max(1, Math.round(realMs * scale))))
    const say = (level: L.Level, file: string, message: string, worker = false) =>
      Effect.flatMap(Clock.currentTimeMillis, (t) =>
        ctx.stdout.line(
          L.line(t, level, file, message, worker ? `EngineCore_DP0 pid=${ctx.pid + 1}` : undefined)
        )
      )
    const catalogue = Catalogue.choose(version)?.catalogue ?? Catalogue.latest
    const decoded = decode(catalogue, argv)
    if (Either.isLeft(decoded)) {
      yield* ctx.stderr.line("usage: vllm serve [model_tag] [options]")
      yield* ctx.stderr.line(`vllm serve: error: ${argparseMessage(decoded.left)}`)
      return 2
    }
    const { model, values, given } = decoded.right
    const configText = yield* ctx.fs.readText(`${model}/config.json`)
    if (configText === undefined) {
      for (const l of traceback(
        `OSError: ${model} is not a local folder and is not a valid model identifier listed on 'https://huggingface.co/models'`
      ))
        yield* ctx.stderr.line(l)
      return 1
    }
    const traits = yield* Effect.orDie(ModelTraits.fromJson(configText, `${model}/config.json`))
    const checked = verdict(decoded.right, { model: traits, gpus: simGpus, env: ctx.env, catalogue })
    const firstError = checked.errors[0]
    if (firstError !== undefined) {
      for (const l of traceback(`ValueError: ${firstError.vllmText}`)) yield* ctx.stderr.line(l)
      return 1
    }
    const port = typeof values.port === "number" ? values.port : 8000
    const host = typeof values.host === "string" ? values.host : "0.0.0.0"
    const served = Array.isArray(values.served_model_name) ? String(values.served_model_name[0]) : model
    const restored = ctx.env[resumeEnv] !== undefined
    const ready = yield* Ref.make(restored)
    const apiKey = Array.isArray(values.api_key) ? String(values.api_key[0]) : ctx.env.VLLM_API_KEY
    // vLLM binds its socket before the engine starts (nothing useful answers until it is up)
    const bound = yield* Effect.either(
      ctx.listen(
        port,
        handler({
          served,
          root: model,
          version,
          ready,
          apiKey,
          maxModelLen: traits.contextLength,
          decoder: yield* SimDecoding.make(SimDecoding.settingsFromEnv(ctx.env), speculationOf(values))
        })
      )
    )
    if (Either.isLeft(bound)) {
      yield* ctx.stderr.line("OSError: [Errno 98] Address already in use")
      return 1
    }
    // brought back by the persistent sim: it was ready, so it is again at once, and quiet
    if (restored) return yield* Effect.never
    const tp = typeof values.tensor_parallel_size === "number" ? values.tensor_parallel_size : 1
    const fraction = typeof values.gpu_memory_utilization === "number" ? values.gpu_memory_utilization : 0.9
    const totalMiB = simGpus.memoryMiB
    const others = yield* SimGpus.heldByOthers(ctx.fs, ctx.pid)
    const busiest = Math.max(0, ...Array.from({ length: tp }, (_, gpu) => others[gpu] ?? 0))
    const input = {
      values,
      given: new Set(given),
      model: traits,
      gpus: simGpus,
      env: ctx.env,
      release: catalogue.snapshot.near
    }
    const maxModelLen =
      typeof values.max_model_len === "number" && values.max_model_len > 0
        ? values.max_model_len
        : traits.contextLength
    const perToken = bytesPerToken(input) ?? 1
    const available = availableBytes(input) ?? 0
    const nonDefault = Object.fromEntries(given.map((dest) => [dest, values[dest]]))
    const lines = L.startup({
      version,
      args: { model_tag: model, ...nonDefault },
      architecture: traits.architecture,
      maxModelLen,
      model,
      weightsGiB: traits.estimatedWeightBytes / GiB / tp,
      kvGiB: Math.max(0, available / GiB),
      kvTokens: Math.max(0, Math.floor(available / perToken)),
      port,
      host
    })
    for (const step of lines) {
      yield* wait(step.ms)
      // vLLM's worker compares free memory with the fraction it wants before loading
      if (step.message.startsWith("Starting to load model") && totalMiB - busiest < fraction * totalMiB) {
        const gib = (mib: number) => (mib / 1024).toFixed(2)
        yield* say(
          "ERROR",
          "core.py:708",
          `ValueError: Free memory on device (${gib(totalMiB - busiest)}/${gib(totalMiB)} GiB) on startup is less than desired GPU memory utilization (${fraction}, ${gib(fraction * totalMiB)} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.`,
          true
        )
        yield* ctx.stderr.line(
          "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"
        )
        return 1
      }
      if (step.message.startsWith("Available KV cache memory"))
        yield* SimGpus.hold(
          ctx.fs,
          ctx.pid,
          Object.fromEntries(Array.from({ length: tp }, (_, gpu) => [gpu, Math.round(fraction * totalMiB)]))
        )
      if (step.message.startsWith("Available KV cache memory") && perToken * maxModelLen > available) {
        const fits = Math.max(0, Math.floor(available / perToken / 16) * 16)
        yield* say(
          "ERROR",
          "core.py:708",
          `ValueError: To serve at least one request with the models's max seq len (${maxModelLen}), (${((perToken * maxModelLen) / GiB).toFixed(2)} GiB KV cache is needed, which is larger than the available KV cache memory (${(Math.max(0, available) / GiB).toFixed(2)} GiB). Based on the available memory, the estimated maximum model length is ${fits}. Try increasing \`gpu_memory_utilization\` or decreasing \`max_model_len\` when initializing the engine.`,
          true
        )
        yield* say("ERROR", "core.py:718", "EngineCore failed to start.", true)
        yield* ctx.stderr.line(
          "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}"
        )
        return 1
      }
      // a progress bar has no log header
      if (step.file === "") yield* ctx.stdout.line(step.message)
      else yield* say("INFO", step.file, step.message, step.worker === true)
    }
    for (const l of L.uvicorn(ctx.pid)) yield* ctx.stdout.line(l)
    yield* Ref.set(ready, true)
    return yield* Effect.never
  }).pipe(Effect.ensuring(SimGpus.release(ctx.fs, ctx.pid)))
