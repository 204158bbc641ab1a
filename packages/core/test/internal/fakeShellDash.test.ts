/**
 * The fake host's sh against the real dash: the same scripts, run on the same small tree (a
 * home with stub Python interpreters printing fixed lines, conda-like environments, entry
 * points with `#!` lines, a PATH), once by /bin/dash on this machine's disk and once by a
 * FakeHost holding the same files (the stubs as fake programs printing the same lines), must
 * print the same stdout and exit with the same status. The homes differ (a temporary directory
 * here, /home/tester on the fake): outputs compare with the home replaced by `$HOME`.
 *
 * The scripts cover each construct the fake models, and the Python environment discovery
 * script of `@mlops/serve` exactly as its `discoverOnce` runs it.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { ConnectionPool } from "../../src/ConnectionPool.js"
import * as FakeHost from "../../src/FakeHost.js"
import * as RemoteCommand from "../../src/RemoteCommand.js"

/**
 * `@mlops/serve`'s discovery scripts. Imported at run time by a path TypeScript does not follow:
 * core's build must neither compile nor emit serve's sources (core's src never imports serve).
 */
const serveScripts: string = "../../../serve/src/internal/pythonEnvScripts.js"
const scripts: unknown = await import(serveScripts)
const scriptText = (name: string): string => {
  const value =
    typeof scripts === "object" && scripts !== null ? (scripts as Record<string, unknown>)[name] : undefined
  if (typeof value !== "string") throw new Error(`${serveScripts} exports no ${name} string`)
  return value
}
const DISCOVER = scriptText("DISCOVER")
const PROBE = scriptText("PROBE")

const DASH = "/bin/dash"
const realHome = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-dash-home-"))
const fakeHome = "/home/tester"
afterAll(() => fs.rmSync(realHome, { recursive: true, force: true }))

/** One thing in the home directory (paths relative to it); `text` gets the home it is written in. */
type Entry =
  | { readonly kind: "dir"; readonly path: string }
  | {
      readonly kind: "file"
      readonly path: string
      readonly text: (home: string) => string
      readonly mode: number
    }
  /**
   * An interpreter: prints `before`, then a JSON line with what it was given (and `fields`),
   * and a line on stderr; exits `status`.
   */
  | {
      readonly kind: "stub"
      readonly path: string
      readonly before: ReadonlyArray<string>
      readonly fields: string
      readonly status: number
    }
  /** A tool of this machine (a symlink here); on the fake, a file whose program is the host's own. */
  | { readonly kind: "tool"; readonly path: string; readonly target: string }

const stub = (
  p: string,
  o: { readonly before?: ReadonlyArray<string>; readonly fields?: string; readonly status?: number } = {}
): Entry => ({
  kind: "stub",
  path: p,
  before: o.before ?? [],
  fields: o.fields === undefined ? "" : `, ${o.fields}`,
  status: o.status ?? 0
})
const script = (p: string, text: (home: string) => string): Entry => ({
  kind: "file",
  path: p,
  text,
  mode: 0o755
})

const TREE: ReadonlyArray<Entry> = [
  stub("ml-env/bin/python", {
    before: ["a line before the JSON"],
    fields: '"found": true, "versionSource": null'
  }),
  stub(".venv/bin/python", { before: ["partial output"], status: 3 }),
  { kind: "dir", path: "venv/bin/python" },
  stub("cfg/bin/python", { fields: '"found": true, "versionSource": "metadata"' }),
  stub("miniconda3/envs/a/bin/python", { fields: '"versionSource": null' }),
  { kind: "dir", path: "miniconda3/envs/b/bin" },
  stub("miniconda3/envs/.hidden/bin/python", { fields: '"versionSource": "metadata"' }),
  { kind: "file", path: "miniconda3/envs/c", text: () => "not an environment\n", mode: 0o644 },
  stub("miniconda3/bin/python", { before: ["", "two blank-ish lines"], fields: '"versionSource": null' }),
  stub("bin/python3"),
  stub("tools/bin/python3.11", { fields: '"versionSource": "version.py"' }),
  script("bin/sglang", () => "#!/usr/bin/env python3\nimport sys\n"),
  script("bin/sglang-direct", (home) => `#!${home}/tools/bin/python3.11 -u\nimport sys\n`),
  script("bin/sglang-noshebang", () => "echo hi\n"),
  script("bin/sglang-noeol", (home) => `#!${home}/miniconda3/envs/a/bin/python`),
  {
    kind: "file",
    path: "data/lines",
    text: () => "  first line  \nsecond\tline\nlast without newline",
    mode: 0o644
  },
  { kind: "file", path: "data/one", text: () => "only\n", mode: 0o644 },
  { kind: "dir", path: "tmp" },
  { kind: "tool", path: "sys/tail", target: "tail" },
  { kind: "tool", path: "sys/cat", target: "cat" }
]

