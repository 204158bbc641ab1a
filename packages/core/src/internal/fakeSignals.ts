/**
 * Signals, exit statuses and program names as a fake host's processes see them: signal names
 * and numbers, `$?` of a finished child, and how a `Program` matches an argv.
 *
 * @internal
 */
import type { ExitStatus } from "../Connection.js"
import type { Program } from "../FakeProgram.js"

const SIGNAL_NUMBERS: ReadonlyArray<readonly [string, number]> = [
  ["HUP", 1],
  ["INT", 2],
  ["QUIT", 3],
  ["ILL", 4],
  ["TRAP", 5],
  ["ABRT", 6],
  ["BUS", 7],
  ["FPE", 8],
  ["KILL", 9],
  ["USR1", 10],
  ["SEGV", 11],
  ["USR2", 12],
  ["PIPE", 13],
  ["ALRM", 14],
  ["TERM", 15]
]

/** `SIGTERM`, `TERM`, `15` → `TERM` (`0` stays `0`). */
export const normalizeSignal = (signal: string): string => {
  const upper = signal.toUpperCase()
  const bare = upper.startsWith("SIG") ? upper.slice(3) : upper
  if (bare === "0") return "0"
  return SIGNAL_NUMBERS.find(([, n]) => String(n) === bare)?.[0] ?? bare
}

/** The number of a signal name (`TERM` → 15); undefined when unknown. */
export const signalNumber = (signal: string): number | undefined =>
  SIGNAL_NUMBERS.find(([name]) => name === normalizeSignal(signal))?.[1]

/** A signal name from its number (`15` → `TERM`). */
export const signalName = (n: number): string | undefined => SIGNAL_NUMBERS.find(([, k]) => k === n)?.[0]

/** `$?` of a finished child as a shell sees it: the code, or 128 + the signal's number. */
export const shellStatus = (status: ExitStatus): number =>
  status.signal !== null ? 128 + (signalNumber(status.signal) ?? 0) : (status.exitCode ?? 1)

/** The last path component (`ps -o comm`, the `ss` program name). */
export const basename = (path: string): string => path.slice(path.lastIndexOf("/") + 1)

export const matches = (program: Program, argv: ReadonlyArray<string>): boolean =>
  typeof program.match === "string"
    ? argv[0] === program.match || basename(argv[0] ?? "") === program.match
    : program.match(argv)
