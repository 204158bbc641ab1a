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
import { Command, Options } from "@effect/cli"
import { defaultGpus, engines } from "./facts.js"
import { imageOptions } from "./imageOptions.js"
import { engine, json, lazily, python } from "./shared.js"

const options = {
  host: Options.text("host").pipe(
    Options.optional,
    Options.withDescription("Probe this host for its engine and version, GPUs, model")
  ),
  engine,
  python,
  ...imageOptions,
  modelConfig: Options.file("model-config").pipe(
    Options.optional,
    Options.withDescription("A local config.json of the model (offline check)")
  ),
  gpus: Options.integer("gpus").pipe(
    Options.optional,
    Options.withDescription(`GPU count (default ${defaultGpus.count})`)
  ),
  computeCapability: Options.text("compute-capability").pipe(
    Options.optional,
    Options.withDescription(`e.g. 8.6 (default ${defaultGpus.computeCapability})`)
  ),
  gpuMemory: Options.text("gpu-memory").pipe(
    Options.optional,
    Options.withDescription(`Memory of one GPU, e.g. 48GiB (default ${defaultGpus.memoryGiB}GiB)`)
  ),
  version: Options.text("engine-version").pipe(
    Options.optional,
    Options.withDescription(
      `The engine's version to check for offline, also written --version (default its newest: ${engines.map((e) => `${e.displayName} ${e.latestVersion}`).join(", ")})`
    )
  ),
  targetVersion: Options.text("target-version").pipe(
    Options.optional,
    Options.withDescription("Upgrade check (SGLang): what changes for these flags in this SGLang version")
  ),
  flagsFromHost: Options.boolean("flags-from-host").pipe(
    Options.withDescription(
      "With --host: read the flags from the host's own SGLang parser, even for a shipped release"
    )
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const check = Command.make("check", options, (parsed) =>
  lazily(
    () => import("../programs/check.js"),
    (program) => program.check(parsed)
  )
).pipe(
  Command.withDescription(
    "Check an engine's flags (after `--`) against its rules without launching: offline with --model-config, or against --host"
  )
)
