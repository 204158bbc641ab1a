/**
 * The runtime of a Python environment on the host: which environment runs an engine there. An
 * explicit setting (`--python`, the spec's `python`; else the host's `python` in hosts.json) is
 * used as given; without one, the usual places are searched in ONE round trip (the discovery
 * script of `pythonEnvScripts`, the same on every host, fake ones included) and the first
 * environment that has the engine is chosen. Either way the result says where it came from,
 * and a failure lists what was tried and names both ways to set it. The engine's programs run
 * with that environment's interpreter (`ServerCommand`).
 *
 * It applies to every host, so it comes last in a registry.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { CommandError, RemoteFileError } from "@mlops/core/Errors"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemotePath from "@mlops/core/RemotePath"
import { Effect, Either, Schema } from "effect"
import type { Engine } from "./Engine.js"
import { PythonEnvUnusable } from "./internal/launch/types.js"
import { DISCOVER, PROBE } from "./internal/pythonEnvScripts.js"
import { parse, type Tried } from "./internal/pythonProbe.js"
import {
  InvalidRuntime,
  type JobCommand,
  type JobProgram,
  type Kind,
  type Located,
  type Program,
  type Runtime,
  type Spec
} from "./Runtime.js"
import * as ServerCommand from "./ServerCommand.js"

/** No usable Python environment with the engine (also exported by `Launch`). @category errors */
export { PythonEnvUnusable }

/** The kind's name, in specs and records. @category constants */
export const name = "python-env"

/** What it fails with: no environment with the engine, or the host's answer did not come. @category models */
export type Error = PythonEnvUnusable | CommandError | RemoteFileError

/** The spec: `python` pins the environment (a venv/conda prefix or an interpreter), as `--python` does. @category constructors */
export const spec = (python?: string): Spec =>
  python === undefined ? { kind: name } : { kind: name, python }

/** Where the environment setting came from. */
export type PythonSource = Located["source"]

const DISCOVER_TIMEOUT = "60 seconds"

const tilde = (home: string | undefined, path: string) =>
  home !== undefined && home !== "/" && (path === home || path.startsWith(`${home}/`))
    ? `~${path.slice(home.length)}`
    : path

/** The prefix of `<prefix>/bin/python`, or the interpreter itself. */
const settingOf = (interpreter: string) => interpreter.replace(/\/bin\/python$/, "")

const describeTried = (home: string | undefined, tried: ReadonlyArray<Tried>, label: string) =>
  tried
    .map((t) => {
      const what = {
        none: "no interpreter",
        broken: "interpreter failed",
        missing: `no ${label}`,
        "no-version": `${label} without a version`,
        found: label
      }[t.outcome]
      return `${tilde(home, t.path)} (${what})`
    })
    .join(", ")

const settingHint = (host: string, value: string) =>
  `pass --python ${value} (or set "python": "${value}" for ${host} in hosts.json)`

/** Run the discovery script; `undefined` when the host could not run it. */
const discoverOnce = (
  conn: Connection,
  engine: Engine,
  configured: string | undefined,
  env: Readonly<Record<string, string>>
) =>
  Effect.gen(function* () {
    const script = `printf 'home\\t%s\\n' "$HOME"\n${DISCOVER}`
    const result = yield* conn.exec(
      RemoteCommand.make(
        [
          "sh",
          "-c",
          script,
          "mlops-python",
          PROBE,
          engine.python.package,
          configured === undefined ? "discover" : "configured",
          configured ?? "",
          engine.python.entryPoint,
          ...engine.python.fingerprintFiles
        ],
        { env }
      ),
      { timeout: DISCOVER_TIMEOUT }
    )
    // the first line a POSIX shell prints; without it the script did not run (no POSIX shell)
    if (!result.stdout.includes("home\t")) return undefined
    return parse(result.stdout)
  })

/**
 * The environment to run `engine` with. `explicit` is `--python`; the host's hosts.json setting
 * comes next; otherwise discovery. `env` is the launch's environment (a `PYTHONPATH` there
 * makes a source checkout visible).
 *
 * @category locating
 */
