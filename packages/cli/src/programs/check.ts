/**
 * `mlops check [--engine E] (--host H | --model-config FILE | --version V) [--gpus N --compute-capability X.Y --gpu-memory 48GiB] -- <flags>`:
 * the engine's rules without launching. With `--host` the host is probed (the engine and its
 * version, GPUs, model config); otherwise everything is local and offline, for `--version`
 * (default the engine's newest shipped release). GPU defaults when not given: 1 GPU, compute
 * capability 9.0, 80 GiB (an H100). Offline, the engine is SGLang unless `--engine` says.
 *
 * `--target-version V` (SGLang): the upgrade check instead (from `--version`, or the host's
 * version): which flags were removed, renamed or changed, which rules start or stop applying,
 * and whether V accepts the command (exit 0), or its refusal's exit code.
 */
import { FileSystem } from "@effect/platform"
import * as Check from "@mlops/serve/Check"
import type * as Engine from "@mlops/serve/Engine"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import * as Upgrade from "@mlops/sglang/Upgrade"
import { Console, Effect, Option } from "effect"
import type { Parsed } from "../commands/check.js"
import { CommandExit, MlopsWords, SglangFlags, UsageError } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import * as ExitCodes from "../ExitCodes.js"
import { foundAt } from "../render/located.js"
import { bold, green, type Style, TerminalStyle, yellow } from "../render/style.js"
import * as UpgradeView from "../render/upgrade.js"
import * as RuntimeSpec from "./runtimeSpec.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

/** The runtime `--python` or `--image` asks for, as request fields. */
const runtimeOf = (given: RuntimeSpec.Given) =>
  Effect.map(RuntimeSpec.specOf(given), (runtime) => (runtime === undefined ? {} : { runtime }))

/** `--host` and `--model-config` both or neither, or a bad `--gpu-memory`. */
/** `48GiB`, `48G`, `48` (GiB), `49152MiB`. */
export const parseGiB = (text: string): number | undefined => {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(gib|gb|g|mib|mb|m)?\s*$/i.exec(text)
  if (match === null) return undefined
  const value = Number(match[1])
  const unit = (match[2] ?? "gib").toLowerCase()
  return unit.startsWith("m") ? value / 1024 : value
}

const human = (style: Style, result: Check.CheckResult, engine: Engine.Engine | undefined): string => {
  const e = result.effective as Readonly<Record<string, unknown>>
  const shown = engine?.summaryFields ?? []
  const interesting = shown.filter((field) => e[field] !== null && e[field] !== undefined)
  const name = Engines.displayName(result.engine)
  const python =
    result.python === undefined ? [] : [`  checked against ${name} ${foundAt(result.python, "--python")}`]
  const placement =
    result.placement === undefined
      ? []
      : [
          `  runs as ${result.placement.description}${result.placement.summary === undefined ? "" : `: ${result.placement.summary}`}`
        ]
  return [
    `${green(style, "✓")} ${bold(style, `${name} ${result.version} accepts these flags`)}${result.rulesVerified ? "" : " (flags only)"}`,
    ...python,
    ...placement,
    ...result.warnings.map((w) => `  ${yellow(style, "!")} ${w}`),
    ...(result.adjustments.length > 0
      ? [`  ${name} will adjust:`, ...result.adjustments.map((a) => `    · ${a}`)]
      : []),
    "  effective:",
    ...interesting.map((field) => `    ${field} = ${String(e[field])}`)
  ].join("\n")
}

