/**
 * The Slurm placement on the command line: the spec `launch`'s Slurm options give
 * (`commands/slurmOptions.ts`), their settings over the host's hosts.json `slurm` entry; each
 * value is checked as hosts.json checks it, and a bad one names its option. Any of them given
 * makes the launch a Slurm job.
 */
import * as SlurmSettings from "@mlops/core/SlurmSettings"
import type { Spec } from "@mlops/serve/Placement"
import * as SlurmPlacement from "@mlops/serve/SlurmPlacement"
import { Effect, Either, Option, Schema } from "effect"
import { UsageError } from "../commands/shared.js"
import type { slurmOptions } from "../commands/slurmOptions.js"

type Given = { readonly [K in keyof typeof slurmOptions]: Option.Option<string> }

const flagOf: Readonly<Record<keyof Given, string>> = {
  partition: "--partition",
  account: "--account",
  qos: "--qos",
  constraint: "--constraint",
  time: "--time",
  gres: "--gres",
  nodes: "--nodes"
}

/** The option's text as the setting's value: a count is a number. */
const settingOf = (key: keyof Given, text: string): string | number =>
  key === "nodes" && /^\d+$/.test(text) ? Number(text) : text

/** The spec the options give (undefined when none is given), or the first bad one named. */
export const specOf = (given: Given): Effect.Effect<Spec | undefined, UsageError> =>
  Effect.suspend(() => {
    const fields: Record<string, string | number> = {}
    for (const key of Object.keys(flagOf) as ReadonlyArray<keyof Given>) {
      const value = given[key]
      if (Option.isNone(value)) continue
      const checked = Schema.decodeUnknownEither(SlurmSettings.SlurmSettings)({
        [key]: settingOf(key, value.value)
      })
      if (Either.isLeft(checked)) {
        return Effect.fail(
          new UsageError({
            message: `${flagOf[key]} expects ${SlurmSettings.expected[key]}, got ${JSON.stringify(value.value)}`
          })
        )
      }
      fields[key] = settingOf(key, value.value)
    }
    if (Object.keys(fields).length === 0) return Effect.succeed(undefined)
    return Effect.succeed(SlurmPlacement.spec(Schema.decodeUnknownSync(SlurmSettings.SlurmSettings)(fields)))
  })
