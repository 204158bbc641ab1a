/**
 * The shell a job runs on its host before its command: its place in the host's queue and its
 * GPUs. It runs inside the job's detached process group, so the queue lives on the host and a
 * job waiting for GPUs keeps waiting when the client goes away.
 *
 * The queue is a directory of tickets, `<jobs>/.queue/<15-digit epoch ms>-<name>`, each holding
 * its job's run directory: glob order is arrival order. The client writes a ticket aside
 * (`<ticket>.new`, never read as one) and the waiter renames it into place as its first step, so
 * only a running waiter's ticket is ever in the queue (a start that never happened holds nobody
 * up) and no ticket is seen half written. Only the first ticket whose job is still
 * alive picks GPUs, so two jobs never pick at once and no lock is needed: it writes its pick to
 * `gpus` before it drops its ticket, so the next one sees the claim.
 *
 * A GPU is free when no live job of the host claims it (a non-empty `gpus` file in a run directory
 * without `exit` or a `stopped` record) and it holds less than `BUSY_MIB` (a deployment, someone's notebook); the
 * free ones are taken in index order. A job that may not wait (`now`) and cannot start writes
 * what it found to `refused` and exits `REFUSED_STATUS`; one that waits says so in `queued`.
 *
 * The client creates `gpus`, `queued` and `refused` empty (0600) beforehand: the script only
 * rewrites them, so they keep that mode under the login umask the command runs with, and an
 * empty one means "not yet". Its own variables are `_mlops_*`: a job's `--env mode=…` reaches its
 * command unchanged. Plain POSIX sh, within what the fake host's sh models (no
 * arithmetic, no here-documents, no umask).
 *
 * @internal
 */

/** The exit status of a job refused for want of GPUs (`EX_TEMPFAIL`). */
export const REFUSED_STATUS = 75

/** MiB a GPU may show in use and still count as free (driver and display contexts). */
export const BUSY_MIB = 2048

/**
 * `sh -c WAITER mlops-job <jobs root> <run dir> <count> <ids|-> <wait|now> <command...>`.
 * `count` 0: no GPUs (CUDA_VISIBLE_DEVICES is set empty).
 */
export const WAITER = `_mlops_root=$1 _mlops_dir=$2 _mlops_want=$3 _mlops_ids=$4 _mlops_mode=$5
shift 5
alive() {
  [ -d "$1" ] || return 1
  [ -e "$1/exit" ] && return 1
  [ -s "$1/stopped" ] && return 1
  [ -e "$1/pid" ] || return 0
  kill -0 "$(cat "$1/pid")" 2>/dev/null
}
claims() {
  _mlops_out=,
  for _mlops_g in "$_mlops_root"/*/gpus; do
    [ -s "$_mlops_g" ] || continue
    _mlops_d=\${_mlops_g%/gpus}
    [ "$_mlops_d" = "$_mlops_dir" ] && continue
    alive "$_mlops_d" && _mlops_out="$_mlops_out$(cat "$_mlops_g"),"
  done
  printf '%s' "$_mlops_out"
}
holders() {
  for _mlops_g in "$_mlops_root"/*/gpus; do
    [ -s "$_mlops_g" ] || continue
    _mlops_d=\${_mlops_g%/gpus}
    [ "$_mlops_d" = "$_mlops_dir" ] && continue
    alive "$_mlops_d" && printf 'claim %s %s\\n' "\${_mlops_d##*/}" "$(cat "$_mlops_g")"
  done
}
enough() {
  _mlops_old=$IFS
  IFS=,
  set -- $1
  IFS=$_mlops_old
  [ "$#" -ge "$_mlops_want" ]
}
gpus() {
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits
}
pick() {
  _mlops_taken=$(claims)
  gpus | {
    _mlops_picked=
    while IFS=', ' read -r _mlops_i _mlops_used _mlops_total; do
      [ -n "$_mlops_i" ] || continue
      case "$_mlops_ids" in -) ;; *) case ",$_mlops_ids," in *",$_mlops_i,"*) ;; *) continue ;; esac ;; esac
      case "$_mlops_taken" in *",$_mlops_i,"*) continue ;; esac
      [ "$_mlops_used" -lt ${BUSY_MIB} ] || continue
      _mlops_picked="$_mlops_picked\${_mlops_picked:+,}$_mlops_i"
      enough "$_mlops_picked" && break
    done
    enough "$_mlops_picked" && printf '%s' "$_mlops_picked"
  }
}
_mlops_ticket=$(cat "$_mlops_dir/ticket")
_mlops_picks=
if [ "$_mlops_want" -gt 0 ]; then
  # into the queue at once, whole: the client wrote it aside (0600); a rename is atomic
  mv -f "$_mlops_ticket.new" "$_mlops_ticket"
  while :; do
    _mlops_head=
    for _mlops_t in "$_mlops_root"/.queue/*; do
      case "$_mlops_t" in *.new) continue ;; esac
      [ -e "$_mlops_t" ] || continue
      _mlops_d=$(cat "$_mlops_t")
      [ -n "$_mlops_d" ] || continue
      if [ "$_mlops_d" = "$_mlops_dir" ] || alive "$_mlops_d"; then _mlops_head=$_mlops_t; break; fi
      rm -f "$_mlops_t"
    done
    if [ "$_mlops_head" = "$_mlops_ticket" ]; then
      _mlops_picks=$(pick)
      [ -n "$_mlops_picks" ] && break
    fi
    if [ "$_mlops_mode" = now ]; then
      { [ "$_mlops_head" = "$_mlops_ticket" ] || printf 'behind %s\\n' "\${_mlops_head##*/}"
        gpus | while IFS=', ' read -r _mlops_i _mlops_used _mlops_total; do printf 'gpu %s %s %s\\n' "$_mlops_i" "$_mlops_used" "$_mlops_total"; done
        holders; } > "$_mlops_dir/refused"
      rm -f "$_mlops_ticket"
      exit ${REFUSED_STATUS}
    fi
    [ -s "$_mlops_dir/queued" ] || printf '%s\\n' "\${_mlops_head##*/}" > "$_mlops_dir/queued"
    sleep 2
  done
fi
printf '%s' "$_mlops_picks" > "$_mlops_dir/gpus"
rm -f "$_mlops_ticket"
: > "$_mlops_dir/queued"
CUDA_VISIBLE_DEVICES=$_mlops_picks
# the indices are nvidia-smi's (PCI bus order); CUDA's own default order may differ on mixed GPUs
[ -n "$CUDA_DEVICE_ORDER" ] || CUDA_DEVICE_ORDER=PCI_BUS_ID
export CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER
exec "$@"
`
