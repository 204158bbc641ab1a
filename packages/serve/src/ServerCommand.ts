/**
 * The command that starts SGLang (or runs the host's own argument check) on the host.
 *
 * Without secrets it is the plain `<python> -m sglang.launch_server <flags>`. With secret flag
 * values or secret-named environment variables, the command line carries the SHOWN argv
 * (`***` in place of each secret) and a small Python prelude (`-c`) that, inside the server's
 * own process (so its pid is SGLang's):
 *
 * - takes the real values from one environment variable (the environment travels to the host
 *   outside any command line, see core's `RemoteCommand`) and removes it, so SGLang's children
 *   never inherit it;
 * - puts the values back into `sys.argv` and runs the module as `-m` would (`runpy`);
 * - wraps `sys.stdout`/`sys.stderr` so that anything SGLang prints (its `server_args=...` line
 *   shows `api_key=...`) reaches the log with `***` in place of the values.
 *
 * So `ps` on the host, the log and everything mlops stores show no secret, while SGLang
 * receives every value.
 *
 * @since 0.1.0
 */
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemotePath from "@mlops/core/RemotePath"
import * as Secrets from "./Secrets.js"

/** The environment variable that carries the secret values to the prelude. */
export const secretsEnv = "MLOPS_SERVER_SECRETS"

/**
 * The environment variable naming a file that carries them instead (a container's server: the
 * file is in the run directory the container mounts; the prelude reads it, then removes it).
 */
export const secretsFileEnv = "MLOPS_SERVER_SECRETS_FILE"

/** The marker simulated hosts look for (`python -c <prelude>`). */
export const preludeMarker = "mlops-server-prelude"

/**
 * `sys.argv[1]` names what to run (a module, or `-` for code given in the payload); the rest is
 * the shown argv. The payload: `argv` (position → real value), `hide` (values to print as ***),
 * `code` (for `-`), `env` (variables to set first: a container's secret-named ones).
 */
export const PRELUDE = `# ${preludeMarker}
import json, os, runpy, sys
payload = json.loads(os.environ.pop("${secretsEnv}", "{}"))
payload_file = os.environ.pop("${secretsFileEnv}", "")
if payload_file:
    with open(payload_file) as f:
        payload = json.load(f)
    os.unlink(payload_file)
os.environ.update(payload.get("env", {}))
words = sys.argv[2:]
for index, value in payload.get("argv", {}).items():
    words[int(index)] = value
hide = [v for v in payload.get("hide", []) if len(v) >= 4]
class Redacting:
    def __init__(self, stream):
        self._stream = stream
    def write(self, text):
        for value in hide:
            text = text.replace(value, "***")
        return self._stream.write(text)
    def __getattr__(self, name):
        return getattr(self._stream, name)
if hide:
    sys.stdout, sys.stderr = Redacting(sys.stdout), Redacting(sys.stderr)
target = sys.argv[1]
if target == "-":
    sys.argv = ["-c"] + words
    exec(compile(payload["code"], "<mlops>", "exec"), {"__name__": "__main__"})
else:
    sys.argv = [target] + words
    runpy.run_module(target, run_name="__main__", alter_sys=True)
`

/** What to run: the server module (with the words its command puts before the flags, `serve`), or a check script. */
export type Target =
  | { readonly module: string; readonly leading?: ReadonlyArray<string> }
  | { readonly code: string }

/** A remote path as a person would type it: `~/rest` with the tilde left for the shell to expand. */
const shownPath = (path: string): string => {
  const rest = RemotePath.homeRelative(path)
  return rest === undefined ? RemoteCommand.quote(path) : rest === "" ? "~" : `~/${RemoteCommand.quote(rest)}`
}

