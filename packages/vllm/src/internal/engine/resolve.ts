/**
 * The serving layer's `resolve` for vLLM: the pre-load checks on decoded args; errors become a
 * `LaunchRulesViolated` (each with vLLM's words, its fix as flags, the typed failure vLLM's
 * exception would be), warnings become log lines to show.
 *
 * @internal
 */
import { argumentFailureTag } from "@mlops/serve/ArgumentFailure"
import type { Resolution, ResolveInput } from "@mlops/serve/Engine"
import * as F from "@mlops/serve/Failures"
import { LaunchRulesViolated, type ViolationRecord } from "@mlops/serve/Violations"
import { Effect } from "effect"
import * as Catalogue from "../../Catalogue.js"
import { type Problem, verdict } from "../../Check.js"
import { wordsOf } from "../argv/encode.js"
import { valuesOf } from "./flags.js"

/** Set back to a None default: the flag is dropped rather than written `None`. */
const drops = (catalogue: Catalogue.Catalogue, dest: string, value: unknown): boolean =>
  value === null && catalogue.byDest.get(dest)?.default === null

/** A fix as `Fix.flags` (switches take null); flags going back to None are in `removeFlags`. */
const fixFlags = (catalogue: Catalogue.Catalogue, fix: Readonly<Record<string, unknown>>) => {
  const flags: Record<string, string | number | null> = {}
  for (const [dest, value] of Object.entries(fix)) {
    const flag = catalogue.byDest.get(dest)
    if (flag === undefined || drops(catalogue, dest, value)) continue
    const [spelling, ...rest] = wordsOf(flag, value)
    if (spelling === undefined) continue
    const text = rest.join(" ")
    flags[spelling] = rest.length === 0 ? null : typeof value === "number" ? value : text
  }
  return flags
}

const shown = (catalogue: Catalogue.Catalogue, fix: Readonly<Record<string, unknown>>): string =>
  Object.entries(fix)
    .flatMap(([dest, value]) => {
      const flag = catalogue.byDest.get(dest)
      if (flag === undefined) return []
      return [drops(catalogue, dest, value) ? `without ${flag.flag}` : wordsOf(flag, value).join(" ")]
    })
    .join(" ")

const failureOf = (catalogue: Catalogue.Catalogue, p: Problem): F.LaunchFailure => {
  const common = {
    evidence: [],
    process: "launcher",
    phase: "starting" as const,
    reason: p.vllmText,
    ruleId: p.ruleId,
    fix: {
      flags: fixFlags(catalogue, p.fix),
      ...(p.otherwise === undefined ? {} : { action: `or ${p.otherwise}` })
    }
  }
  const flags = p.dests.flatMap((d) => catalogue.byDest.get(d)?.flag ?? [])
  return argumentFailureTag("ValueError", p.vllmText) === "UnsupportedConfig"
    ? new F.UnsupportedConfig({
        ...common,
        kind: p.ruleId.startsWith("platform.") || p.ruleId.includes("gpu") ? "hardware" : "combination",
        flags
      })
    : new F.InvalidArgument({ ...common, flags })
}

const recordOf = (catalogue: Catalogue.Catalogue, p: Problem): ViolationRecord => ({
  _tag: argumentFailureTag("ValueError", p.vllmText),
  ruleId: p.ruleId,
  title: p.explanation,
  stage: p.raisedIn,
  errorType: "ValueError",
  message: p.explanation,
  engineMessage: p.vllmText,
  fields: p.dests,
  fix: { set: p.fix, alternatives: [] },
  ...(Object.keys(p.fix).length === 0 ? {} : { shownFix: shown(catalogue, p.fix) })
})

export const resolve = (input: ResolveInput): Effect.Effect<Resolution, LaunchRulesViolated> => {
  const chosen = Catalogue.choose(input.version)
  const catalogue = chosen?.catalogue ?? Catalogue.latest
  const values = valuesOf(input.decoded.args)
  const given = [...input.decoded.explicit].filter((d) => d !== "model")
  const result = verdict(
    { model: String(values.model ?? ""), values, given, duplicateKeys: [], modelFlag: false },
    { model: input.traits, gpus: input.gpus, env: input.env, catalogue }
  )
  if (result.errors.length === 0)
    return Effect.succeed({
      effective: values,
      logLines: result.warnings.map((w) => `WARNING (mlops estimate) ${w.explanation}: ${w.vllmText}`),
      // vLLM's own silent changes of values are not modelled
      adjustments: [],
      rulesVersion: catalogue.snapshot.name,
      verified: chosen !== undefined && chosen.warning === null
    })
  const fixedWords = [String(values.model ?? "")]
  for (const flag of catalogue.flags)
    if (
      flag.dest !== "model" &&
      result.fixedGiven.includes(flag.dest) &&
      !drops(catalogue, flag.dest, result.fixedValues[flag.dest])
    )
      fixedWords.push(...wordsOf(flag, result.fixedValues[flag.dest]))
  return Effect.fail(
    new LaunchRulesViolated({
      engine: "vLLM",
      version: input.version,
      violations: result.errors.map((p) => recordOf(catalogue, p)),
      fix: result.fix,
      ...(Object.keys(result.fix).length === 0 ? {} : { shownFix: shown(catalogue, result.fix) }),
      ...(result.resolves ? { fixedArgv: fixedWords } : {}),
      resolvesAfterFix: result.resolves,
      ...(input.traits === undefined ? {} : { architecture: input.traits.architecture }),
      failures: result.errors.map((p) => failureOf(catalogue, p))
    })
  )
}