const stubJson = (name: string, argv: ReadonlyArray<string>, fields: string) =>
  `{"stub": "${name}", "argc": ${argv.length - 1}, "pkg": "${argv[3] ?? ""}", "files": "${argv[4] ?? ""} ${argv[5] ?? ""}"${fields}}`

const which = (tool: string) =>
  spawnSync("/bin/sh", ["-c", `command -v ${tool}`], { encoding: "utf8" }).stdout.trim()

for (const entry of TREE) {
  const at = path.join(realHome, entry.path)
  if (entry.kind === "dir") {
    fs.mkdirSync(at, { recursive: true })
    continue
  }
  fs.mkdirSync(path.dirname(at), { recursive: true })
  if (entry.kind === "tool") fs.symlinkSync(which(entry.target), at)
  else if (entry.kind === "file") fs.writeFileSync(at, entry.text(realHome), { mode: entry.mode })
  else {
    const quoted = entry.before.map((l) => `'${l}'`).join(" ")
    const body = [
      "#!/bin/sh",
      ...(entry.before.length > 0 ? [`printf '%s\\n' ${quoted}`] : []),
      `printf '{"stub": "%s", "argc": %s, "pkg": "%s", "files": "%s"${entry.fields}}\\n' '${entry.path}' "$#" "$3" "$4 $5"`,
      "echo 'stub stderr' >&2",
      `exit ${entry.status}`
    ]
    fs.writeFileSync(at, `${body.join("\n")}\n`, { mode: 0o755 })
  }
}

const fakeStubs: ReadonlyArray<FakeHost.Program> = TREE.flatMap((entry) =>
  entry.kind !== "stub"
    ? []
    : [
        {
          match: (argv: ReadonlyArray<string>) => argv[0] === `${fakeHome}/${entry.path}`,
          run: (ctx: FakeHost.ProgramContext) =>
            Effect.gen(function* () {
              for (const line of entry.before) yield* ctx.stdout.line(line)
              yield* ctx.stdout.line(stubJson(entry.path, ctx.argv, entry.fields))
              yield* ctx.stderr.line("stub stderr")
              return entry.status
            })
        }
      ]
)

const layer = FakeHost.layer([
  {
    alias: "h",
    user: "tester",
    home: fakeHome,
    programs: fakeStubs,
    env: { PATH: `${fakeHome}/bin:${fakeHome}/sys`, LC_ALL: "C" }
  }
])

/** The same files on the fake host (modes as here). */
const populateFake = Effect.gen(function* () {
  const host = yield* FakeHost.host("h")
  for (const entry of TREE) {
    const at = `${fakeHome}/${entry.path}`
    if (entry.kind === "dir") yield* host.fs.mkdir(at)
    else if (entry.kind === "file") yield* host.fs.write(at, entry.text(fakeHome), { mode: entry.mode })
    else yield* host.fs.write(at, entry.kind === "stub" ? "#!/bin/sh\n" : "#!tool\n", { mode: 0o755 })
  }
})

interface Ran {
  readonly status: number | null
  readonly stdout: string
}

const normalise = (text: string, home: string) => text.replaceAll(home, "$HOME")

/** `dash -c SCRIPT NAME ARGS...` on this machine, in the real home. */
const real = (text: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}): Ran => {
  const out = spawnSync(DASH, ["-c", text, ...args.map((a) => a.replaceAll("$HOME", realHome))], {
    cwd: realHome,
    encoding: "utf8",
    input: "",
    env: {
      HOME: realHome,
      USER: "tester",
      PATH: `${realHome}/bin:${realHome}/sys`,
      LC_ALL: "C",
      ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replaceAll("$HOME", realHome)]))
    }
  })
  return { status: out.status, stdout: normalise(out.stdout, realHome) }
}

