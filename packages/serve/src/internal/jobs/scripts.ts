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
 * empty one means "not yet". Plain POSIX sh, within what the fake host's sh models (no
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
export const WAITER = `root=$1 dir=$2 want=$3 ids=$4 mode=$5
shift 5
alive() {
  [ -d "$1" ] || return 1
  [ -e "$1/exit" ] && return 1
  [ -s "$1/stopped" ] && return 1
  [ -e "$1/pid" ] || return 0
  kill -0 "$(cat "$1/pid")" 2>/dev/null
}
claims() {
  out=,
  for g in "$root"/*/gpus; do
    [ -s "$g" ] || continue
    d=\${g%/gpus}
    [ "$d" = "$dir" ] && continue
    alive "$d" && out="$out$(cat "$g"),"
  done
  printf '%s' "$out"
}
holders() {
  for g in "$root"/*/gpus; do
    [ -s "$g" ] || continue
    d=\${g%/gpus}
    [ "$d" = "$dir" ] && continue
    alive "$d" && printf 'claim %s %s\\n' "\${d##*/}" "$(cat "$g")"
  done
}
enough() {
  old=$IFS
  IFS=,
  set -- $1
  IFS=$old
  [ "$#" -ge "$want" ]
}
gpus() {
  nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv,noheader,nounits
}
pick() {
  taken=$(claims)
  gpus | {
    picked=
    while IFS=', ' read -r i used total; do
      [ -n "$i" ] || continue
      case "$ids" in -) ;; *) case ",$ids," in *",$i,"*) ;; *) continue ;; esac ;; esac
      case "$taken" in *",$i,"*) continue ;; esac
      [ "$used" -lt ${BUSY_MIB} ] || continue
      picked="$picked\${picked:+,}$i"
      enough "$picked" && break
    done
    enough "$picked" && printf '%s' "$picked"
  }
}
ticket=$(cat "$dir/ticket")
picks=
if [ "$want" -gt 0 ]; then
  # into the queue at once, whole: the client wrote it aside (0600); a rename is atomic
  mv -f "$ticket.new" "$ticket"
  while :; do
    head=
    for t in "$root"/.queue/*; do
      case "$t" in *.new) continue ;; esac
      [ -e "$t" ] || continue
      d=$(cat "$t")
      [ -n "$d" ] || continue
      if [ "$d" = "$dir" ] || alive "$d"; then head=$t; break; fi
      rm -f "$t"
    done
    if [ "$head" = "$ticket" ]; then
      picks=$(pick)
      [ -n "$picks" ] && break
    fi
    if [ "$mode" = now ]; then
      { [ "$head" = "$ticket" ] || printf 'behind %s\\n' "\${head##*/}"
        gpus | while IFS=', ' read -r i used total; do printf 'gpu %s %s %s\\n' "$i" "$used" "$total"; done
        holders; } > "$dir/refused"
      rm -f "$ticket"
      exit ${REFUSED_STATUS}
    fi
    [ -s "$dir/queued" ] || printf '%s\\n' "\${head##*/}" > "$dir/queued"
    sleep 2
  done
fi
printf '%s' "$picks" > "$dir/gpus"
rm -f "$ticket"
: > "$dir/queued"
CUDA_VISIBLE_DEVICES=$picks
export CUDA_VISIBLE_DEVICES
exec "$@"
`
