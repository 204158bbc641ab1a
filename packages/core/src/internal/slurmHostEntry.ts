/**
 * The `"slurm"` field of a hosts.json entry, checked field by field so a problem names
 * `slurm.<field>`, what it must be and what was found.
 *
 * @internal
 */
import { Either, Schema } from "effect"
import { expected, SlurmSettings } from "../SlurmSettings.js"

/** @internal */
export interface SlurmFieldProblem {
  readonly field: string
  readonly reason: string
  readonly fix: string
}

const FIELDS = Object.keys(expected) as ReadonlyArray<keyof typeof expected>

const shown = (value: unknown): string => {
  const text = JSON.stringify(value)
  return text === undefined ? String(value) : text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/**
 * The first problem of `value` as the `slurm` settings of host `alias`; `near` proposes a known
 * field for an unknown one.
 *
 * @internal
 */
export const slurmFieldProblem = (
  alias: string,
  value: unknown,
  near: (name: string, known: ReadonlyArray<string>) => string | undefined
): SlurmFieldProblem | undefined => {
  const example = `"slurm": {"partition": "gpu", "gres": "gpu", "time": "4:00:00"}`
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return {
      field: "slurm",
      reason: `host "${alias}", field "slurm": expected an object of Slurm settings, got ${shown(value)}`,
      fix: `e.g. ${example}`
    }
  for (const [field, fieldValue] of Object.entries(value)) {
    const known = FIELDS.find((name) => name === field)
    if (known === undefined) {
      const guess = near(field, FIELDS)
      return {
        field: `slurm.${field}`,
        reason: `host "${alias}": unknown field "slurm.${field}"`,
        fix: `${guess === undefined ? "" : `did you mean "slurm.${guess}"? `}(the Slurm fields are ${FIELDS.join(", ")})`
      }
    }
    const decoded = Schema.decodeUnknownEither(SlurmSettings)({ [known]: fieldValue })
    if (Either.isLeft(decoded))
      return {
        field: `slurm.${field}`,
        reason: `host "${alias}", field "slurm.${field}": expected ${expected[known]}, got ${shown(fieldValue)}`,
        fix: `set "slurm.${field}" of "${alias}" to ${expected[known]}`
      }
  }
  return undefined
}