/** `sh -c SCRIPT NAME ARGS...` on the fake host, as a command of mlops. */
const fake = (text: string, args: ReadonlyArray<string>, env: Readonly<Record<string, string>> = {}) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get("h")
    const home = (s: string) => s.replaceAll("$HOME", fakeHome)
    const result = yield* conn.exec(
      RemoteCommand.make(["sh", "-c", text, ...args.map(home)], {
        env: Object.fromEntries(Object.entries(env).map(([k, v]) => [k, home(v)]))
      })
    )
    return { status: result.exitCode, stdout: normalise(result.stdout, fakeHome) } satisfies Ran
  })

interface Case {
  readonly name: string
  readonly script: string
  /** `$0` and the positional parameters (`$HOME` is replaced by each side's home). */
  readonly args?: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
}

/** Run the cases on both shells, in order; each must agree. */
const agree = (cases: ReadonlyArray<Case>) =>
  Effect.gen(function* () {
    yield* populateFake
    for (const c of cases) {
      const args = c.args ?? ["sh"]
      const expected = real(c.script, args, c.env)
      // dash ran and printed something: an empty agreement proves nothing
      assert.isNotNull(expected.status, c.name)
      assert.notStrictEqual(expected.stdout, "", c.name)
      const got = yield* fake(c.script, args, c.env)
      assert.deepStrictEqual(got, expected, `${c.name}:\n${c.script}`)
    }
  }).pipe(Effect.provide(layer))

/** Exactly what serve's `discoverOnce` runs. */
const discovery = `printf 'home\\t%s\\n' "$HOME"\n${DISCOVER}`

const discover = (
  name: string,
  o: {
    readonly mode: "discover" | "configured"
    readonly configured?: string
    readonly entry: string
    readonly files?: ReadonlyArray<string>
    readonly env?: Readonly<Record<string, string>>
  }
): Case => ({
  name,
  script: discovery,
  args: ["mlops-python", PROBE, "sglang", o.mode, o.configured ?? "", o.entry, ...(o.files ?? [])],
  ...(o.env === undefined ? {} : { env: o.env })
})

const DISCOVERY_CASES: ReadonlyArray<Case> = [
  discover("discover: every place, entry point through /usr/bin/env", {
    mode: "discover",
    entry: "sglang",
    files: ["srt/server_args.py", "srt/utils.py"]
  }),
  discover("configured ~/cfg: found first, exit 0", {
    mode: "configured",
    configured: "~/cfg",
    entry: "sglang"
  }),
  discover("configured ~, conda prefix set, entry point with a direct #! and an argument", {
    mode: "configured",
    configured: "~",
    entry: "sglang-direct",
    files: ["one"],
    env: { CONDA_PREFIX: "$HOME/miniconda3/envs/a" }
  }),
  discover("configured interpreter path, tried once", {
    mode: "configured",
    configured: "~/ml-env/bin/python",
    entry: "sglang-noshebang"
  }),
  discover("configured absolute python3.11/ with a trailing slash: found at once", {
    mode: "configured",
    configured: "$HOME/tools/bin/python3.11/",
    entry: "sglang"
  }),
  discover(
    "configured absolute prefix with a trailing slash, conda base as CONDA_PREFIX, unreadable #! line",
    {
      mode: "configured",
      configured: "$HOME/miniconda3/envs/a/",
      entry: "sglang-noeol",
      env: { CONDA_PREFIX: "$HOME/miniconda3" }
    }
  ),
  discover("no entry point on PATH", { mode: "discover", entry: "missing-entry", files: ["a", "b", "c"] })
]

/**
 * The construct scripts: `test/fixtures/fake-shell/constructs.sh`, one per `#### name` section
 * (a `#args: [...]` line gives `$0` and the positional parameters as JSON).
 */
const CONSTRUCT_CASES: ReadonlyArray<Case> = fs
  .readFileSync(new URL("../fixtures/fake-shell/constructs.sh", import.meta.url), "utf8")
  .split(/^#### /m)
  .filter((section) => section.trim() !== "")
  .map((section) => {
    const [name = "", ...lines] = section.split("\n")
    const argsLine = lines.find((l) => l.startsWith("#args: "))
    const args =
      argsLine === undefined ? ["sh"] : (JSON.parse(argsLine.slice("#args: ".length)) as Array<string>)
    return { name, script: lines.join("\n"), args }
  })

describe("fake sh agrees with dash on each construct", () => {
  for (const c of CONSTRUCT_CASES) it.effect(c.name, () => agree([c]))
})

describe("fake sh agrees with dash on the Python environment discovery script of @mlops/serve", () => {
  for (const c of DISCOVERY_CASES) it.effect(c.name, () => agree([c]))
})
