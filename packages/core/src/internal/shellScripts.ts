/**
 * The POSIX shell wrappers the live ssh layer sends. Each is run as
 * `exec /bin/sh -c '<script>' <args...>` so it behaves the same whatever the user's login
 * shell is; values travel as positional arguments, never spliced into the script.
 *
 * @internal
 */
import { quote } from "../RemoteCommand.js"

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
 * With stdin (`$2` = byte count > 0): exactly that many bytes are read from the channel
 * first, spooled to an unlinked temp file, and given to the command as its stdin; the rest
 * of the channel stdin is the lifeline. Without: the command's stdin is /dev/null.
 *
 * The watcher reads the lifeline with the shell's own `read` (no extra process) and lets go
 * of it at EOF. When the command ends by itself the watcher is killed: sshd shares one socket
 * for the channel's stdin and stdout, so a leftover reader would hold the channel open.
 *
 * A command killed by a signal exits 128+n in a shell; the wrapper re-raises that signal on
 * itself so ssh reports `exit-signal` rather than a code. (A command that literally runs
 * `exit 143` is reported as TERM: a POSIX shell cannot tell the two apart.)
 */
const LIFELINE = `exec 3<&0
if [ "$2" -gt 0 ]; then
  t=$(mktemp) || exit 125
  head -c "$2" <&3 >"$t"
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
  ["exec", "/bin/sh", "-c", quote(script), "mlops", ...args.map(quote)].join(" ")

/** The exec request line for `line` under the lifeline; `stdinBytes` are sent first on the channel. */
export const lifeline = (line: string, stdinBytes: number): string =>
  shLine(LIFELINE, [line, String(stdinBytes)])

/**
 * Detached start. `$1` run dir, `$2` log path, `$3` command line. Prints two lines, the
 * command's pid and its process group id, once both files exist.
 *
 * The supervisor runs in a new session (`setsid -f`, not `&`: a shell's background jobs
 * start with SIGINT/SIGQUIT ignored, and ignores are inherited) under nohup with stdin from /dev/null and
 * output appended to the log, so nothing ties it to the ssh channel. It records `pgid` (its
 * own pid: it leads the new group), runs the command as a foreground child that records
 * `pid` and execs the command line, then writes `exit` as `code N` or `signal NAME`.
 * It TRAPS TERM/INT (a no-op handler, not an ignore: handlers reset to default in children,
 * ignores would be inherited across exec) so that `kill -TERM -- -pgid` ends the command but
 * leaves the supervisor alive long enough to record how it ended. The supervisor's own stderr
 * goes to /dev/null so the log holds only the command's output (no shell "Terminated").
 */
const SUPERVISOR = `trap ':' TERM INT
exec 3>&2 2>/dev/null
echo $$ >"$1/pgid.tmp" && mv -f "$1/pgid.tmp" "$1/pgid"
sh -c 'exec 2>&3 3>&-; echo $$ >"$1/pid.tmp" && mv -f "$1/pid.tmp" "$1/pid" && exec sh -c "$2"' mlops-command "$1" "$3"
s=$?
if [ $s -gt 128 ] && n=$(kill -l $s 2>/dev/null); then r="signal $n"; else r="code $s"; fi
echo "$r" >"$1/exit.tmp" && mv -f "$1/exit.tmp" "$1/exit"`

const SPAWN = `set -e
mkdir -p "$1"
d=$(cd "$1" && pwd -P)
rm -f "$d/pid" "$d/pgid" "$d/exit"
mkdir -p "$(dirname "$2")"
setsid -f nohup sh -c "$4" mlops-supervisor "$d" "$2" "$3" </dev/null >>"$2" 2>&1
i=0
while [ ! -s "$d/pid" ] || [ ! -s "$d/pgid" ]; do
  i=$((i+1))
  if [ $i -gt 200 ]; then echo "pid files did not appear in $d" >&2; exit 3; fi
  sleep 0.05
done
echo "$d"
echo "$2"
cat "$d/pid" "$d/pgid"`

/**
 * The exec request line that starts `line` detached. Paths may start with `~/`; they are
 * expanded by the remote shell. Output lines: the run dir and the log path (both expanded), the pid, the pgid.
 */
export const spawnDetached = (line: string, runDir: string, logPath: string): string =>
  `exec /bin/sh -c ${quote(SPAWN)} mlops-spawn ${remotePath(runDir)} ${remotePath(logPath)} ${quote(line)} ${quote(SUPERVISOR)}`

/** A path as a shell word, with a leading `~/` expanded to the remote `$HOME`. */
export const remotePath = (path: string): string => {
  if (path === "~") return `"$HOME"`
  if (path.startsWith("~/")) return `"$HOME"/${quote(path.slice(2))}`
  return quote(path)
}