export const choose = Effect.fn("Launch.pythonEnv")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    readonly explicit: string | undefined
    readonly env: Readonly<Record<string, string>>
  }
) {
  const host = conn.host.alias
  const engine = o.engine
  const label = engine.displayName
  const source: PythonSource =
    o.explicit !== undefined ? "--python" : conn.host.python !== undefined ? "hosts.json" : "discovered"
  const configured = o.explicit ?? conn.host.python
  const found = yield* discoverOnce(conn, engine, configured, o.env)
  if (found === undefined) {
    return yield* new PythonEnvUnusable({
      host,
      python: configured ?? "(none found)",
      reason: "the host did not run the discovery script (no POSIX sh on its login PATH?)",
      fix: `make /bin/sh a POSIX shell on ${host}, or ${settingHint(host, `<a venv or conda prefix with ${label}>`)}`
    })
  }
  const { home, tried } = found
  const hit = tried.find((t) => t.outcome === "found")
  const configuredTry = configured === undefined ? undefined : tried.find((t) => t.how === "configured")
  const origin = source === "--python" ? "--python" : `hosts.json ("python" of ${host})`

  // the host's setting is its default environment: an engine that is not in it but in another
  // environment of the host is run from there (the Python event names both); `--python` is a demand
  const settingLacksEngine =
    source === "hosts.json" && configuredTry?.outcome === "missing" && hit?.probed?.packageVersion != null
  if (configured !== undefined && configuredTry?.outcome !== "found" && !settingLacksEngine) {
    const interpreter = configuredTry?.probed?.executable ?? configuredTry?.path ?? configured
    const reason =
      configuredTry?.outcome === "missing"
        ? `${label} is not installed in this environment (set by ${origin})`
        : configuredTry?.outcome === "no-version"
          ? `${label} at ${configuredTry.probed?.location} has neither package metadata nor a version.py (set by ${origin})`
          : `no working Python interpreter there (set by ${origin})`
    const elsewhere =
      hit?.probed === undefined
        ? ""
        : `; ${label} ${hit.probed.packageVersion} is in ${tilde(home, settingOf(hit.path))}: ${settingHint(host, tilde(home, settingOf(hit.path)))}`
    return yield* new PythonEnvUnusable({
      host,
      python: tilde(home, interpreter),
      reason: `${reason}${elsewhere}`,
      fix:
        hit?.probed !== undefined
          ? settingHint(host, tilde(home, settingOf(hit.path)))
          : `install ${label} there (${tilde(home, interpreter)} -m ${engine.python.install}), or ${settingHint(host, `<a venv or conda prefix with ${label}>`)}`
    })
  }
  if (hit?.probed === undefined || hit.probed.packageVersion === null || hit.probed.versionSource === null) {
    return yield* new PythonEnvUnusable({
      host,
      python: "(none found)",
      reason: `no Python environment with ${label} found; tried ${describeTried(home, tried, label) || "nothing (no shell)"}`,
      fix: `install ${label} (python3 -m venv ~/ml-env && ~/ml-env/bin/${engine.python.install}), or ${settingHint(host, `<a venv or conda prefix with ${label}>`)}`
    })
  }
  const interpreter = hit.path
  return {
    interpreter,
    setting: tilde(home, settingLacksEngine ? settingOf(hit.path) : (configured ?? settingOf(hit.path))),
    source: settingLacksEngine ? "discovered" : source,
    how: hit.how,
    pythonVersion: hit.probed.version,
    engine: engine.name,
    package: engine.python.package,
    engineVersion: hit.probed.packageVersion,
    versionSource: hit.probed.versionSource,
    location: hit.probed.location ?? "",
    fileHashes: hit.probed.fileHashes,
    runtime: name,
    installId: host,
    where: `at ${interpreter}`
  } satisfies Located
})

/**
 * The first of `engines` (in order of preference) that the host's Python environment has, with
 * that environment; when none is there, the preferred engine's refusal (naming what was tried).
 *
 * @category locating
 */
