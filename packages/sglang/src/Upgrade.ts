/**
 * The upgrade check: what happens to a command line when SGLang goes from one version to
 * another. For each flag the user wrote: removed, renamed, now ambiguous as written, or changed
 * type, choices, default or deprecation; for the rules: which ones start or stop applying to
 * these flags (compared only when both versions' rule sets are verified); and whether the
 * target version accepts the command at all. Needs no host.
 *
 * @since 0.1.0
 */

import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as ArgvErrors from "@mlops/serve/ArgvErrors"
import { offlineGpus, traitsOf } from "@mlops/serve/Check"
import type * as ModelTraits from "@mlops/serve/ModelTraits"
import * as Placements from "@mlops/serve/Placements"
import * as Preflight from "@mlops/serve/Preflight"
import type { Spec as RuntimeSpec } from "@mlops/serve/Runtime"
import type { FlagDifference, RuleDifference, UpgradeReport } from "@mlops/serve/Upgrade"
import type * as Violations from "@mlops/serve/Violations"
import { Effect, Either } from "effect"
import * as Argv from "./Argv.js"
import * as Catalogue from "./Catalogue.js"
import type { GpuFacts } from "./Check.js"
import * as Flags from "./Flags.js"
import * as Installed from "./Installed.js"
import { lookupOption } from "./internal/argv/decode.js"
import { sameValue } from "./internal/argv/encode.js"
import { modelPathOf } from "./internal/launch/argvFacts.js"
import * as Resolve from "./Resolve.js"
import * as Rules from "./Rules.js"
import * as VersionRange from "./VersionRange.js"

export type { FlagDifference, RuleDifference, UpgradeReport } from "@mlops/serve/Upgrade"

const show = (value: unknown) => (value === null ? "None" : JSON.stringify(value))

const listed = (versions: ReadonlyArray<string>) =>
  versions.length === 0 ? "no shipped release" : Flags.formatReleases(versions)

/** The flag a release's deprecation warning pointed `spelled` to, when `to` has it. */
const announcedSuccessor = (spelled: string, to: Catalogue.Catalogue): Catalogue.FlagSpec | undefined => {
  for (const version of [...Flags.releasesWith(spelled)].reverse()) {
    const said = Catalogue.get(version)?.byFlag.get(spelled)?.replacedBy?.split("=")[0]
    const successor = said === undefined ? undefined : to.byFlag.get(said)
    if (successor !== undefined) return successor
  }
  return undefined
}

/** The flags of `argv` as `from` reads them, each compared with `to`. */
const flagDifferences = (
  argv: ReadonlyArray<string>,
  from: Catalogue.Catalogue,
  to: Catalogue.Catalogue
): ReadonlyArray<FlagDifference> => {
  const out: Array<FlagDifference> = []
  const seen = new Set<string>()
  for (const word of argv) {
    if (!word.startsWith("--") || word === "--") continue
    const spelled = word.split("=")[0]!
    const before = lookupOption(from, spelled)
    if (before?._tag !== "Flag" || seen.has(spelled)) continue
    seen.add(spelled)
    const old = before.spec
    const after = lookupOption(to, spelled)
    if (after?._tag === "AmbiguousFlag") {
      out.push({
        flag: spelled,
        kind: "ambiguous",
        message: `${spelled} abbreviates ${after.candidates.join(", ")} in ${to.version}: write ${old.flag}`,
        replacement: old.flag
      })
      continue
    }
    if (after?._tag !== "Flag") {
      const successor =
        (old.field === null ? undefined : to.byField.get(old.field)) ?? announcedSuccessor(spelled, to)
      const history = `accepted by ${listed(Flags.releasesWith(spelled))}`
      out.push(
        successor !== undefined
          ? {
              flag: spelled,
              kind: "renamed",
              message: `${spelled} is not accepted by ${to.version} (${history}); it is ${successor.flag} there`,
              replacement: successor.flag
            }
          : {
              flag: spelled,
              kind: "removed",
              message: `${spelled} was removed: ${history}, not ${to.version}`
            }
      )
      continue
    }
    const now = after.spec
    if (now.field !== old.field && now.flag !== spelled) {
      out.push({
        flag: spelled,
        kind: "renamed",
        message: `${spelled} is an alias of ${now.flag} in ${to.version} (it sets ${now.field ?? "nothing"}, was ${old.field ?? "nothing"})`,
        replacement: now.flag
      })
    }
    if (now.type !== old.type || now.nargs !== old.nargs) {
      out.push({
        flag: spelled,
        kind: "type",
        message: `${spelled} takes ${now.type}${now.nargs ?? ""} in ${to.version} (was ${old.type}${old.nargs ?? ""})`
      })
    }
    if (!sameValue(now.choices, old.choices)) {
      const was = (old.choices ?? []).map(String)
      const is = (now.choices ?? []).map(String)
      const message =
        now.choices === null
          ? `${spelled} takes any value in ${to.version} (was one of ${was.join(", ")})`
          : old.choices === null
            ? `${spelled} takes one of ${is.join(", ")} in ${to.version} (was any value)`
            : `${spelled} choices in ${to.version}: ${[
                ...is.filter((c) => !was.includes(c)).map((c) => `+${c}`),
                ...was.filter((c) => !is.includes(c)).map((c) => `-${c}`)
              ].join(", ")}`
      out.push({ flag: spelled, kind: "choices", message })
    }
    if (!sameValue(now.default, old.default)) {
      out.push({
        flag: spelled,
        kind: "default",
        message: `${spelled} default ${show(old.default)} → ${show(now.default)} (you set it, so only the default changes)`
      })
    }
    if (now.deprecated && !old.deprecated) {
      out.push({
        flag: spelled,
        kind: "deprecated",
        message: `${spelled} is deprecated in ${to.version}${now.replacedBy === undefined ? "" : `: use ${now.replacedBy}`}`,
        ...(now.replacedBy === undefined ? {} : { replacement: now.replacedBy })
      })
    }
  }
  return out
}

