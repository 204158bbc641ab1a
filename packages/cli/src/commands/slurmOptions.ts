/**
 * `launch`'s Slurm options: each overrides its field of the host's hosts.json `slurm` entry;
 * any of them given for a host without one makes the launch a Slurm job submitted from it.
 * Each value is checked as hosts.json checks it, and a bad one names its option.
 */
import { Options } from "@effect/cli"
import * as SlurmSettings from "@mlops/core/SlurmSettings"
import { Effect, Either, Option, Schema } from "effect"
import { UsageError } from "./shared.js"

const text = (name: string, description: string) =>
  Options.text(name).pipe(Options.optional, Options.withDescription(description))

/** @internal */
export const slurmOptions = {
  partition: text("partition", "Slurm: submit to this partition (overrides hosts.json `slurm.partition`)"),
  account: text("account", "Slurm: charge this account"),
  qos: text("qos", "Slurm: run with this QoS"),
  constraint: text("constraint", "Slurm: node features the job needs (e.g. a100|h100)"),
  time: text("time", "Slurm: the job's time limit (e.g. 4:00:00, 1-12:00:00)"),
  gres: text("gres", "Slurm: the GPU GRES name, optionally with a type (default gpu; e.g. gpu:a100)")
}

type Given = { readonly [K in keyof typeof slurmOptions]: Option.Option<string> }

const flagOf: Readonly<Record<keyof Given, string>> = {
  partition: "--partition",
  account: "--account",
  qos: "--qos",
  constraint: "--constraint",
  time: "--time",
  gres: "--gres"
}

/** The settings the options give (undefined when none is given), or the first bad one named. */
export const slurmOverrides = (
  given: Given
): Effect.Effect<SlurmSettings.SlurmSettings | undefined, UsageError> =>
  Effect.suspend(() => {
    const fields: Record<string, string> = {}
    for (const key of Object.keys(flagOf) as ReadonlyArray<keyof Given>) {
      const value = given[key]
      if (Option.isNone(value)) continue
      const checked = Schema.decodeUnknownEither(SlurmSettings.SlurmSettings)({ [key]: value.value })
      if (Either.isLeft(checked)) {
        return Effect.fail(
          new UsageError({
            message: `${flagOf[key]} expects ${SlurmSettings.expected[key]}, got ${JSON.stringify(value.value)}`
          })
        )
      }
      fields[key] = value.value
    }
    if (Object.keys(fields).length === 0) return Effect.succeed(undefined)
    return Effect.succeed(Schema.decodeUnknownSync(SlurmSettings.SlurmSettings)(fields))
  })