export const check = (options: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const parsed = { ...options, flags: yield* SglangFlags }
    const style = yield* TerminalStyle
    const host = Option.getOrUndefined(parsed.host)
    const context = { host, argv: parsed.flags, prefix: yield* MlopsWords }
    // the upgrade check prints its report, then exits with the target's refusal's code
    const refusedWith = yield* handle(
      parsed.json,
      context,
      Effect.gen(function* () {
        if (
          Option.isSome(parsed.host) &&
          (Option.isSome(parsed.modelConfig) || Option.isSome(parsed.version))
        ) {
          return yield* new UsageError({
            message:
              "give either --host <alias> or --model-config <config.json> / --version <V> (a host has its own)"
          })
        }
        if (Option.isSome(parsed.python) && host === undefined) {
          return yield* new UsageError({
            message: "--python names an environment on a host: add --host <alias>"
          })
        }
        const offlineVersion = Option.getOrUndefined(parsed.version)
        if (
          host === undefined &&
          Option.isNone(parsed.modelConfig) &&
          offlineVersion === undefined &&
          Option.isNone(parsed.targetVersion)
        ) {
          return yield* new UsageError({
            message:
              "give either --host <alias> or --model-config <config.json> (or --version / --target-version)"
          })
        }
        const memory = Option.map(parsed.gpuMemory, parseGiB)
        if (Option.isSome(memory) && memory.value === undefined) {
          return yield* new UsageError({ message: "--gpu-memory expects e.g. 48GiB or 49152MiB" })
        }
        const gpus: Check.GpuFacts = {
          ...(Option.isSome(parsed.gpus) ? { count: parsed.gpus.value } : {}),
          ...(Option.isSome(parsed.computeCapability)
            ? { computeCapability: parsed.computeCapability.value }
            : {}),
          ...(Option.isSome(memory) && memory.value !== undefined ? { memoryGiB: memory.value } : {})
        }
        const configPath = Option.getOrUndefined(parsed.modelConfig)
        const configText =
          configPath === undefined
            ? undefined
            : yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(configPath))
        // offline: the engine named, else the first; only that one is loaded
        const offlineEngine = Option.isSome(parsed.engine)
          ? ((yield* Engines.named(parsed.engine.value)) ?? Engines.first)
          : Engines.first
        if (Option.isSome(parsed.targetVersion)) {
          if (Option.isSome(parsed.engine) && parsed.engine.value === "vllm") {
            // vLLM's: from --version, or the host's installed vLLM
            const VllmUpgrade = yield* Effect.promise(() => import("@mlops/vllm/Upgrade"))
            const runtime = yield* runtimeOf(parsed)
            const from =
              host !== undefined
                ? (yield* Effect.flatMap(
                    Effect.promise(() => import("@mlops/vllm/Installed")),
                    (Installed) => Installed.onHost({ host, ...runtime })
                  )).version
                : (offlineVersion ??
                  (yield* Effect.promise(() => import("@mlops/vllm/Catalogue"))).latest.snapshot.near)
            const report = yield* VllmUpgrade.compare({
              argv: parsed.flags,
              from,
              to: parsed.targetVersion.value,
              gpus,
              ...(configText === undefined ? {} : { modelConfig: configText })
            })
            if (parsed.json) yield* printJson({ _tag: "UpgradeChecked", ...report })
            else yield* Console.log(UpgradeView.human(style, report))
            return report.target._tag === "Refused" ? ExitCodes.fromFailure(report.target.error) : undefined
          }
          if (Option.isSome(parsed.engine) && parsed.engine.value !== SglangEngine.engine.name) {
            return yield* new UsageError({
              message: `--target-version compares SGLang or vLLM releases: ${parsed.engine.value} has none`
            })
          }
          const common = {
            argv: parsed.flags,
            to: parsed.targetVersion.value,
            gpus,
            ...(configText === undefined ? {} : { modelConfig: configText })
          }
          const report =
            host !== undefined
              ? yield* Upgrade.fromHost({
                  argv: parsed.flags,
                  to: parsed.targetVersion.value,
                  host,
                  ...(yield* runtimeOf(parsed))
                })
              : yield* Upgrade.compare({
                  ...common,
                  from: offlineVersion ?? SglangEngine.engine.latestFlags.version
                })
          if (parsed.json) yield* printJson({ _tag: "UpgradeChecked", ...report })
          else yield* Console.log(UpgradeView.human(style, report))
          return report.target._tag === "Refused" ? ExitCodes.fromFailure(report.target.error) : undefined
        }
        const result: Check.CheckResult =
          host !== undefined
            ? yield* Check.host(yield* Engines.engineOf(parsed.engine), {
                host,
                argv: parsed.flags,
                flagsFromHost: parsed.flagsFromHost,
                ...(yield* runtimeOf(parsed))
              })
            : yield* Check.offline(offlineEngine, {
                argv: parsed.flags,
                gpus,
                ...(configText === undefined ? {} : { modelConfig: configText }),
                ...(offlineVersion === undefined ? {} : { version: offlineVersion })
              })
        if (parsed.json) yield* printJson({ _tag: "Checked", ...result })
        else yield* Console.log(human(style, result, yield* Engines.named(result.engine)))
        return undefined
      })
    )
    if (refusedWith !== undefined) return yield* new CommandExit({ code: refusedWith })
  })
