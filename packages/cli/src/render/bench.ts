/** A benchmark's figures as a table, and what moved from a baseline, for a person. */
import type * as Bench from "@mlops/serve/Bench"
import { bold, dim, green, red, type Style } from "./style.js"

const ms = (value: number | undefined) =>
  value === undefined ? "-" : value >= 100 ? value.toFixed(0) : value.toFixed(1)

const pair = (a: number | undefined, b: number | undefined) => `${ms(a)} / ${ms(b)}`

/** One line per level: concurrency, requests, errors, tokens/s, requests/s, TTFT, ITL, end-to-end (p50 / p99), acceptance. */
export const benchTable = (style: Style, result: Bench.BenchResult): string => {
  const header = [
    "conc",
    "reqs",
    "err",
    "tok/s",
    "req/s",
    "TTFT p50/p99 ms",
    "ITL p50/p99 ms",
    "E2E p50/p99 ms",
    "accept"
  ]
  const rows = result.levels.map((l) => [
    String(l.concurrency),
    String(l.requests),
    String(l.errors),
    l.outputTokensPerS.toFixed(1),
    l.requestsPerS.toFixed(2),
    pair(l.ttftMs.p50, l.ttftMs.p99),
    pair(l.itlMs.p50, l.itlMs.p99),
    pair(l.e2eMs.p50, l.e2eMs.p99),
    l.acceptLength === undefined ? "-" : l.acceptLength.toFixed(2)
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padStart(widths[i]!)).join("  ")
  const version = result.engineVersion === null ? result.engine : `${result.engine} ${result.engineVersion}`
  const out = [
    `${bold(style, `${result.name} on ${result.host}`)} ${dim(style, `(${version}, ${result.model}, ${result.inputTokens} words in / ${result.outputTokens} tokens out)`)}`,
    dim(style, line(header)),
    ...rows.map(line)
  ]
  for (const level of result.levels)
    if (level.firstError !== undefined)
      out.push(
        red(
          style,
          `  concurrency ${level.concurrency}: ${level.errors} failed, the first: ${level.firstError}`
        )
      )
  for (const note of result.notes) out.push(dim(style, `  note: ${note}`))
  return out.join("\n")
}

/** What moved from a baseline: one line per figure, largest move first. */
export const changeLines = (
  style: Style,
  baseline: Bench.BenchResult,
  changes: ReadonlyArray<Bench.Change>
): string => {
  if (changes.length === 0)
    return dim(style, `vs the baseline of ${baseline.startedAt}: nothing moved by more than 5%`)
  return [
    `vs the baseline of ${baseline.startedAt}:`,
    ...changes.map((c) => {
      const pct = Number.isFinite(c.change)
        ? `${c.change > 0 ? "+" : ""}${(c.change * 100).toFixed(1)}%`
        : "new"
      const word = c.better ? green(style, "better") : red(style, "worse")
      return `  concurrency ${c.concurrency}: ${c.figure} ${ms(c.before)} → ${ms(c.after)} (${pct}, ${word})`
    })
  ].join("\n")
}
