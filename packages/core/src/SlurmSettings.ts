/**
 * How jobs are submitted on a Slurm cluster: the `"slurm"` entry of a login node in hosts.json
 * (`{"hosts": {"login1": {"slurm": {"partition": "gpu", "gres": "gpu:a100", "time": "8:00:00"}}}}`),
 * overridden field by field by CLI options. A host with a `slurm` entry is a cluster's login node.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import { parseTime } from "./internal/slurmParsers.js"

/** A Slurm time: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`. @category models */
export const SlurmTime = Schema.String.pipe(
  Schema.filter(
    (text) => typeof parseTime(text) === "number" || "a Slurm time such as 30, 4:00:00 or 1-12:00:00",
    {
      identifier: "SlurmTime"
    }
  )
)

/** A GRES for GPUs: its name, optionally with a type (`gpu`, `gpu:a100`). @category models */
export const GresName = Schema.String.pipe(
  Schema.filter(
    (text) => /^[A-Za-z0-9_.-]+(?::[A-Za-z0-9_.-]+)?$/.test(text) || "a GRES name such as gpu or gpu:a100",
    {
      identifier: "GresName"
    }
  )
)

const Word = Schema.String.pipe(
  Schema.filter((text) => /^[^\s'"\\]+$/.test(text) || "a single word without quotes or spaces", {
    identifier: "SlurmWord"
  })
)

/** @category models */
export const SlurmSettings = Schema.Struct({
  /** Default: the cluster's default partition. */
  partition: Schema.optional(Word),
  account: Schema.optional(Word),
  qos: Schema.optional(Word),
  /** A node feature expression (`a100`, `a100|h100`). */
  constraint: Schema.optional(
    Schema.String.pipe(Schema.filter((text) => !/[\n'"\\]/.test(text) || "no quotes or newlines"))
  ),
  /** The job's time limit; default: the partition's. */
  time: Schema.optional(SlurmTime),
  /** The GPU GRES, default `gpu`. */
  gres: Schema.optional(GresName),
  /**
   * Nodes the job spans (default 1): one rank of the server on each, the GPUs per node on every
   * one (the GRES count is per node, as Slurm counts it).
   */
  nodes: Schema.optional(Schema.Int.pipe(Schema.positive())),
  cpusPerTask: Schema.optional(Schema.Int.pipe(Schema.positive())),
  /** Memory per node (`64G`, `200000M`); default: the partition's. */
  mem: Schema.optional(Schema.String.pipe(Schema.pattern(/^\d+[KMGT]?$/))),
  /** The `scancel` grace before a stopped job is reported still active, in seconds (default 60). */
  stopTimeoutSeconds: Schema.optional(Schema.Number.pipe(Schema.positive()))
})
/** @category models */
export type SlurmSettings = typeof SlurmSettings.Type

/** What each field must be, for hosts.json messages. @category models */
export const expected: Readonly<Record<keyof SlurmSettings, string>> = {
  partition: "a partition name",
  account: "an account name",
  qos: "a QoS name",
  constraint: "a node feature expression",
  time: "a Slurm time such as 30, 4:00:00 or 1-12:00:00",
  gres: "a GRES name such as gpu or gpu:a100",
  nodes: "a positive integer (the nodes the job spans)",
  cpusPerTask: "a positive integer",
  mem: "a memory size such as 64G",
  stopTimeoutSeconds: "a positive number of seconds"
}

/** The default GPU GRES. @category constants */
export const defaultGres = "gpu"

/** `base` with every field `overrides` sets replaced (CLI options over hosts.json). @category combinators */
export const merge = (base: SlurmSettings, overrides: SlurmSettings): SlurmSettings => ({
  ...base,
  // optional fields are absent, never `undefined` (exactOptionalPropertyTypes): a spread keeps base's
  ...overrides
})

/** `gpu:a100` → `{ name: "gpu", type: "a100" }`. @category combinators */
export const splitGres = (gres: string): { readonly name: string; readonly type?: string } => {
  const [name, type] = gres.split(":")
  return type === undefined ? { name: name! } : { name: name!, type }
}

/**
 * The sbatch options for `gpus` GPUs on each node: `--gres=gpu[:type]:N --nodes=K` (one task
 * per node) plus every setting given. Options, not a command line: they go into the job
 * script's `#SBATCH` lines.
 *
 * @category combinators
 */
export const sbatchOptions = (settings: SlurmSettings, gpus: number): ReadonlyArray<string> => [
  ...(settings.partition === undefined ? [] : [`--partition=${settings.partition}`]),
  ...(settings.account === undefined ? [] : [`--account=${settings.account}`]),
  ...(settings.qos === undefined ? [] : [`--qos=${settings.qos}`]),
  ...(settings.constraint === undefined ? [] : [`--constraint=${settings.constraint}`]),
  ...(settings.time === undefined ? [] : [`--time=${settings.time}`]),
  `--nodes=${settings.nodes ?? 1}`,
  `--ntasks=${settings.nodes ?? 1}`,
  ...((settings.nodes ?? 1) > 1 ? ["--ntasks-per-node=1"] : []),
  ...(gpus > 0 ? [`--gres=${settings.gres ?? defaultGres}:${gpus}`] : []),
  ...(settings.cpusPerTask === undefined ? [] : [`--cpus-per-task=${settings.cpusPerTask}`]),
  ...(settings.mem === undefined ? [] : [`--mem=${settings.mem}`])
]
