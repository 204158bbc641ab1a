/**
 * `/proc/<pid>/stat`, the one line Linux keeps per process: what RemoteProcess reads to tell
 * whether a process group is still the one it started (field 22, the start time in clock
 * ticks since boot, never changes for a pid and differs for a reused one), and what the fake
 * host serves for its processes.
 *
 * @internal
 */

/** Field 22 of a stat line; the command name (field 2) may hold spaces and parentheses. */
export const parseStartTime = (stat: string): string | undefined => {
  const close = stat.lastIndexOf(")")
  if (close < 0) return undefined
  const fields = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/)
  // fields[0] is field 3 (the state)
  const start = fields[19]
  return start !== undefined && /^\d+$/.test(start) ? start : undefined
}

/** Field 3, the state (`R`, `S`, `Z` for a zombie, ...). */
export const parseState = (stat: string): string | undefined => {
  const close = stat.lastIndexOf(")")
  return close < 0
    ? undefined
    : stat
        .slice(close + 1)
        .trim()
        .split(/\s+/)[0]
}

/** A stat line in the kernel's layout, for a fake process (start time in ms stands in for ticks). */
export const formatStat = (process: {
  readonly pid: number
  readonly ppid: number
  readonly pgid: number
  readonly comm: string
  readonly startTime: string
}): string =>
  [
    process.pid,
    `(${process.comm.slice(0, 15)})`,
    "S",
    process.ppid,
    process.pgid,
    process.pgid,
    0,
    -1,
    4194304,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    20,
    0,
    1,
    0,
    process.startTime,
    0,
    0
  ].join(" ") + "\n"
