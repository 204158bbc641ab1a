/**
 * The upgrade check for vLLM (`mlops check --engine vllm --target-version V`): one command's flags
 * as two versions read them (each version's snapshot: a flag the target removed, renamed or whose
 * choices or type changed), which of vLLM's checks start or stop applying to it (each carries the
 * releases that have it), and what the target makes of it. vLLM renames and removes flags often,
 * so a launch script meant to survive an upgrade is checked against the target first.
 *
 * @since 0.1.0
 */
import * as ArgvErrors from "@mlops/serve/ArgvErrors"
import * as ServeCheck from "@mlops/serve/Check"
import type { FlagDifference, RuleDifference, UpgradeReport } from "@mlops/serve/Upgrade"
import { Effect, Either } from "effect"
import * as Catalogue from "./Catalogue.js"
import { VllmEngine } from "./Engine.js"
import { inRelease } from "./Rule.js"
import * as Rules from "./Rules.js"

/** @category models */
export interface CompareRequest {
  /** The words after `vllm serve`. */
  readonly argv: ReadonlyArray<string>
  readonly from: string
  readonly to: string
  readonly modelConfig?: unknown
  readonly gpus?: ServeCheck.GpuFacts
  readonly env?: Readonly<Record<string, string>>
}

const show = (values: ReadonlyArray<unknown>) => values.map((v) => (v === null ? "None" : String(v)))

/** vLLM reads `--max_model_len` as `--max-model-len` (and `--x=1` as `--x 1`). */
const spellingOf = (word: string) => {
  const name = word.split("=")[0] ?? word
  return name.startsWith("--") ? `--${name.slice(2).replaceAll("_", "-")}` : name
}

/** What the flags the command writes become in `to`. */
const flagDifferences = (
  argv: ReadonlyArray<string>,
  from: Catalogue.Catalogue,
  to: Catalogue.Catalogue,
  toVersion: string
): ReadonlyArray<FlagDifference> => {
  const out: Array<FlagDifference> = []
  const seen = new Set<string>()
  for (const word of argv) {
    if (!word.startsWith("-")) continue
    const written = spellingOf(word)
    const before = from.bySpelling.get(written)
    if (before === undefined || seen.has(before.dest)) continue
    seen.add(before.dest)
    const after = to.byDest.get(before.dest) ?? to.bySpelling.get(before.flag)
    if (after === undefined) {
      out.push({
        flag: written,
        kind: "removed",
        message: `${written} was removed: vLLM ${toVersion} has no such flag`
      })
      continue
    }
    if (!to.bySpelling.has(written)) {
      out.push({
        flag: written,
        kind: "renamed",
        message: `${written} is spelled ${after.flag} in vLLM ${toVersion}`,
        replacement: after.flag
      })
      continue
    }
    if (before.arity !== after.arity || before.conversion !== after.conversion)
      out.push({
        flag: written,
        kind: "type",
        message: `${written} takes ${after.arity === "single" ? "" : `${after.arity} `}${after.conversion} in vLLM ${toVersion} (was ${before.arity === "single" ? "" : `${before.arity} `}${before.conversion})`
      })
    else if (JSON.stringify(before.choices) !== JSON.stringify(after.choices)) {
      const was = new Set(show(before.choices ?? []))
      const now = new Set(show(after.choices ?? []))
      const added = [...now].filter((c) => !was.has(c))
      const dropped = [...was].filter((c) => !now.has(c))
      out.push({
        flag: written,
        kind: "choices",
        message: `${written} choices in vLLM ${toVersion}: ${[...added.map((c) => `+${c}`), ...dropped.map((c) => `-${c}`)].join(" ") || "reordered"}`
      })
    }
  }
  return out
}

/** The ids of vLLM's checks that refuse the command in `version`, with their messages. */
const refusals = (o: CompareRequest, version: string) =>
  Effect.map(
    Effect.either(
      ServeCheck.offline(VllmEngine, {
        argv: o.argv,
        version,
        ...(o.modelConfig === undefined ? {} : { modelConfig: o.modelConfig }),
        ...(o.gpus === undefined ? {} : { gpus: o.gpus }),
        ...(o.env === undefined ? {} : { env: o.env })
      })
    ),
    (result) => ({
      result,
      fired: new Map(
        Either.isLeft(result) && result.left._tag === "LaunchRulesViolated"
          ? result.left.violations.map((v) => [v.ruleId, v.message] as const)
          : []
      )
    })
  )

/**
 * Offline: `from` and `to` as their snapshots have them (a version no snapshot is near is read
 * with the nearest one, noted).
 *
 * @category programs
 */
export const compare = Effect.fn("vllm.Upgrade.compare")(function* (o: CompareRequest) {
  const from = yield* Catalogue.forVersion(o.from)
  const to = yield* Catalogue.forVersion(o.to)
  const notes = [from.warning, to.warning].filter((w): w is string => w !== null)
  const before = yield* refusals(o, o.from)
  const after = yield* refusals(o, o.to)
  const describe = (ruleId: string, message: string, change: RuleDifference["change"]): RuleDifference => {
    const rule = Rules.all.find((r) => r.id === ruleId)
    const other = change === "starts" ? from.catalogue.snapshot.near : to.catalogue.snapshot.near
    return {
      ruleId,
      title: rule?.raisedIn ?? ruleId,
      change,
      outcome: "violation",
      message,
      range: rule === undefined ? "?" : `${rule.releases.from}–${rule.releases.until ?? "newest"}`,
      inRange: rule === undefined ? true : inRelease(rule, other)
    }
  }
  const rules = [
    ...[...after.fired].filter(([id]) => !before.fired.has(id)).map(([id, m]) => describe(id, m, "starts")),
    ...[...before.fired].filter(([id]) => !after.fired.has(id)).map(([id, m]) => describe(id, m, "stops"))
  ]
  const result = after.result
  let target: UpgradeReport["target"]
  if (Either.isRight(result)) target = { _tag: "Accepted", adjustments: result.right.adjustments }
  else if (result.left._tag === "LaunchRulesViolated" || ArgvErrors.isArgvError(result.left))
    target = { _tag: "Refused", error: result.left }
  else return yield* Effect.fail(result.left)
  return {
    engine: "vLLM",
    from: o.from,
    to: o.to,
    flags: flagDifferences(o.argv, from.catalogue, to.catalogue, o.to),
    rules,
    rulesCompared: true,
    notes,
    target
  } satisfies UpgradeReport
})
