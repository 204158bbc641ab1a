/**
 * How output looks on this terminal: live rewriting only on a TTY, colour only on a TTY and
 * when `NO_COLOR` is unset (https://no-color.org). Tests run with the default (no TTY).
 */
import { Context } from "effect"

export interface Style {
  /** Rewrite the launch view in place (ANSI cursor movement). */
  readonly live: boolean
  readonly color: boolean
  /** The terminal's width, when known: a line longer than this takes several rows to rewind. */
  readonly columns?: number | undefined
}

const detect = (): Style => {
  const tty = process.stdout.isTTY === true
  const noColor = process.env.NO_COLOR !== undefined && process.env.NO_COLOR !== ""
  return { live: tty, color: tty && !noColor, ...(tty ? { columns: process.stdout.columns } : {}) }
}

/** The terminal style; override with `Effect.provideService(TerminalStyle, { ... })`. */
export class TerminalStyle extends Context.Reference<TerminalStyle>()("@mlops/cli/TerminalStyle", {
  defaultValue: detect
}) {}

const sgr = (open: number, close: number) => (style: Style, text: string) =>
  style.color ? `\x1b[${open}m${text}\x1b[${close}m` : text

export const bold = sgr(1, 22)
export const dim = sgr(2, 22)
export const red = sgr(31, 39)
export const green = sgr(32, 39)
export const yellow = sgr(33, 39)
export const cyan = sgr(36, 39)

/** Move the cursor to the start of the line `lines` above and clear everything below. */
export const rewind = (lines: number): string => (lines > 0 ? `\x1b[${lines}F\x1b[J` : "")

/** `1.2 s`, `850 ms`, `3 min 04 s`. */
export const duration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const minutes = Math.floor(ms / 60_000)
  const seconds = Math.round((ms % 60_000) / 1000)
  return `${minutes} min ${String(seconds).padStart(2, "0")} s`
}

/** Left-aligned columns separated by two spaces. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}
