/**
 * The two scripts of Python environment discovery: a POSIX shell loop over the candidate
 * environments (one round trip), and the Python probe it runs in each (metadata and files
 * only: the engine is never imported, its import takes seconds and may fail for unrelated
 * reasons).
 *
 * @internal
 */

/**
 * `python -c PROBE <package>` prints one JSON line: the interpreter, its version, whether the
 * package is importable (`find_spec` of a top-level package does not execute it), where it
 * lives, and its version: from the installed distribution's metadata when that distribution is
 * what Python would import, else from `<package>/version.py` (a source checkout on
 * PYTHONPATH, an editable install), and the sha256 of each FILE of the package (what tells
 * one install of a version from another, for the flag catalogue read from the host).
 */
export const PROBE = `import hashlib, json, os, re, sys
p = sys.argv[1]
out = {"executable": sys.executable, "version": sys.version.split()[0], "found": False,
       "packageVersion": None, "versionSource": None, "location": None, "fileHashes": {}}
try:
    import importlib.util
    spec = importlib.util.find_spec(p)
except Exception:
    spec = None
if spec is not None:
    out["found"] = True
    if spec.submodule_search_locations:
        loc = list(spec.submodule_search_locations)[0]
    else:
        loc = os.path.dirname(spec.origin or "")
    out["location"] = loc
    try:
        import importlib.metadata as md
        dist = md.distribution(p)
        if os.path.realpath(str(dist.locate_file(p))) == os.path.realpath(loc):
            out["packageVersion"], out["versionSource"] = dist.version, "metadata"
    except Exception:
        pass
    if out["packageVersion"] is None:
        try:
            with open(os.path.join(loc, "version.py")) as f:
                m = re.search(r"__version__\\s*=\\s*['\\"]([^'\\"]+)['\\"]", f.read())
            if m:
                out["packageVersion"], out["versionSource"] = m.group(1), "version.py"
        except Exception:
            pass
    for name in sys.argv[2:]:
        try:
            with open(os.path.join(loc, name), "rb") as f:
                out["fileHashes"][name] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            pass
print(json.dumps(out))`

/** Last: the interpreter of the engine's entry point on PATH (its `#!` line, through `env`), then exit 3 (none found). */
const FROM_ENTRY_POINT = `if s=$(command -v "$entry" 2>/dev/null) && [ -r "$s" ]; then
  IFS= read -r line <"$s" || line=
  case $line in
    '#!'*)
      interp=\${line#'#!'}
      set -- $interp
      if [ "\${1##*/}" = env ] && [ -n "\${2:-}" ]; then interp=$(command -v "$2" 2>/dev/null) || interp=$2
      else interp=$1; fi
      try_python "$interp" entry-point ;;
  esac
fi
exit 3`

/**
 * `sh -c DISCOVER mlops-python <probe> <package> <mode> <configured> <entry point> [files...]`: tries candidates in
 * order and prints one tab-separated line per candidate looked at:
 *
 *   `env <how> <interpreter> <probe json>` — an interpreter that answered the probe,
 *   `none <how> <path>` — no interpreter there,
 *   `broken <how> <interpreter> <exit status>` — it exists but the probe failed.
 *
 * It stops (exit 0) at the first environment that has the package. Mode `configured` tries
 * the configured path first, then the usual places (to suggest one when the configured one
 * lacks the package); mode `discover` only the usual places: `~/ml-env`, `~/<package>-env`, `~/.venv`, `~/venv`,
 * the active conda env, conda/mamba environments and bases, `python3` on PATH, and the
 * interpreter of the engine's entry point (`sglang`, `vllm`) on PATH. Each interpreter is tried once.
 */
export const DISCOVER = `probe=$1; pkg=$2; mode=$3; configured=$4; entry=$5
shift 5
files=$*
seen=' '
try_python() {
  case $seen in *" $1 "*) return 1 ;; esac
  seen="$seen$1 "
  if [ ! -x "$1" ] || [ -d "$1" ]; then printf 'none\\t%s\\t%s\\n' "$2" "$1"; return 1; fi
  out=$("$1" -c "$probe" "$pkg" $files 2>/dev/null)
  s=$?
  if [ $s -ne 0 ]; then printf 'broken\\t%s\\t%s\\t%s\\n' "$2" "$1" "$s"; return 1; fi
  out=$(printf '%s\\n' "$out" | tail -n 1)
  printf 'env\\t%s\\t%s\\t%s\\n' "$2" "$1" "$out"
  case $out in *'"versionSource": "'*) exit 0 ;; esac
  return 1
}
try_prefix() {
  case $1 in
    '~') p=$HOME ;;
    '~/'*) p=$HOME/\${1#'~/'} ;;
    *) p=$1 ;;
  esac
  p=\${p%/}
  case \${p##*/} in
    python|python[0-9]*) try_python "$p" "$2" ;;
    *) try_python "$p/bin/python" "$2" ;;
  esac
}
if [ "$mode" = configured ]; then try_prefix "$configured" configured; fi
try_prefix '~/ml-env' home
try_prefix "~/$pkg-env" home
try_prefix '~/.venv' home
try_prefix '~/venv' home
if [ -n "\${CONDA_PREFIX:-}" ]; then try_prefix "$CONDA_PREFIX" conda; fi
for base in "$HOME/miniconda3" "$HOME/anaconda3" "$HOME/miniforge3" "$HOME/mambaforge" "$HOME/micromamba" /opt/conda; do
  [ -d "$base" ] || continue
  for env in "$base"/envs/*; do
    [ -d "$env" ] && try_prefix "$env" conda
  done
  try_prefix "$base" conda
done
if p=$(command -v python3 2>/dev/null); then try_python "$p" path; fi
${FROM_ENTRY_POINT}`

/**
 * `sh -c IMAGE_DISCOVER mlops-python <probe> <package> <entry point> [files...]`, inside an
 * image: the same lines as DISCOVER (`home`, then `env`/`none`/`broken` per candidate) for the
 * interpreters an image runs its programs with: `python3` and `python` on its PATH (a venv the
 * image puts first included), then the interpreter of the engine's entry point. Only `sh` and
 * the interpreter are needed (no coreutils).
 */
export const IMAGE_DISCOVER = `probe=$1; pkg=$2; entry=$3
shift 3
files=$*
seen=' '
nl=$(printf '\\nx'); nl=\${nl%x}
printf 'home\\t%s\\n' "$HOME"
try_python() {
  case $seen in *" $1 "*) return 1 ;; esac
  seen="$seen$1 "
  if [ ! -x "$1" ] || [ -d "$1" ]; then printf 'none\\t%s\\t%s\\n' "$2" "$1"; return 1; fi
  out=$("$1" -c "$probe" "$pkg" $files 2>/dev/null)
  s=$?
  if [ $s -ne 0 ]; then printf 'broken\\t%s\\t%s\\t%s\\n' "$2" "$1" "$s"; return 1; fi
  out=\${out##*"$nl"}
  printf 'env\\t%s\\t%s\\t%s\\n' "$2" "$1" "$out"
  case $out in *'"versionSource": "'*) exit 0 ;; esac
  return 1
}
for name in python3 python; do
  if p=$(command -v "$name" 2>/dev/null); then try_python "$p" path; fi
done
${FROM_ENTRY_POINT}`
