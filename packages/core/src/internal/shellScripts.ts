/**
 * The POSIX shell wrappers the live ssh layer sends. Each is run as
 * `exec /bin/sh -c '<script>' <args...>` so it behaves the same whatever the user's login
 * shell is; values travel as positional arguments, never spliced into the script, and
 * environment values travel on the channel's stdin, never as arguments (`ps` shows every
 * argument to every user of the host). The fake host recognises each script by its exact text
 * and runs a counterpart that does the same (`fakeWrappers.ts`).
 *
 * @internal
 */
import { quote, toWord } from "../RemotePath.js"
import { groupRunsFunction } from "./groupLiveness.js"

/** Signals a shell may re-raise on itself to report "killed by signal" upwards. */
const FATAL_SIGNALS = "HUP INT QUIT ILL TRAP ABRT BUS FPE KILL USR1 SEGV USR2 PIPE ALRM TERM"

/**
 * Runs `$1` (a rendered command line) in a process group of its own, with a lifeline: the
 * channel's stdin is held by a watcher, and when the client closes or EOFs the channel
 * (timeout, interrupt, dropped connection) the whole group gets TERM, then KILL. sshd frees
 * the session slot only when the remote process ends, so this is what makes interruption
 * release the slot. Closing a channel does not kill anything by itself and `signal` requests
 * are refused for root sessions.
 *
 * Which group: OpenSSH starts every session in a new session (`setsid`), so the wrapper
 * normally leads its own group already (checked in /proc, with no extra process). The command
 * then runs in the FOREGROUND of that group: no `setsid` and no second shell per command
 * (~1.5 ms), and SIGINT/SIGQUIT keep their default action (a shell starts background jobs
 * with both ignored, and the command would inherit that). The watcher ignores TERM so that it
 * outlives its own TERM to the group and can follow up with KILL. Otherwise (another server,
 * no /proc) the command runs under `setsid` in the background, as its own group.
 *
 * The channel's stdin carries, in order: `$2` bytes of environment script (`export NAME='v'`
 * lines, evaluated by the wrapper itself, so no value is ever a command-line argument), `$3`
 * bytes for the command's stdin (spooled to an unlinked temp file), then the lifeline. With
 * `$3` = 0 the command's stdin is /dev/null. `head -c` reads exactly the count it is given.
 *
 * The watcher reads the lifeline with the shell's own `read` (no extra process) and lets go
 * of it at EOF. When the command ends by itself the watcher is killed: sshd shares one socket
 * for the channel's stdin and stdout, so a leftover reader would hold the channel open.
 *
 * A command killed by a signal exits 128+n in a shell; the wrapper re-raises that signal on
 * itself so ssh reports `exit-signal` rather than a code. (A command that literally runs
 * `exit 143` is reported as TERM: a POSIX shell cannot tell the two apart.)
 */
export const LIFELINE = `exec 3<&0
if [ "$2" -gt 0 ]; then
  e=$(head -c "$2" <&3) && eval "$e" || exit 125
  unset e
fi
if [ "$3" -gt 0 ]; then
  t=$(mktemp) || exit 125
  head -c "$3" <&3 >"$t"
  exec 4<"$t"; rm -f "$t"
else
  exec 4</dev/null
fi
g=
read -r _ _ _ _ g _ 2>/dev/null </proc/$$/stat
if [ "$g" = "$$" ]; then
  (
    trap '' TERM
    exec 4<&-
    while read -r _; do :; done <&3
    exec 3<&-
    kill -s TERM -- -$$ 2>/dev/null || exit 0
    sleep 1
    kill -s KILL -- -$$ 2>/dev/null
  ) >/dev/null 2>&1 &
  w=$!
  exec 3<&-
  sh -c "$1" <&4 4<&-
  s=$?
else
  setsid sh -c "$1" <&4 3<&- 4<&- &
  p=$!
  exec 4<&-
  (
    while read -r _; do :; done <&3
    exec 3<&-
    kill -s TERM -- -$p 2>/dev/null || exit 0
    i=0
    while kill -s 0 -- -$p 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done
    kill -s KILL -- -$p 2>/dev/null
  ) >/dev/null 2>&1 &
  w=$!
  exec 3<&-
  wait $p
  s=$?
fi
kill -s KILL $w 2>/dev/null
if [ $s -gt 128 ]; then
  n=$(kill -l $s 2>/dev/null)
  case " ${FATAL_SIGNALS} " in
    *" $n "*) ulimit -c 0 2>/dev/null; trap - "$n"; kill -s "$n" $$ ;;
  esac
fi
exit $s`

const shLine = (script: string, args: ReadonlyArray<string>): string =>
  ["exec", "/bin/sh", "-c", quote(script), ...args].join(" ")

/**
 * The exec request line for `line` under the lifeline; the channel's stdin must carry
 * `envBytes` bytes of environment script, then `stdinBytes` bytes for the command.
 */
export const lifeline = (line: string, envBytes: number, stdinBytes: number): string =>
  shLine(LIFELINE, ["mlops", quote(line), String(envBytes), String(stdinBytes)])

/** How `spawnDetached` reports, besides success: exit codes and their first output word. */
export const SPAWN_LOCKED = 75
export const SPAWN_RUNNING = 76

/** `st PID`: field 22 of /proc/PID/stat (start time in clock ticks since boot), or nothing. */
const START_TIME_FUNCTION = `st() {
  read -r s </proc/"$1"/stat 2>/dev/null || return 0
  s=\${s##*) }
  set -f
  set -- $s
  printf '%s\\n' "\${20}"
}`

