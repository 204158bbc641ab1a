/**
 * `mlops launch --host H [options] -- <engine flags>`: everything after `--` reaches the engine
 * untouched. Human output follows the launch phase by phase; `--json` prints one NDJSON line
 * per event, the last one being the result (`Launched`) or the failure (with `_tag` and fix).
 *
 * Ctrl-C: stderr says whether the server keeps running and how to follow or stop it (with
 * `--stop-on-interrupt`, that it was stopped, confirmed on the host).
 */
import { Command, Options } from "@effect/cli"
import { imageOptions } from "./imageOptions.js"
import { placementOptions } from "./placementOptions.js"
import { engine, json, lazily, python } from "./shared.js"

/** Relaunches `--auto-fix` allows. */
export const autoFixAttempts = 3

const options = {
  engine,
  host: Options.text("host").pipe(
    Options.optional,
    Options.withDescription("Host alias (ssh_config, hosts.json, or `sim`); across several hosts, rank 0's")
  ),
  hosts: Options.text("hosts").pipe(
    Options.optional,
    Options.withDescription(
      "One deployment across several hosts, one rank on each, rank 0's first (a,b[,c], or a group named in hosts.json): the flags are the whole deployment's (--tp counts every GPU); mlops writes --nnodes, each rank's place and where they meet"
    )
  ),
  rendezvousPort: Options.integer("rendezvous-port").pipe(
    Options.optional,
    Options.withDescription(
      "Across several hosts: the port the ranks meet at on rank 0's host (default: a free one from 29500)"
    )
  ),
  name: Options.text("name").pipe(
    Options.optional,
    Options.withDescription("Deployment name (default: from the model)")
  ),
  env: Options.text("env").pipe(
    Options.repeated,
    Options.withDescription("K=V environment for SGLang (repeatable; values are never printed or stored)")
  ),
  python,
  ...imageOptions,
  json,
  autoFix: Options.boolean("auto-fix").pipe(
    Options.withDescription(`Apply a classified failure's fix and relaunch (up to ${autoFixAttempts} times)`)
  ),
  noPreflight: Options.boolean("no-preflight").pipe(
    Options.withDescription("Skip host probes and the offline rule check; meet problems at runtime")
  ),
  remoteCheck: Options.boolean("remote-check").pipe(
    Options.withDescription(
      "Also run the host's own SGLang argument parsing before launching (default: only for a version whose rules mlops has not verified)"
    )
  ),
  noRemoteCheck: Options.boolean("no-remote-check").pipe(
    Options.withDescription("Never run the host's own argument parsing, even for an unverified version")
  ),
  flagsFromHost: Options.boolean("flags-from-host").pipe(
    Options.withDescription(
      "Read the flags from the host's own SGLang parser, even for a release mlops ships"
    )
  ),
  allowBusyGpus: Options.boolean("allow-busy-gpus").pipe(
    Options.withDescription("Start even when other processes hold memory on the GPUs this launch uses")
  ),
  replace: Options.boolean("replace").pipe(Options.withDescription("Replace a deployment of the same name")),
  stopOnInterrupt: Options.boolean("stop-on-interrupt").pipe(
    Options.withDescription("Stop the server on Ctrl-C (default: it keeps running)")
  ),
  tunnel: Options.boolean("tunnel").pipe(
    Options.withDescription("Keep a local tunnel to the server open until Ctrl-C")
  ),
  ...placementOptions
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const launch = Command.make("launch", options, (parsed) =>
  lazily(
    () => import("../programs/launch.js"),
    (program) => program.launch(parsed)
  )
).pipe(
  Command.withDescription(
    "Start an SGLang server on a host (or one deployment across several: --hosts a,b) and follow it to ready. SGLang's flags go after `--`, exactly as SGLang takes them: mlops launch --host sim -- --model-path /root/models/Qwen3.6-27B --tp 2"
  )
)
