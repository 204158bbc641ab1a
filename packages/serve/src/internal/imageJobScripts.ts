/**
 * The shells of a job run from an image: the container in the foreground of the job's own
 * process group on the host (the placement's: it survives the connection, the host's waiter picks
 * its GPUs first), and the program's first step inside the container.
 *
 * Why the foreground: the host's queue and GPU claims stay the host's (a waiter inside a
 * container could not tell whether a job on the host still runs: another pid namespace), the
 * job's exit status is the tool's (`run` exits with the container's status), and its output
 * goes to the job's log as a command's would. The GPUs are given when the job starts, not when it
 * is submitted: `--gpus "device=<CUDA_VISIBLE_DEVICES>"` (podman: one CDI device each), so the
 * program inside sees exactly the picked GPUs, numbered from 0; no GPU asked, none given.
 *
 * A stop TERMs the job's group: the tool's client passes the TERM to the container, and the
 * shell asks the daemon to stop it (`stop -t STOP_GRACE_S`: KILL after that), then waits for
 * the client, so the container is gone before the placement's grace ends (10 s by default) and
 * its KILL. The container is removed when it ends (`--rm`): its output is in the log, its files
 * in the run directory.
 *
 * @internal
 */

/** Seconds the daemon gives the program after TERM before it KILLs the container. */
export const STOP_GRACE_S = 5

/**
 * `sh -c IN_FOREGROUND mlops-job-image <tool> <container> <secrets file or ""> <run options…>`
 * (the tool's `run` arguments without `run` and without GPUs).
 */
export const IN_FOREGROUND = `tool=$1 name=$2 secrets=$3
shift 3
if [ -n "$CUDA_VISIBLE_DEVICES" ]; then
  if [ "$tool" = podman ]; then
    old=$IFS
    IFS=,
    for id in $CUDA_VISIBLE_DEVICES; do set -- --device "nvidia.com/gpu=$id" "$@"; done
    IFS=$old
  else
    set -- --gpus "\\"device=$CUDA_VISIBLE_DEVICES\\"" "$@"
  fi
fi
trap '"$tool" stop -t ${STOP_GRACE_S} "$name" >/dev/null 2>&1' TERM INT HUP
"$tool" run "$@" &
client=$!
status=
while [ -z "$status" ]; do
  wait "$client"
  s=$?
  # over 128: the trap cut the wait short (or the client died of a signal): wait on while it runs
  if [ "$s" -gt 128 ] && kill -0 "$client" 2>/dev/null; then continue; fi
  # it ended just after the cut: its own status is still there to be asked for (127: it was taken)
  if [ "$s" -gt 128 ]; then
    wait "$client"
    t=$?
    [ "$t" = 127 ] || s=$t
  fi
  status=$s
done
# a container that never started never read its secrets
[ -z "$secrets" ] || rm -f "$secrets"
exit "$status"
`

/**
 * The container's command: `sh -c UNSEAL mlops-job <run dir> <secrets file or ""> <program…>`. The job's
 * secret variables come from a 0600 file in its run directory, read and removed before the
 * program starts (never in the tool's command line or the container's record); a HOME the user
 * cannot write (an image's `/` for a non-root user) becomes the run directory.
 */
export const UNSEAL = `dir=$1 secrets=$2
shift 2
if [ -n "$secrets" ]; then
  . "$secrets"
  # emptied by the shell itself (a slim image may have no rm), removed where it can be
  : >"$secrets"
  rm -f "$secrets" 2>/dev/null
fi
[ -w "\${HOME:-/}" ] || { HOME=$dir; export HOME; }
exec "$@"
`

/** `export NAME='value'` lines for `UNSEAL` to source (a single quote inside closed and reopened). */
export const exportsOf = (env: Readonly<Record<string, string>>): string =>
  Object.entries(env)
    .map(([name, value]) => `export ${name}='${value.replaceAll("'", "'\\''")}'\n`)
    .join("")