/**
 * The supervisor of a detached command. `$1` run dir, `$2` log path, `$3` command line,
 * `$4` the umask the command runs under.
 *
 * It runs in a new session (`setsid -f`, not `&`: a shell's background jobs start with
 * SIGINT/SIGQUIT ignored, and ignores are inherited) under nohup with stdin from /dev/null and
 * output appended to the log, so nothing ties it to the ssh channel. It records `start` (its
 * start time from /proc, empty without /proc) and `pgid` (its own pid: it leads the new
 * group), runs the command as a foreground child that records `pid` and execs the command
 * line (whose own `exec` makes the recorded pid the program's), then writes `exit` as
 * `code N` or `signal NAME`. Its own files are 0600 (umask 077); the command gets `$4`.
 * It TRAPS TERM/INT (a no-op handler, not an ignore: handlers reset to default in children,
 * ignores would be inherited across exec) so that `kill -TERM -- -pgid` ends the command but
 * leaves the supervisor alive long enough to record how it ended. The supervisor's own stderr
 * goes to /dev/null so the log holds only the command's output (no shell "Terminated").
 */
export const SUPERVISOR = `trap ':' TERM INT
exec 3>&2 2>/dev/null
umask 077
${START_TIME_FUNCTION}
s=$(st $$)
echo "$s" >"$1/start.tmp" && mv -f "$1/start.tmp" "$1/start"
echo $$ >"$1/pgid.tmp" && mv -f "$1/pgid.tmp" "$1/pgid"
sh -c 'exec 2>&3 3>&-; echo $$ >"$1/pid.tmp" && mv -f "$1/pid.tmp" "$1/pid" && umask "$3" && exec sh -c "$2"' mlops-command "$1" "$3" "$4"
s=$?
if [ $s -gt 128 ] && n=$(kill -l $s 2>/dev/null); then r="signal $n"; else r="code $s"; fi
echo "$r" >"$1/exit.tmp" && mv -f "$1/exit.tmp" "$1/exit"`

/**
 * Detached start, atomic per run directory. `$1` run dir, `$2` log path, `$3` command line,
 * `$4` the supervisor script, `$5` a token naming this spawn, `$6` the byte count of the
 * environment script on stdin. Not run under the lifeline: once started it runs to the end
 * whatever happens to the channel, and what it did is readable from the run directory.
 *
 * Everything it creates is 0600/0700 (umask 077; the command gets the login umask back). The
 * lock is `<runDir>/spawn.lock` (`mkdir` is atomic), holding the spawner's pid; it is removed
 * when the spawn ends, also on HUP/INT/TERM/PIPE. A held lock: prints `locked LOCKDIR PID`,
 * exit 75. A process from an earlier spawn still running in this directory (its `pgid` group
 * runs, no `exit` recorded, and the group leader's start time is the recorded one or the
 * leader is gone): prints `running PGID`, exit 76. Otherwise it evaluates the environment
 * (reading all of its stdin), clears the old records, moves an old log to `<log>.1`, writes
 * `token` (so a `token` holding this spawn's token means the supervisor was started or is
 * about to be), starts the supervisor, waits for its `pid`/`pgid` files, releases the lock,
 * and prints the run dir and the log path (both expanded), the pid, the pgid and the start
 * time (an empty line without /proc).
 */
export const SPAWN = `set -e
u=$(umask)
umask 077
${groupRunsFunction}
${START_TIME_FUNCTION}
mkdir -p "$1"
d=$(cd "$1" && pwd -P)
l=$d/spawn.lock
if ! mkdir "$l" 2>/dev/null; then
  echo "locked $l $(cat "$l/pid" 2>/dev/null || echo -)"
  exit ${SPAWN_LOCKED}
fi
trap 'rm -rf "$l"' EXIT
trap 'exit 129' HUP INT TERM PIPE
echo $$ >"$l/pid"
if [ -s "$d/pgid" ] && [ ! -s "$d/exit" ]; then
  g=$(cat "$d/pgid")
  c=$(st "$g")
  if group_runs "$g" && { [ -z "$c" ] || [ ! -s "$d/start" ] || [ "$c" = "$(cat "$d/start")" ]; }; then
    echo "running $g"
    exit ${SPAWN_RUNNING}
  fi
fi
if [ "$6" -gt 0 ]; then
  e=$(head -c "$6")
  eval "$e"
  unset e
fi
rm -f "$d/pid" "$d/pgid" "$d/exit" "$d/start" "$d/token" "$d/stopped"
mkdir -p "$(dirname "$2")"
if [ -e "$2" ]; then mv -f "$2" "$2.1"; fi
: >"$2"
printf '%s\\n' "$5" >"$d/token"
setsid -f nohup sh -c "$4" mlops-supervisor "$d" "$2" "$3" "$u" </dev/null >>"$2" 2>&1
i=0
while [ ! -s "$d/pid" ] || [ ! -s "$d/pgid" ]; do
  i=$((i+1))
  if [ $i -gt 200 ]; then echo "pid files did not appear in $d" >&2; exit 3; fi
  sleep 0.05
done
rm -rf "$l"
trap - EXIT
echo "$d"
echo "$2"
cat "$d/pid" "$d/pgid"
cat "$d/start"`

/**
 * The exec request line that starts `line` detached (see `SPAWN`). The channel's stdin must
 * carry exactly `envBytes` bytes of environment script, then EOF.
 */
export const spawnDetached = (
  line: string,
  runDir: string,
  logPath: string,
  token: string,
  envBytes: number
): string =>
  shLine(SPAWN, [
    "mlops-spawn",
    toWord(runDir),
    toWord(logPath),
    quote(line),
    quote(SUPERVISOR),
    quote(token),
    String(envBytes)
  ])
