/**
 * `launch`'s Slurm options: each overrides its field of the host's hosts.json `slurm` entry;
 * any of them given for a host without one makes the launch a Slurm job submitted from it
 * (`programs/slurmOverrides.ts` checks the values).
 */
import { Options } from "@effect/cli"

const text = (name: string, description: string) =>
  Options.text(name).pipe(Options.optional, Options.withDescription(description))

/** @internal */
export const slurmOptions = {
  partition: text("partition", "Slurm: submit to this partition (overrides hosts.json `slurm.partition`)"),
  account: text("account", "Slurm: charge this account"),
  qos: text("qos", "Slurm: run with this QoS"),
  constraint: text("constraint", "Slurm: node features the job needs (e.g. a100|h100)"),
  time: text("time", "Slurm: the job's time limit (e.g. 4:00:00, 1-12:00:00)"),
  gres: text("gres", "Slurm: the GPU GRES name, optionally with a type (default gpu; e.g. gpu:a100)"),
  nodes: text(
    "nodes",
    "Slurm: the nodes the job spans, one rank of the server on each (default 1; --tp counts every node's GPUs)"
  )
}
