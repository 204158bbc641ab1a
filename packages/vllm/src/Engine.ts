/**
 * vLLM as an engine of the serving layer: found as the `vllm` distribution, started as `vllm
 * serve <model> [flags]` (`python -m vllm.entrypoints.cli.main serve`), its flags from the
 * shipped snapshots, its pre-load checks, its log lines and signatures, readiness by `/health`,
 * `/v1/models` and one completion, and a simulated install on the `sim` host (`~/vllm-env`).
 *
 * @since 0.1.0
 */
import type { Engine, Flags } from "@mlops/serve/Engine"
import { Effect } from "effect"
import * as Catalogue from "./Catalogue.js"
import { modelOf, portOf } from "./internal/engine/argvFacts.js"
import { flagsOf } from "./internal/engine/flags.js"
import { readiness } from "./internal/engine/readiness.js"
import { resolve } from "./internal/engine/resolve.js"
import * as Sim from "./internal/sim/programs.js"
import { logs } from "./Logs.js"

const shippedFlags = (version: string): Flags | undefined => {
  const chosen = Catalogue.choose(version)
  if (chosen === undefined) return undefined
  return flagsOf(chosen.catalogue, version, chosen.warning === null ? "shipped" : "nearest", chosen.warning)
}

/** @category engines */
export const VllmEngine: Engine = {
  name: "vllm",
  displayName: "vLLM",
  python: { package: "vllm", fingerprintFiles: ["engine/arg_utils.py", "entrypoints/openai/cli_args.py"] },
  versionOf: (env) => (env.package === "vllm" ? env.packageVersion : undefined),
  command: { module: "vllm.entrypoints.cli.main", leading: ["serve"], shown: ["vllm", "serve"] },
  defaultPort: 8000,
  modelOf,
  portOf,
  shippedFlags,
  flags: (request) => {
    const version = request.env.packageVersion ?? ""
    const flags = shippedFlags(version)
    return flags !== undefined
      ? Effect.succeed(flags)
      : Effect.fail(
          new Catalogue.UnknownVllmVersion({
            version,
            snapshots: Catalogue.snapshots.map((s) => `${s.name} (≈${s.near})`)
          })
        )
  },
  resolve,
  logs,
  readiness,
  apiKeyFlag: "--api-key",
  secretEnv: ["VLLM_API_KEY"],
  // the host's own parser is not run: vLLM's parser module moved between releases
  remoteCheck: undefined,
  sim: {
    prefix: Sim.prefix,
    files: Sim.files,
    programs: [Sim.python, Sim.vllm],
    versions: Sim.versions,
    defaultVersion: Sim.defaultVersion
  }
}
