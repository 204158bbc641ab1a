/**
 * Reading what the Python environment probe (`pythonEnvScripts.PROBE`) printed, one line per
 * candidate looked at: on a host's environments and inside an image alike.
 *
 * @internal
 */
import { Option, Schema } from "effect"

export const ProbeLine = Schema.parseJson(
  Schema.Struct({
    executable: Schema.String,
    version: Schema.String,
    found: Schema.Boolean,
    packageVersion: Schema.NullOr(Schema.String),
    versionSource: Schema.NullOr(Schema.Literal("metadata", "version.py")),
    location: Schema.NullOr(Schema.String),
    fileHashes: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), {
      default: () => ({})
    })
  })
)
export type Probed = typeof ProbeLine.Type

/** One candidate looked at. */
export interface Tried {
  readonly how: string
  readonly path: string
  readonly outcome: "none" | "broken" | "missing" | "no-version" | "found"
  readonly probed?: Probed
}

export const parse = (
  stdout: string
): { readonly home: string | undefined; readonly tried: Array<Tried> } => {
  let home: string | undefined
  const tried: Array<Tried> = []
  for (const line of stdout.split("\n")) {
    const [kind, how = "", path = "", rest = ""] = line.split("\t")
    if (kind === "home") home = how
    else if (kind === "none" || kind === "broken") tried.push({ how, path, outcome: kind })
    else if (kind === "env") {
      const probed = Option.getOrUndefined(Schema.decodeUnknownOption(ProbeLine)(rest))
      if (probed === undefined) tried.push({ how, path, outcome: "broken" })
      else tried.push({ how, path, probed, outcome: outcomeOf(probed) })
    }
  }
  return { home, tried }
}

export const outcomeOf = (p: Probed): Tried["outcome"] =>
  !p.found ? "missing" : p.packageVersion === null ? "no-version" : "found"
