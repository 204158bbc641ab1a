/** `mlops run --host H [--name N] [--gpus K | --gpu-ids 0,1] [--wait] [--image I] [--sync DIR] [--env K=V] -- <command>`: a job. */
import { Command, Options } from "@effect/cli"
import { imageOptions } from "./imageOptions.js"
import { host, json, lazily, python } from "./shared.js"
import { slurmOptions } from "./slurmOptions.js"

const options = {
  host,
  name: Options.text("name").pipe(
    Options.optional,
    Options.withDescription("Job name (default: the script's name, -2, -3… when taken)")
  ),
  gpus: Options.integer("gpus").pipe(
    Options.optional,
    Options.withDescription(
      "How many GPUs, picked on the host (free memory, not held by another job); default none"
    )
  ),
  gpuIds: Options.text("gpu-ids").pipe(
    Options.optional,
    Options.withDescription("These GPUs (as nvidia-smi numbers them: 0,1) instead of a count")
  ),
  wait: Options.boolean("wait").pipe(
    Options.withDescription(
      "Queue on the host until the GPUs are free (first come, first served) rather than refuse"
    )
  ),
  sync: Options.text("sync").pipe(
    Options.optional,
    Options.withDescription(
      "Copy this local directory to the job's run directory first (only what changed; .gitignore and secrets such as .env left out) and run there"
    )
  ),
  include: Options.text("include").pipe(
    Options.repeated,
    Options.withDescription(
      "With --sync: send files matching this pattern even if ignored (repeatable; e.g. .env)"
    )
  ),
  env: Options.text("env").pipe(
    Options.repeated,
    Options.withDescription("K=V environment for the job (repeatable; values are never printed or stored)")
  ),
  python,
  // from a container image: in its foreground on the host, the run directory mounted, the picked GPUs only
  ...imageOptions,
  // a Slurm batch job (from a login node): Slurm queues it and binds its GPUs
  ...slurmOptions,
  detach: Options.boolean("detach").pipe(
    Options.withAlias("d"),
    Options.withDescription("Return once the job has started (or queued); follow it later with logs -f")
  ),
  json
}

/** @internal */
export type Parsed = Command.Command.ParseConfig<typeof options>

export const run = Command.make("run", options, (parsed) =>
  lazily(
    () => import("../programs/run.js"),
    (program) => program.run(parsed)
  )
).pipe(
  Command.withDescription(
    "Run a job (training, evaluation) detached on a host: it survives the connection; its GPUs picked, its output followed to its exit and a failure classified"
  )
)
