/**
 * What "a process group still runs" means, in one place: some process whose pgid is the
 * group's and whose state is not a zombie (`Z`) or dead (`X`). Zombies hold no memory, GPU or
 * port, and an init that reaps orphans slowly (some VMs) or never (Docker without `--init`)
 * keeps them around, which `kill -s 0 -- -PGID` cannot tell from live processes.
 *
 * The table comes from `ps -A -o pgid= -o stat=`, which procps and busybox (desktop build)
 * both accept; two `-o` options because busybox prints a header unless every column is
 * renamed to empty. The same definition exists twice: parsed in TS (`groupRuns`) and as a
 * POSIX shell loop (`killAndConfirmScript`), both built from `NOT_RUNNING_STATES`.
 *
 * @internal
 */

/** The argv that prints the process table: one `PGID STAT` row per process. */
export const psArgv: readonly [string, ...Array<string>] = ["ps", "-A", "-o", "pgid=", "-o", "stat="]

/** First letters of `ps` states that do not count as running. */
export const NOT_RUNNING_STATES: ReadonlyArray<string> = ["Z", "X"]

const notRunning = new RegExp(`^[${NOT_RUNNING_STATES.join("")}]`)

/** One row of the table. */
export interface GroupRow {
  readonly pgid: number
  readonly stat: string
}

/** The `PGID STAT` rows; other lines (a header some `ps` print anyway) are skipped. */
export const parsePsTable = (output: string): ReadonlyArray<GroupRow> => {
  const rows: Array<GroupRow> = []
  for (const line of output.split("\n")) {
    const match = /^\s*(\d+)\s+(\S+)\s*$/.exec(line)
    if (match !== null) rows.push({ pgid: Number(match[1]), stat: match[2]! })
  }
  return rows
}

/** A state letter string (`S`, `R+`, `Ssl`, `Z`, `Z+`...) of a process that still runs. */
export const isRunningStat = (stat: string): boolean => !notRunning.test(stat)

/**
 * Whether some non-zombie member of `pgid` is in the table; `undefined` when the output has
 * no row at all (ps always lists itself, so that output is not a process table).
 */
export const groupRuns = (output: string, pgid: number): boolean | undefined => {
  const rows = parsePsTable(output)
  if (rows.length === 0) return undefined
  return rows.some((row) => row.pgid === pgid && isRunningStat(row.stat))
}

const casePattern = NOT_RUNNING_STATES.map((letter) => `${letter}*`).join("|")

/**
 * A POSIX shell function `group_runs PGID`: status 0 while some member of the group runs,
 * zombies aside; without a usable `ps`, any member (zombies included) counts, as `kill -s 0`
 * sees it. Pure shell besides `ps` (no awk): the table's words alternate pgid, stat.
 */
export const groupRunsFunction = `group_runs() {
  if t=$(${psArgv.join(" ")} 2>/dev/null); then
    r= g=
    for w in $t; do
      if [ -z "$g" ]; then g=$w; continue; fi
      case $w in ${casePattern}) ;; *) [ "$g" = "$1" ] && r=1 ;; esac
      g=
    done
    [ -n "$r" ]
  else
    kill -s 0 -- -"$1" 2>/dev/null
  fi
}`

/**
 * `$1` pgid, `$2` how many 50 ms polls to allow. SIGKILL to the group, then poll until no
 * member runs (\`group_runs\`). Exit 0: nothing of the group runs (at once when it was already
 * empty); 3: some member still runs after the polls.
 */
export const killAndConfirmScript = `${groupRunsFunction}
kill -s KILL -- -"$1" 2>/dev/null || exit 0
i=0
while group_runs "$1"; do
  i=$((i + 1))
  [ "$i" -lt "$2" ] || exit 3
  sleep 0.05
done`
