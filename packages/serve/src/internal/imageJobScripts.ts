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

/** The variable that carries the job's secret variables to `IN_FOREGROUND` (`exportsOf`'s text). */
export const SECRETS_ENV = "MLOPS_JOB_SECRETS"

/**
 * `sh -c IN_FOREGROUND mlops-job-image <tool> <container> <run dir> <run options…>` (the tool's
 * `run` arguments without `run` and without GPUs).
 *
 * - GPUs as the host numbers them: a scheduler's own binding (`SLURM_STEP_GPUS`, `SLURM_JOB_GPUS`:
 *   the daemon runs outside the job's cgroup, so a renumbered `CUDA_VISIBLE_DEVICES` would name the
 *   wrong ones), else what the host's waiter picked; none: `NVIDIA_VISIBLE_DEVICES=void`, so a
 *   daemon whose default runtime is NVIDIA's, or an image that asks for every GPU, gives none.
 * - Secrets: `$MLOPS_JOB_SECRETS` (never on a command line) goes into a 0600 file of the run
 *   directory made now, per node, which the container reads and empties (`UNSEAL`); the file goes
 *   when this shell ends. A job refused or stopped before it started never had one.
 * - A stop while it starts is remembered: nothing is started after it, and a container started
 *   meanwhile is removed at the end.
 * - Its own variables are `_mlops_*`: a job's `--env tool=…` reaches the program unchanged.
 */
export const IN_FOREGROUND = `_mlops_tool=$1 _mlops_name=$2 _mlops_dir=$3
shift 3
_mlops_gpus=\${SLURM_STEP_GPUS:-\${SLURM_JOB_GPUS:-$CUDA_VISIBLE_DEVICES}}
if [ -n "$_mlops_gpus" ]; then
  if [ "$_mlops_tool" = podman ]; then
    _mlops_ifs=$IFS
    IFS=,
    for _mlops_id in $_mlops_gpus; do set -- --device "nvidia.com/gpu=$_mlops_id" "$@"; done
    IFS=$_mlops_ifs
  else
    set -- --gpus "\\"device=$_mlops_gpus\\"" "$@"
  fi
else
  NVIDIA_VISIBLE_DEVICES=void
  export NVIDIA_VISIBLE_DEVICES
  set -- -e NVIDIA_VISIBLE_DEVICES "$@"
fi
_mlops_stopping=
_mlops_secrets=
trap '[ -z "$_mlops_secrets" ] || rm -f "$_mlops_secrets"' EXIT
trap '_mlops_stopping=1; "$_mlops_tool" stop -t ${STOP_GRACE_S} "$_mlops_name" >/dev/null 2>&1' TERM INT HUP
if [ -n "$${SECRETS_ENV}" ]; then
  _mlops_secrets=$(umask 077 && mktemp "$_mlops_dir/.secrets.XXXXXX") || exit 125
  printf '%s' "$${SECRETS_ENV}" >"$_mlops_secrets"
fi
unset ${SECRETS_ENV}
MLOPS_SECRETS_FILE=$_mlops_secrets
export MLOPS_SECRETS_FILE
[ -z "$_mlops_stopping" ] || exit 143
"$_mlops_tool" run -e MLOPS_SECRETS_FILE "$@" &
_mlops_client=$!
_mlops_status=
while [ -z "$_mlops_status" ]; do
  wait "$_mlops_client"
  _mlops_s=$?
  # over 128: the trap cut the wait short (or the client died of a signal): wait on while it runs
  if [ "$_mlops_s" -gt 128 ] && kill -0 "$_mlops_client" 2>/dev/null; then continue; fi
  # it ended just after the cut: its own status is still there to be asked for (127: it was taken)
  if [ "$_mlops_s" -gt 128 ]; then
    wait "$_mlops_client"
    _mlops_t=$?
    [ "$_mlops_t" = 127 ] || _mlops_s=$_mlops_t
  fi
  _mlops_status=$_mlops_s
done
# stopped while it started: a container the client made before it heard goes too
[ -z "$_mlops_stopping" ] || "$_mlops_tool" rm -f "$_mlops_name" >/dev/null 2>&1
exit "$_mlops_status"
`

/**
 * The container's command: `sh -c UNSEAL mlops-job <run dir> <program…>`. The job's secret
 * variables come from the file `MLOPS_SECRETS_FILE` names (see `IN_FOREGROUND`), read and emptied
 * (removed where the image has `rm`) before the program starts; a HOME the user cannot write (an
 * image's `/` for a non-root user) becomes the run directory.
 */
export const UNSEAL = `_mlops_dir=$1
shift
if [ -n "$MLOPS_SECRETS_FILE" ] && [ -f "$MLOPS_SECRETS_FILE" ]; then
  . "$MLOPS_SECRETS_FILE"
  # emptied by the shell itself (a slim image may have no rm), removed where it can be
  : >"$MLOPS_SECRETS_FILE"
  rm -f "$MLOPS_SECRETS_FILE" 2>/dev/null
fi
unset MLOPS_SECRETS_FILE
[ -w "\${HOME:-/}" ] || { HOME=$_mlops_dir; export HOME; }
unset _mlops_dir
exec "$@"
`

/** `export NAME='value'` lines for `UNSEAL` to source (a single quote inside closed and reopened). */
export const exportsOf = (env: Readonly<Record<string, string>>): string =>
  Object.entries(env)
    .map(([name, value]) => `export ${name}='${value.replaceAll("'", "'\\''")}'\n`)
    .join("")
