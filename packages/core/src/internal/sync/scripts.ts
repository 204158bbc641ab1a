/**
 * The two POSIX sh scripts `Sync.push` runs on the host (as `sh -c SCRIPT sh ARGS...`: values
 * are positional arguments, never spliced into the script). They use `cat`, `mv`, `rm` and
 * `tar -x` (GNU tar or any tar reading ustar/pax from stdin) and the shell's own `read`, `[`
 * and `cd`, nothing else (no `find`, `stat` or `sha256sum`: hashes are computed on the client
 * and kept in the manifest).
 *
 * @internal
 */

/** The manifest of the last complete sync, in the target directory. */
export const MANIFEST = ".mlops-sync.jsonl"
/** The previous manifest while a sync is being applied (or after one was cut short). */
export const DIRTY = ".mlops-sync.dirty"
/** The next manifest: the archive's last member, renamed to MANIFEST once everything is in place. */
export const NEXT = ".mlops-sync.next"

/** The prefix of CHECK's answer line. */
export const ANSWER = "@mlops-sync "

/**
 * `$1` the target directory, `$2` the header line the client expects. Prints one line saying
 * what the host has (`@mlops-sync <what>`), then (for `manifest` and `dirty`) the manifest:
 * - `same`: MANIFEST's first line is `$2` (nothing changed since the last sync);
 * - `manifest` + MANIFEST: the last complete sync, with another header;
 * - `dirty` + DIRTY: a sync was cut short; only its list of paths can be trusted;
 * - `none`: the directory exists without a manifest; `absent`: it does not exist.
 * Exit 3 when the target exists and is not a directory.
 */
export const CHECK = `d=$1
if [ -e "$d" ] && [ ! -d "$d" ]; then
  echo "$d exists and is not a directory" >&2
  exit 3
fi
if [ ! -d "$d" ]; then
  echo '@mlops-sync absent'
  exit 0
fi
if [ -f "$d/${MANIFEST}" ]; then
  h=
  IFS= read -r h <"$d/${MANIFEST}"
  if [ "$h" = "$2" ]; then
    echo '@mlops-sync same'
    exit 0
  fi
  echo '@mlops-sync manifest'
  cat "$d/${MANIFEST}"
  exit
fi
if [ -f "$d/${DIRTY}" ]; then
  echo '@mlops-sync dirty'
  cat "$d/${DIRTY}"
  exit
fi
echo '@mlops-sync none'`

/**
 * One batch of a sync. `$1` the target directory (it exists), `$2` `1` for the first batch,
 * `$3` `1` for the last. stdin: for the first batch, the relative paths to remove before
 * anything is extracted (one per line, then an empty line: deleted locally, or changed kind),
 * then a tar archive.
 *
 * Order, so that an interruption anywhere is seen by the next sync: the first batch moves
 * MANIFEST to DIRTY before touching anything; the last batch's archive ends with NEXT, which
 * becomes MANIFEST only after everything else is in place. Only `tar` reads the script's stdin
 * (the others get /dev/null: `read` must see every byte before the archive). Exit codes name
 * the step: 3 cd,
 * 4 the manifest move, 5 a removal, 6 tar, 7 the final rename.
 */
export const APPLY = `cd "$1" || exit 3
if [ "$2" = 1 ]; then
  if [ -f ${MANIFEST} ]; then
    mv -f ${MANIFEST} ${DIRTY} </dev/null || exit 4
  fi
  while IFS= read -r p; do
    if [ -z "$p" ]; then
      break
    fi
    rm -rf "./$p" </dev/null || exit 5
  done
fi
tar -x -m -f - --no-same-owner || exit 6
if [ "$3" = 1 ]; then
  mv -f ${NEXT} ${MANIFEST} || exit 7
  rm -f ${DIRTY}
fi`

/** What an APPLY exit code means. */
export const applyStep = (code: number | null): string => {
  switch (code) {
    case 3:
      return "entering the target directory"
    case 4:
      return "setting the previous manifest aside"
    case 5:
      return "removing a path deleted locally"
    case 6:
      return "extracting the archive (tar)"
    case 7:
      return "renaming the new manifest into place"
    case 127:
      return "finding a tool (tar, mv or rm)"
    default:
      return "applying the changes"
  }
}
