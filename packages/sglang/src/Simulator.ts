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
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { FakeHostControl, FakeHostSpec } from "@mlops/core/FakeHost"
import type { Hosts } from "@mlops/core/Hosts"
import * as SimHost from "@mlops/serve/SimHost"
import type { Either, Layer } from "effect"
import * as Python from "./internal/sim/python.js"
import * as Server from "./internal/sim/server.js"
import { engine } from "./SglangEngine.js"

/** The alias of the built-in simulated host. @category constants */
export const alias = SimHost.alias

/** Where the simulated model lives. @category constants */
export const modelPath = SimHost.modelPath

/** The Python environment prefix (`<prefix>/bin/python`). @category constants */
export const python = Python.prefix

/** The SGLang version the simulated environment reports unless another is installed. @category constants */
export const sglangVersion = Server.sglangVersion

/** The release as the sim installs it, or why not. @category constructors */
export const simVersion = (version: string): Either.Either<string, SimHost.UnknownSimVersion> =>
  SimHost.simVersion(engine, version)

/** The simulated GPUs. @category constants */
export const gpus = SimHost.gpus

/**
 * The `sim` host with SGLang installed, as a FakeHost spec, for tests that combine it with
 * other fake hosts (`FakeHost.layer([Simulator.hostSpec, ...])`). `alias` renames it (a fleet
 * of sims).
 *
 * @category specs
 */
export const makeHostSpec = (
  options: { readonly alias?: string; readonly sglangVersion?: string } = {}
): FakeHostSpec =>
  SimHost.makeHostSpec(
    [{ engine, ...(options.sglangVersion === undefined ? {} : { version: options.sglangVersion }) }],
    options.alias === undefined ? {} : { alias: options.alias }
  )

/** @category specs */
export const hostSpec: FakeHostSpec = makeHostSpec()

/** A FakeHost layer with just the `sim` host (SGLang installed). @category layers */
export const layer: Layer.Layer<Hosts | ConnectionPool | FakeHostControl> = SimHost.layer([engine])

/** `SimHost.layerPersistent` with SGLang (a shipped release, see `simVersion`; default 0.5.11). @category layers */
export const layerPersistent = (options: {
  readonly stateFile: string
  readonly sglangVersion?: string
}): Layer.Layer<Hosts | ConnectionPool | FakeHostControl> =>
  SimHost.layerPersistent({
    stateFile: options.stateFile,
    engines: [{ engine, ...(options.sglangVersion === undefined ? {} : { version: options.sglangVersion }) }]
  })