interface Fired {
  readonly ruleId: string
  readonly title: string
  readonly outcome: RuleDifference["outcome"]
  readonly message: string
}

const fired = (
  result: Either.Either<Resolve.Resolved, Violations.LaunchRulesViolated>
): ReadonlyArray<Fired> =>
  Either.match(result, {
    onLeft: (error) =>
      error.violations.map((v) => ({
        ruleId: v.ruleId,
        title: v.title,
        outcome: "violation" as const,
        message: v.message
      })),
    onRight: (resolved) => [
      ...resolved.adjustments.map((a) => ({
        ruleId: a.ruleId,
        title: a.title,
        outcome: "adjustment" as const,
        message: a.message
      })),
      ...resolved.warnings.map((w) => ({
        ruleId: w.ruleId,
        title: w.title,
        outcome: "warning" as const,
        message: w.message
      }))
    ]
  })

/**
 * Compare `argv` between SGLang `from` and `to`. Fails only when `from` does not accept the
 * command (then there is nothing to upgrade) or a version is not a version.
 *
 * @category programs
 */
export const compare = Effect.fn("Upgrade.compare")(function* (o: {
  readonly argv: ReadonlyArray<string>
  readonly from: string
  readonly to: string
  /** config.json (object or text); undefined: model-dependent rules are skipped. */
  readonly modelConfig?: unknown
  /** The model's traits when already read (a host's config.json). */
  readonly traits?: ModelTraits.ModelTraits
  readonly gpus?: GpuFacts
  readonly env?: Readonly<Record<string, string>>
  /** The flags of `from` when known better than a shipped catalogue (read from a host). */
  readonly fromCatalogue?: Catalogue.Catalogue
  /** The flags of `to`, likewise. */
  readonly toCatalogue?: Catalogue.Catalogue
}) {
  const to: Catalogue.CatalogueMatch =
    o.toCatalogue === undefined
      ? yield* Catalogue.forVersion(o.to)
      : { catalogue: o.toCatalogue, requested: o.to, exact: true, warning: null }
  const from: Catalogue.CatalogueMatch =
    o.fromCatalogue === undefined
      ? yield* Catalogue.forVersion(o.from)
      : { catalogue: o.fromCatalogue, requested: o.from, exact: true, warning: null }
  const decodedFrom = yield* Argv.decodeArgv(o.argv, from.catalogue)
  const decodedTo = yield* Effect.either(Argv.decodeArgv(o.argv, to.catalogue))
  const traits = o.traits ?? (yield* traitsOf(o.modelConfig))
  const context = (version: string): Resolve.ResolveContext => ({
    traits,
    gpus: offlineGpus(o.gpus),
    env: o.env ?? {},
    version
  })
  const rulesFrom = Rules.forVersion(o.from)
  const rulesTo = Rules.forVersion(o.to)
  const before = Resolve.resolveEither(decodedFrom.args, decodedFrom.explicit, context(o.from))
  const after = Either.isRight(decodedTo)
    ? Resolve.resolveEither(decodedTo.right.args, decodedTo.right.explicit, context(o.to))
    : undefined
  const rulesCompared = rulesFrom.verified && rulesTo.verified && after !== undefined
  const rules: Array<RuleDifference> = []
  if (rulesCompared && after !== undefined) {
    // a refused side lists its violations only, so then only violations are compared
    const bothResolve = Either.isRight(before) && Either.isRight(after)
    const comparable = (f: Fired) => bothResolve || f.outcome === "violation"
    const a = fired(before).filter(comparable)
    const b = fired(after).filter(comparable)
    const key = (f: Fired) => `${f.ruleId}\u0000${f.outcome}`
    const inA = new Set(a.map(key))
    const inB = new Set(b.map(key))
    const describe = (f: Fired, change: RuleDifference["change"], other: string): RuleDifference => {
      const rule = Rules.all.find((r) => r.id === f.ruleId)
      return {
        ...f,
        change,
        range: rule === undefined ? "" : VersionRange.format(rule.versions),
        inRange: rule !== undefined && VersionRange.contains(rule.versions, other)
      }
    }
    const order = { violation: 0, adjustment: 1, warning: 2 } as const
    for (const f of b) if (!inA.has(key(f))) rules.push(describe(f, "starts", o.from))
    for (const f of a) if (!inB.has(key(f))) rules.push(describe(f, "stops", o.to))
    rules.sort((x, y) => order[x.outcome] - order[y.outcome])
  }
  const notes = [
    ...[from.warning, to.warning].filter((w): w is string => w !== null),
    ...[rulesFrom, rulesTo]
      .filter((set) => !set.verified)
      .map(
        (set) => `mlops has not verified its launch rules for SGLang ${set.version}: rules are not compared`
      )
  ]
  const targetOf = (): UpgradeReport["target"] => {
    if (Either.isLeft(decodedTo)) return { _tag: "Refused", error: decodedTo.left }
    if (after === undefined || Either.isRight(after)) {
      const adjustments = after === undefined ? [] : after.right.adjustments
      return { _tag: "Accepted", adjustments: adjustments.map((x) => x.engineMessage ?? x.message) }
    }
    return { _tag: "Refused", error: after.left }
  }
  const target = targetOf()
  return {
    from: rulesFrom.version,
    to: rulesTo.version,
    engine: "SGLang",
    flags: flagDifferences(o.argv, from.catalogue, to.catalogue),
    rules,
    rulesCompared,
    notes,
    target
  } satisfies UpgradeReport
})

