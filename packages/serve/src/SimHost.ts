/**
 * The built-in simulated host `sim`: a `FakeHost` with two RTX A6000s (`SimGpus`), a model
 * checkpoint's config.json at `modelPath`, each engine's simulated install (its Python
 * environment and server, `Engine.sim`) and a `torchrun` that trains for `mlops run`, so `mlops launch --host sim ...` works end to end on
 * any machine. `layerPersistent` keeps it between `mlops` runs in a local state file.
 *
 * The simulated servers are engines' own demos (they may share mlops' parser); as test evidence
 * they prove nothing about the rules or the classifier.
 *
 * @since 0.1.0
 */
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as FakeHost from "@mlops/core/FakeHost"
import type { Hosts } from "@mlops/core/Hosts"
import { Either, type Layer, Schema } from "effect"
import type { Engine } from "./Engine.js"
import * as Persistent from "./internal/sim/persistent.js"
import { resumeEnv } from "./internal/sim/state.js"
import * as Tools from "./internal/sim/tools.js"
import * as Train from "./internal/sim/train.js"
import { qwen36_27b } from "./SampleModels.js"
import * as SimGpus from "./SimGpus.js"

/** The alias of the built-in simulated host. @category constants */
export const alias = "sim"

/** Where the simulated model lives. @category constants */
export const modelPath = "/root/models/Qwen3.6-27B"

/** Set (to the port) in the environment of a restored, already-ready server: it answers at once. @category constants */
export { resumeEnv }

/**
 * A value as Python's `json.dumps` writes it (`", "` and `": "` between items, non-ASCII
 * escaped): what the sim's interpreters print where a real one would, so scripts matching
 * Python's output (the discovery script looks for `"versionSource": "`) see the same text.
 *
 * @category simulating
 */
export const pythonJson = (value: unknown): string => {
  if (value === null || value === undefined) return "null"
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`
  if (typeof value === "object")
    return `{${Object.entries(value)
      .map(([key, item]) => `${pythonJson(key)}: ${pythonJson(item)}`)
      .join(", ")}}`
  if (typeof value === "string")
    return JSON.stringify(value).replace(
      /[\u0080-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
    )
  return JSON.stringify(value)
}

/** The simulated GPUs. @category constants */
export const gpus: ReadonlyArray<FakeHost.FakeGpu> = SimGpus.gpus

/** The sim runs only the versions an engine's simulation knows. @category errors */
export class UnknownSimVersion extends Schema.TaggedError<UnknownSimVersion>()("UnknownSimVersion", {
  engine: Schema.String,
  version: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `the simulated host cannot run ${this.engine} ${this.version}: ${this.fix}`
  }
}

/** The version as the sim installs it (`v0.5.11` → `0.5.11`), or why not. @category constructors */
export const simVersion = (engine: Engine, version: string): Either.Either<string, UnknownSimVersion> => {
  const bare = version.replace(/^v/, "")
  const known = engine.sim.versions
  return known.includes(bare)
    ? Either.right(bare)
    : Either.left(
        new UnknownSimVersion({
          engine: engine.displayName,
          version,
          fix: `pick a shipped release (${known[0]} to ${known.at(-1)}; \`mlops flags --releases\` lists them)`
        })
      )
}

/** An engine on the sim, at a version (default: its simulation's default). @category models */
export interface Installed {
  readonly engine: Engine
  readonly version?: string
}

/**
 * The `sim` host as a FakeHost spec with the given engines installed, for tests that combine it
 * with other fake hosts (`FakeHost.layer([SimHost.makeHostSpec(...), ...])`). `alias` renames
 * it (a fleet of sims). The first engine's environment is the host's configured `python`.
 *
 * @category specs
 */
export const makeHostSpec = (
  engines: ReadonlyArray<Engine | Installed>,
  options: { readonly alias?: string } = {}
): FakeHost.FakeHostSpec => {
  const installed = engines.map((e): Installed => ("engine" in e ? e : { engine: e }))
  return {
    alias: options.alias ?? alias,
    hostname: "sim.local",
    user: "root",
    home: "/root",
    ...(installed[0] === undefined ? {} : { python: installed[0].engine.sim.prefix }),
    tags: ["simulated", "gpu"],
    files: Object.assign(
      {
        [`${modelPath}/config.json`]: `${JSON.stringify(qwen36_27b, null, 2)}\n`,
        [`${modelPath}/model.safetensors.index.json`]: "{}\n"
      },
      ...installed.map((i) => i.engine.sim.files(i.version))
    ),
    programs: [
      ...installed.flatMap((i) => i.engine.sim.programs),
      SimGpus.nvidiaSmi,
      FakeHost.ss,
      Tools.ls,
      Tools.cp,
      // tar, rm, mv: `mlops rm`, and `mlops run --sync`'s archives
      ...FakeHost.fileTools,
      // a training run for `mlops run` (torchrun-like)
      Train.torchrun
    ]
  }
}

/** A FakeHost layer with just the `sim` host: `Hosts | ConnectionPool | FakeHostControl`. @category layers */
export const layer = (
  engines: ReadonlyArray<Engine | Installed>
): Layer.Layer<Hosts | ConnectionPool | FakeHost.FakeHostControl> => FakeHost.layer([makeHostSpec(engines)])

/**
 * `layer`, kept between processes in `stateFile` (a JSON file on this machine; the CLI uses
 * `$MLOPS_HOME/sim/state.json`). Restored when built: files, the next pid, and the servers that
 * were running (a ready one is ready again at once and appends nothing to its log; one still
 * starting starts over with the same pid), and jobs' training runs (they start over). Saved atomically when the layer's scope closes, only
 * when something changed. A corrupt or unknown-version file is ignored with a one-line warning
 * on stderr (a fresh sim); deleting the file resets the sim.
 *
 * @category layers
 */
export const layerPersistent = (options: {
  readonly stateFile: string
  readonly engines: ReadonlyArray<Engine | Installed>
}): Layer.Layer<Hosts | ConnectionPool | FakeHost.FakeHostControl> =>
  Persistent.layer(layer(options.engines), alias, options.stateFile, [
    ...options.engines.map((e) => {
      const engine = "engine" in e ? e.engine : e
      return { module: engine.command.module, readyLine: engine.sim.readyLine }
    }),
    // a job's training run starts over (same pid, same GPUs) in the next command's sim
    { program: "torchrun" }
  ])
