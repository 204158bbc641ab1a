/** The upgrade check (`mlops check --target-version`) for a person (`--json` prints the report as is). */
import type * as Upgrade from "@mlops/serve/Upgrade"
import { foundAt } from "./located.js"
import { bold, cyan, dim, green, red, type Style, yellow } from "./style.js"

const marks: Record<Upgrade.FlagDifference["kind"], "✗" | "~" | "!"> = {
  removed: "✗",
  renamed: "✗",
  ambiguous: "✗",
  type: "!",
  choices: "~",
  default: "~",
  deprecated: "!"
}

export const human = (style: Style, report: Upgrade.UpgradeReport): string => {
  const mark = (kind: Upgrade.FlagDifference["kind"]) => {
    const m = marks[kind]
    return m === "✗" ? red(style, m) : m === "!" ? yellow(style, m) : cyan(style, m)
  }
  const flagLines =
    report.flags.length === 0
      ? [`  ${green(style, "✓")} every flag means the same in ${report.to}`]
      : report.flags.map((d) => `  ${mark(d.kind)} ${d.message}`)
  const ruleLines = !report.rulesCompared
    ? [`  ${dim(style, "rules not compared")}`]
    : report.rules.length === 0
      ? [`  ${green(style, "✓")} the same rules apply to these flags`]
      : report.rules.map((r) => {
          const other = r.change === "starts" ? report.from : report.to
          const why = r.inRange
            ? `these flags do not trigger it in ${other}`
            : `${report.engine} ${other} does not have it in this form (it holds ${r.range})`
          return `  ${r.change === "starts" ? yellow(style, "+") : cyan(style, "-")} [${r.ruleId}] ${r.change === "starts" ? `new for these flags in ${report.to}` : `not in ${report.to}`} (${r.outcome}): ${r.message}; ${dim(style, why)}`
        })
  const target =
    report.target._tag === "Accepted"
      ? [`${green(style, "✓")} ${bold(style, `${report.engine} ${report.to} accepts this command`)}`]
      : [
          `${red(style, "✗")} ${report.target.error._tag === "LaunchRulesViolated" ? "" : `${bold(style, `${report.engine} ${report.to} would refuse this command:`)} `}${report.target.error.message} ${dim(style, `[${report.target.error._tag}]`)}`
        ]
  const installed =
    report.installed === undefined
      ? []
      : [
          `  from the host's ${report.engine} ${foundAt({ ...report.installed, engineVersion: report.from }, "--python")}`
        ]
  return [
    bold(style, `${report.engine} ${report.from} → ${report.to}`),
    ...installed,
    "flags:",
    ...flagLines,
    "rules:",
    ...ruleLines,
    ...report.notes.map((n) => `  ${yellow(style, "!")} ${n}`),
    ...target
  ].join("\n")
}