/** How the server is started, as a person would type it (shown flags only: never a secret). */
export const commandLine = (
  interpreter: string,
  command: { readonly module: string; readonly leading: ReadonlyArray<string> },
  shown: ReadonlyArray<string>
): string =>
  [
    shownPath(interpreter),
    "-m",
    command.module,
    ...[...command.leading, ...shown].map(RemoteCommand.quote)
  ].join(" ")

/** What runs a program: its words after the interpreter, and the prelude's payload when it has secrets. */
export interface Parts {
  /** `-m module shown…`, `-c code shown…`, or `-c PRELUDE module|- shown…`. */
  readonly words: ReadonlyArray<string>
  /** The payload (JSON) the prelude reads; undefined without secrets. */
  readonly payload: string | undefined
}

/**
 * The words that run `target` with `shown` flags whose secrets are `secrets`; `env` is the
 * program's environment (values of secret-named variables are hidden in its output), and
 * `secretEnv` the variables that travel in the payload instead (a container's).
 */
export const parts = (o: {
  readonly target: Target
  readonly shown: ReadonlyArray<string>
  readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
  readonly env: Readonly<Record<string, string>>
  readonly secretEnv?: Readonly<Record<string, string>>
  /** How the engine's flags name secrets (default: by name). */
  readonly flags?: Secrets.FlagLookup
}): Parts => {
  const secretEnv = o.secretEnv ?? {}
  const hide = Secrets.hiddenValues(o.secrets, { ...o.env, ...secretEnv })
  const shown = "module" in o.target ? [...(o.target.leading ?? []), ...o.shown] : o.shown
  if (o.secrets.length === 0 && hide.length === 0 && Object.keys(secretEnv).length === 0) {
    const head = "module" in o.target ? ["-m", o.target.module] : ["-c", o.target.code]
    return { words: [...head, ...shown], payload: undefined }
  }
  const real = Secrets.reveal(shown, o.secrets, o.flags)
  const argv: Record<string, string> = {}
  real.forEach((word, index) => {
    if (word !== shown[index]) argv[String(index)] = word
  })
  const payload = JSON.stringify({
    argv,
    hide,
    ...("code" in o.target ? { code: o.target.code } : {}),
    ...(Object.keys(secretEnv).length === 0 ? {} : { env: secretEnv })
  })
  return { words: ["-c", PRELUDE, "module" in o.target ? o.target.module : "-", ...shown], payload }
}

/**
 * The remote command for `shown` flags whose secrets are `secrets`, with `env`.
 */
export const make = (o: {
  readonly interpreter: string
  readonly target: Target
  readonly shown: ReadonlyArray<string>
  readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
  readonly env: Readonly<Record<string, string>>
  /** How the engine's flags name secrets (default: by name). */
  readonly flags?: Secrets.FlagLookup
}): RemoteCommand.RemoteCommand => {
  // a path mlops found or was given: `~/` is the remote home; the engine's flags stay as written
  const interpreter = RemotePath.make(o.interpreter)
  const made = parts(o)
  return RemoteCommand.make([interpreter, ...made.words], {
    env: made.payload === undefined ? o.env : { ...o.env, [secretsEnv]: made.payload }
  })
}

/**
 * A command line as a person would paste it: `program` then the quoted argv, on one line or one
 * flag (with its values) per line.
 */
export const formatCommandLine = (
  program: ReadonlyArray<string>,
  argv: ReadonlyArray<string>,
  options: { readonly multiline?: boolean } = {}
): string => {
  const head = program.map(RemoteCommand.quote)
  const quoted = argv.map(RemoteCommand.quote)
  if (options.multiline !== true) return [...head, ...quoted].join(" ")
  // Group each flag with the values that follow it, one group per line.
  const lines: Array<Array<string>> = [head]
  quoted.forEach((word, k) => {
    if (argv[k]!.startsWith("--") || lines.length === 1) lines.push([word])
    else lines[lines.length - 1]!.push(word)
  })
  return lines
    .filter((line) => line.length > 0)
    .map((line) => line.join(" "))
    .join(" \\\n  ")
}
