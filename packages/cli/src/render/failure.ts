/**
 * A failure for a person: what failed, the evidence lines, the fix, and the fixed command
 * ready to paste. The same facts go into `--json` (`_tag`, `fix`, `fixedCommand`).
 */
import * as AutoFix from "@mlops/serve/AutoFix"
import type * as Engine from "@mlops/serve/Engine"
import * as Failures from "@mlops/serve/Failures"
import * as Secrets from "@mlops/serve/Secrets"
import * as Engines from "../Engines.js"
import * as Json from "./json.js"
import { bold, dim, red, type Style } from "./style.js"

export interface FailureContext {
  /** The host alias of the command, for the fixed command line. */
  readonly host?: string | undefined
  /** The SGLang flags as the user gave them (launch/check). */
  readonly argv?: ReadonlyArray<string> | undefined
  /**
   * The mlops words the user typed before `--` (`["check", "--model-config", "f.json"]`): the
   * fixed command repeats them. Default: `launch --host <host>`.
   */
  readonly prefix?: ReadonlyArray<string> | undefined
  /** How the engine's command line names flags (default: the first registered engine's newest). */
  readonly flags?: Engine.Flags | undefined
}

export interface FailureView {
  readonly tag: string
  readonly headline: string
  /** Extra lines (one per problem when there are several). */
  readonly details: ReadonlyArray<string>
  readonly evidence: ReadonlyArray<{ readonly line?: number; readonly text: string }>
  readonly fix?: string
  /** The SGLang flags with every known fix applied. */
  readonly fixedArgv?: ReadonlyArray<string>
  /** `mlops launch --host H -- <fixed flags>`. */
  readonly fixedCommand?: string
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const quote = (word: string): string =>
  /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`

/** The mlops words with every `--env` value shown as `***` (`--env K=V`, `--env=K=V`). */
export const redactPrefix = (prefix: ReadonlyArray<string>): ReadonlyArray<string> =>
  prefix.map((word, i) => {
    const env = word.startsWith("--env=") ? word.slice(6) : prefix[i - 1] === "--env" ? word : undefined
    if (env === undefined || !env.includes("=")) return word
    const name = env.slice(0, env.indexOf("="))
    return word.startsWith("--env=") ? `--env=${name}=${Secrets.REDACTED}` : `${name}=${Secrets.REDACTED}`
  })

/** `mlops <prefix> -- <flags>`, every word shell-quoted, secret values shown as `***`. */
export const commandLine = (
  prefix: ReadonlyArray<string>,
  argv: ReadonlyArray<string>,
  flags: Engine.Flags = Engines.defaultFlags
): string =>
  ["mlops", ...redactPrefix(prefix).map(quote), "--", ...Secrets.redactArgv(argv, flags).map(quote)].join(" ")

const evidenceOf = (u: Record<string, unknown>): FailureView["evidence"] =>
  Array.isArray(u.evidence)
    ? u.evidence.flatMap((e: unknown) =>
        isRecord(e) && typeof e.text === "string"
          ? [typeof e.line === "number" ? { line: e.line, text: e.text } : { text: e.text }]
          : typeof e === "string"
            ? [{ text: e }]
            : []
      )
    : []

/** A classifier fix (`{ flags?, removeFlags?, action? }`), not a rule violation's field map. */
const fixOf = (u: Record<string, unknown>): Failures.Fix | undefined =>
  isRecord(u.fix) && ("flags" in u.fix || "removeFlags" in u.fix || "action" in u.fix)
    ? (u.fix as Failures.Fix)
    : undefined

/** The explanation lines of a multi-problem failure (its message after the headline). */
const detailLines = (failure: unknown, record: Record<string, unknown>): Array<string> =>
  (Array.isArray(record.violations) || Array.isArray(record.problems)) && failure instanceof Error
    ? failure.message
        .split("\n")
        .slice(1)
        .filter((line) => !line.startsWith("fixed command:"))
    : []

/** Understand any failure value well enough to explain it. */
export const view = (failure: unknown, context: FailureContext = {}): FailureView => {
  const record = isRecord(failure) ? failure : {}
  const tag =
    typeof record._tag === "string" ? record._tag : failure instanceof Error ? failure.name : "Error"
  const headline = failure instanceof Error ? failure.message.split("\n")[0]! : String(failure)
  const details = detailLines(failure, record)
  const fix = fixOf(record)
  const prefix =
    context.prefix !== undefined && context.prefix.length > 0
      ? context.prefix
      : ["launch", ...(context.host === undefined ? [] : ["--host", context.host])]
  const flags = context.flags ?? Engines.defaultFlags
  const argv = context.argv === undefined ? undefined : Secrets.redactArgv(context.argv, flags)
  const fixedArgv = Array.isArray(record.fixedArgv)
    ? Secrets.redactArgv(record.fixedArgv as ReadonlyArray<string>, flags)
    : fix !== undefined && (fix.flags !== undefined || fix.removeFlags !== undefined) && argv !== undefined
      ? AutoFix.applyFix(argv, fix, flags)
      : undefined
  const fixText =
    fix !== undefined ? Failures.renderFix(fix) : typeof record.fix === "string" ? record.fix : undefined
  return {
    tag,
    headline,
    details,
    evidence: evidenceOf(record),
    ...(fixText ? { fix: fixText } : {}),
    ...(fixedArgv ? { fixedArgv, fixedCommand: commandLine(prefix, fixedArgv, flags) } : {})
  }
}

/** The human rendering (several lines). */
export const human = (style: Style, failure: unknown, context: FailureContext = {}): string => {
  const v = view(failure, context)
  const fixLine = v.fix !== undefined && v.details.length === 0
  // the message ends with its fix (for logs and JSON); here the fix has its own line
  const said = fixLine ? ` Fix: ${v.fix}` : undefined
  const headline =
    said !== undefined && v.headline.endsWith(said) ? v.headline.slice(0, -said.length) : v.headline
  const lines = [`${red(style, "✗")} ${bold(style, headline)} ${dim(style, `[${v.tag}]`)}`]
  // a class read from the exception's structure, not a known wording: said, so it is weighed
  if (isRecord(failure) && failure.basis === "fallback")
    lines.push(`  ${dim(style, "(no known wording: classed from the exception's type, words and module)")}`)
  for (const detail of v.details) lines.push(...detail.split("\n").map((l) => `  ${l}`))
  if (v.evidence.length > 0) {
    lines.push("  evidence:")
    for (const e of v.evidence.slice(0, 12)) {
      lines.push(
        `    ${dim(style, e.line === undefined ? "|" : `${String(e.line).padStart(5)} |`)} ${e.text}`
      )
    }
  }
  if (fixLine) lines.push(`  fix: ${v.fix}`)
  if (v.fixedCommand) lines.push("", "  fixed command:", `    ${bold(style, v.fixedCommand)}`)
  return lines.join("\n")
}

/** The `--json` rendering: the failure's own fields plus `fixedArgv`/`fixedCommand` when known. */
export const json = (failure: unknown, context: FailureContext = {}): Record<string, unknown> => {
  const v = view(failure, context)
  const encoded = Json.encode(failure)
  const base = isRecord(encoded) ? encoded : { message: String(failure) }
  return {
    ...base,
    _tag: v.tag,
    ...(v.fix && !("fix" in base) ? { fix: v.fix } : {}),
    ...(v.fixedArgv ? { fixedArgv: v.fixedArgv, fixedCommand: v.fixedCommand } : {})
  }
}
