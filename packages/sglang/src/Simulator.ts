/**
 * The built-in host `sim`: a simulated GPU server on core's `FakeHost`, so every mlops program
 * can be tried (and tested) without hardware.
 *
 * - 2× NVIDIA RTX A6000 48 GB (compute capability 8.6); `nvidia-smi` shows the memory held by
 *   running simulated servers, `ss` the ports they listen on;
 * - a Python environment at `~/ml-env` with SGLang 0.5.11 (`~/ml-env/bin/python`), or any other
 *   shipped release (`makeHostSpec({ sglangVersion })`, `layerPersistent({ sglangVersion })`): its
 *   parser, checks and flag dump are that release's (the log lines stay 0.5.11's);
 * - a model directory `/root/models/Qwen3.6-27B` with a Qwen3.6-27B-like `config.json`;
 * - `python -m sglang.launch_server` is simulated: it reuses `Argv` and `Resolve` (so it fails
 *   like SGLang: first fatal problem only), prints SGLang's lifecycle lines, runs out of memory
 *   when the memory model says so, and serves `/health`, `/v1/models`, `/generate`,
 *   `/server_info`, `/model_info`.
 *
 * `layer` is in memory (deterministic, for tests and single programs). `layerPersistent`, which
 * the CLI uses, saves the sim to a local state file when its scope closes and restores it on the
 * next build: the files under the sim's state dir and the servers that were running (same pid,
 * port, GPU memory; ready ones ready at once), so `mlops launch --host sim` then
 * `mlops status/logs/stop --host sim` work across invocations.
 *
 * Launch-time knobs (set them in the launch's `env`): `MLOPS_SIM_TIME_SCALE` (default 0.05,
 * a launch takes ~4 s of Clock time), `MLOPS_SIM_HANG=<phase>` (hang when that phase starts),
 * `MLOPS_SIM_UNHEALTHY=1` (`/health` stays 503 after the ready line).
 *
 * @since 0.1.0
 */
import { FakeHost } from "@mlops/core"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { Hosts } from "@mlops/core/Hosts"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Either, type Layer, Schema } from "effect"
import * as Catalogue from "./Catalogue.js"
import * as Gpus from "./internal/sim/gpus.js"
import * as Installed from "./internal/sim/installed.js"
import * as Persistent from "./internal/sim/persistent.js"
import * as Python from "./internal/sim/python.js"
import * as Server from "./internal/sim/server.js"
import * as Tools from "./internal/sim/tools.js"

/** The alias of the built-in simulated host. @category constants */
export const alias = "sim"

/** Where the simulated model lives. @category constants */
export const modelPath = "/root/models/Qwen3.6-27B"

/** The Python environment prefix (`<prefix>/bin/python`). @category constants */
export const python = Python.prefix

/** The SGLang version the simulated environment reports unless another is installed. @category constants */
export const sglangVersion = Server.sglangVersion

/** The sim runs shipped releases only (their catalogue and rules drive it). @category errors */
export class UnknownSimVersion extends Schema.TaggedError<UnknownSimVersion>()("UnknownSimVersion", {
  version: Schema.String,
  fix: Schema.String
}) {
  override get message() {
    return `the simulated host cannot run SGLang ${this.version}: ${this.fix}`
  }
}

/** The release as the sim installs it, or why not. @category constructors */
export const simVersion = (version: string): Either.Either<string, UnknownSimVersion> => {
  const catalogue = Catalogue.get(version)
  return catalogue !== undefined
    ? Either.right(catalogue.version)
    : Either.left(
        new UnknownSimVersion({
          version,
          fix: `pick a shipped release (${Catalogue.releases[0]!.version} to ${Catalogue.releases.at(-1)!.version}; \`mlops flags --releases\` lists them)`
        })
      )
}

/** The simulated GPUs. @category constants */
export const gpus: ReadonlyArray<FakeHost.FakeGpu> = Gpus.gpus

/**
 * The `sim` host as a FakeHost spec, for tests that combine it with other fake hosts
 * (`FakeHost.layer([Simulator.hostSpec, ...])`). `alias` renames it (a fleet of sims).
 *
 * @category specs
 */
export const makeHostSpec = (
  options: { readonly alias?: string; readonly sglangVersion?: string } = {}
): FakeHost.FakeHostSpec => ({
  alias: options.alias ?? alias,
  hostname: "sim.local",
  user: "root",
  home: "/root",
  python: Python.prefix,
  tags: ["simulated", "gpu"],
  files: {
    [`${Python.prefix}/bin/python`]: "#!simulated python\n",
    ...Installed.packageFiles(options.sglangVersion ?? Server.sglangVersion),
    [`${modelPath}/config.json`]: `${JSON.stringify(qwen36_27b, null, 2)}\n`,
    [`${modelPath}/model.safetensors.index.json`]: "{}\n"
  },
  programs: [Python.program, Gpus.nvidiaSmi, FakeHost.ss, Tools.ls]
})

/** @category specs */
export const hostSpec: FakeHost.FakeHostSpec = makeHostSpec()

/**
 * A FakeHost layer with just the `sim` host: `Hosts | ConnectionPool | FakeHostControl`.
 *
 * @category layers
 */
export const layer: Layer.Layer<Hosts | ConnectionPool | FakeHost.FakeHostControl> = FakeHost.layer([
  hostSpec
])

/**
 * `layer`, kept between processes in `stateFile` (a JSON file on this machine; the CLI uses
 * `$MLOPS_HOME/sim/state.json`). Restored when built: files, the next pid, and the servers that
 * were running (a ready one is ready again at once and appends nothing to its log; one still
 * starting starts over with the same pid). Saved atomically when the layer's scope closes, only
 * when something changed. A corrupt or unknown-version file is ignored with a one-line warning
 * on stderr (a fresh sim); deleting the file resets the sim.
 *
 * @category layers
 */
export const layerPersistent = (options: {
  readonly stateFile: string
  /** A shipped release (see `simVersion`); default 0.5.11. */
  readonly sglangVersion?: string
}): Layer.Layer<Hosts | ConnectionPool | FakeHost.FakeHostControl> =>
  Persistent.layer(
    options.sglangVersion === undefined
      ? layer
      : FakeHost.layer([makeHostSpec({ sglangVersion: options.sglangVersion })]),
    alias,
    options.stateFile
  )