/**
 * The upgrade check from the SGLang a host has: its version and flags (the host's own parser
 * when mlops does not ship that version) against `to`.
 *
 * @category programs
 */
export const fromHost = Effect.fn("Upgrade.fromHost")(function* (o: {
  readonly host: string
  readonly argv: ReadonlyArray<string>
  readonly to: string
  /** How to find the host's SGLang (what `--python` gives); default as a launch's. */
  readonly runtime?: RuntimeSpec
  readonly env?: Readonly<Record<string, string>>
}) {
  const installed = yield* Installed.onHost({
    host: o.host,
    ...(o.runtime === undefined ? {} : { runtime: o.runtime }),
    ...(o.env === undefined ? {} : { env: o.env })
  })
  const conn = yield* Effect.flatMap(ConnectionPool, (pool) => pool.get(o.host))
  // the GPUs are the host's only where a launch would run the server on it
  const placement = yield* Placements.resolve(conn.host, installed.form)
  const [gpus, traits] = yield* Effect.all(
    [
      placement.onHost ? Probes.gpus(conn) : Effect.succeed([]),
      Preflight.readModelConfig(conn, modelPathOf(o.argv))
    ],
    { concurrency: "unbounded" }
  )
  const first = gpus[0]
  const warning = installed.warning
  const report = yield* compare({
    ...o,
    from: installed.version,
    fromCatalogue: installed.catalogue,
    ...(traits === undefined ? {} : { traits }),
    ...(first === undefined
      ? {}
      : {
          gpus: {
            count: gpus.length,
            computeCapability: first.computeCapability ?? "8.0",
            memoryGiB: first.memoryTotalMiB / 1024
          }
        })
  }).pipe(
    // flags that do not parse with a stand-in catalogue: the error says why it stood in
    Effect.mapError((error) =>
      warning !== null && error instanceof Error && ArgvErrors.isArgvError(error)
        ? ArgvErrors.noted(error, warning)
        : error
    )
  )
  const { interpreter, setting, source, versionSource } = installed.located
  return {
    ...report,
    installed: { interpreter, setting, source, versionSource },
    notes: warning === null ? report.notes : [warning, ...report.notes]
  } satisfies UpgradeReport
})