export const detect = Effect.fn("Launch.detectEngine")(function* (
  conn: Connection,
  o: {
    readonly engines: ReadonlyArray<Engine>
    readonly explicit: string | undefined
    readonly env: Readonly<Record<string, string>>
  }
) {
  let refusal: PythonEnvUnusable | undefined
  for (const engine of o.engines) {
    const found = yield* Effect.either(choose(conn, { engine, explicit: o.explicit, env: o.env }))
    if (Either.isRight(found)) return { engine, located: found.right }
    // connection trouble is not an answer: only "not in this environment" moves on
    if (found.left._tag !== "PythonEnvUnusable") return yield* found.left
    refusal ??= found.left
  }
  return yield* refusal ??
    new PythonEnvUnusable({
      host: conn.host.alias,
      python: "(none)",
      reason: "no engine given",
      fix: "name an engine (--engine)"
    })
})

const PythonSpec = Schema.Struct({ kind: Schema.Literal(name), python: Schema.optional(Schema.String) })
const decodeSpec = Schema.decodeUnknownEither(PythonSpec, { onExcessProperty: "error" })

const decode = (given: Spec) =>
  Either.mapLeft(
    decodeSpec(given),
    (error) =>
      new InvalidRuntime({
        kind: name,
        reason: `bad settings: ${error.message}`,
        fix: "give the environment as a path: --python ~/ml-env"
      })
  )

const commandOf = (located: Located, program: Program) =>
  ServerCommand.make({
    interpreter: located.interpreter,
    target: program.target,
    shown: program.shown,
    secrets: program.secrets,
    env: program.env,
    ...(program.flags === undefined ? {} : { flags: program.flags })
  })

/**
 * A job's command in the environment: its `bin` first on PATH (a prefix's, or the directory of
 * an interpreter named by its path), so `python`, `torchrun` and `accelerate` are the
 * environment's; none set (`--python`, hosts.json `python`): the login PATH as it is.
 */
const jobCommand = (conn: Connection, python: string | undefined, job: JobProgram): JobCommand => {
  const setting = python ?? conn.host.python
  const argv: readonly [RemoteCommand.Word, ...Array<RemoteCommand.Word>] =
    setting === undefined ? job.argv : ["sh", "-c", IN_ENV, RemotePath.make(setting), ...job.argv]
  return {
    command: RemoteCommand.make(argv, { env: job.env, ...(job.cwd === undefined ? {} : { cwd: job.cwd }) }),
    cwd: job.cwd ?? "~",
    where: setting === undefined ? "the login environment" : `the Python environment ${setting}`
  }
}

/** `sh -c IN_ENV <prefix or interpreter> <command...>`. */
const IN_ENV = `if [ -d "$0" ]; then PATH="$0/bin:$PATH"; else PATH="\${0%/*}:$PATH"; fi; export PATH; exec "$@"`

const runtime = (python: string | undefined): Runtime<Error> => ({
  spec: spec(python),
  form: "OnHost",
  description: python === undefined ? "a Python environment on the host" : `the Python environment ${python}`,
  prepare: () => Effect.void,
  locate: (conn, o) => detect(conn, { engines: o.engines, explicit: python, env: o.env }),
  preflight: () => Effect.succeed({ summary: undefined, warnings: [] }),
  // an environment is told apart by its path and version, which the record keeps
  current: () => Effect.succeed(undefined),
  command: commandOf,
  job: (conn, job) => Effect.succeed(jobCommand(conn, python, job)),
  runnable: (located, program) => ({
    _tag: "OnHost",
    command: commandOf(located, program),
    shown: ServerCommand.commandLine(
      located.interpreter,
      "module" in program.target
        ? { module: program.target.module, leading: program.target.leading ?? [] }
        : { module: "-c", leading: [] },
      program.shown
    )
  })
})

/** A Python environment on the host: applies to every host. @category kinds */
export const kind: Kind<Error> = {
  kind: name,
  resolve: (_, asked) =>
    asked === undefined ? Either.right(spec()) : Either.map(decode(asked), (s) => spec(s.python)),
  make: (given, _) => Either.map(decode(given), (s) => runtime(s.python))
}
