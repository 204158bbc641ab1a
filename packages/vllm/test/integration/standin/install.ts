/**
 * A throwaway venv holding the stand-in vLLM (the Python package next to this file, with its
 * dist-info so `importlib.metadata` finds version 0.13.0), a `vllm` entry point, the stand-in
 * `nvidia-smi` (one L4), a Qwen2.5-7B-like model directory, and an mlops home whose hosts.json
 * gives the test host this venv and a state directory inside the temp dir.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, type Scope } from "effect"
import { qwen25_7b } from "../../fixtures/models.js"

export interface VllmStandin {
  readonly venv: string
  readonly bin: string
  readonly modelPath: string
  readonly mlopsHome: string
  readonly stateDir: string
  /** Puts the venv's bin (its nvidia-smi, its vllm) first on the remote PATH. */
  readonly sshdConfig: ReadonlyArray<string>
}

const here = import.meta.dirname

const layout = (root: string): VllmStandin => {
  const venv = path.join(root, "venv")
  const bin = path.join(venv, "bin")
  const remotePath = [bin, "/usr/local/bin", "/usr/bin", "/bin"].join(":")
  return {
    venv,
    bin,
    modelPath: path.join(root, "models", "Qwen2.5-7B-Instruct"),
    mlopsHome: path.join(root, "mlops-home"),
    stateDir: path.join(root, "state"),
    sshdConfig: [`SetEnv PATH=${remotePath} SHLVL=1`]
  }
}

/** What to install: another version's metadata, and the parser dump `vllm serve`'s builder reads. */
export interface InstallOptions {
  /** The version its dist-info says (default 0.13.0). */
  readonly version?: string
  /** The parser's actions (the fixtures' dump form); default the newest dump in the fixtures. */
  readonly flags?: ReadonlyArray<unknown>
}

const fixtures = path.join(here, "..", "..", "fixtures", "flags")

/** A reference dump of the real `vllm serve` parser, from the fixtures. */
export const referenceFlags = (): ReadonlyArray<
  { readonly flags: ReadonlyArray<string> } & Record<string, unknown>
> =>
  JSON.parse(
    fs.readFileSync(
      path.join(
        fixtures,
        fs
          .readdirSync(fixtures)
          .filter((f) => f.endsWith(".json"))
          .sort()
          .at(-1)!
      ),
      "utf8"
    )
  )

/**
 * A later release's parser, as the tests and bench stand it in (0.26.0): the newest real dump
 * with `--enforce-eager` gone, an int flag added, and an `int | None` flag only the install's
 * converter types (its closure, `standin/vllm/entrypoints/openai/cli_args.py`).
 */
export const laterReleaseFlags = () => [
  ...referenceFlags().filter((action) => !action.flags.includes("--enforce-eager")),
  {
    flags: ["--standin-kv-budget"],
    dest: "standin_kv_budget",
    default: "None",
    choices: null,
    type: "int",
    nargs: null,
    action: "_StoreAction",
    group: "CacheConfig"
  },
  {
    flags: ["--standin-window"],
    dest: "standin_window",
    default: "None",
    choices: null,
    type: "_optional_type",
    nargs: null,
    action: "_StoreAction",
    group: "CacheConfig"
  }
]

const populate = (s: VllmStandin, alias: string, options: InstallOptions = {}) => {
  execFileSync("python3", ["-m", "venv", "--without-pip", s.venv], { timeout: 60_000 })
  const lib = path.join(s.venv, "lib")
  const site = path.join(lib, fs.readdirSync(lib).find((d) => d.startsWith("python"))!, "site-packages")
  fs.cpSync(path.join(here, "vllm"), path.join(site, "vllm"), { recursive: true })
  const version = options.version ?? "0.13.0"
  const distInfo = path.join(site, `vllm-${version}.dist-info`)
  fs.cpSync(path.join(here, "vllm-0.13.0.dist-info"), distInfo, { recursive: true })
  fs.writeFileSync(
    path.join(distInfo, "METADATA"),
    fs.readFileSync(path.join(distInfo, "METADATA"), "utf8").replace(/^Version: .*$/m, `Version: ${version}`)
  )
  fs.writeFileSync(
    path.join(site, "vllm", "entrypoints", "openai", "flags.json"),
    JSON.stringify(options.flags ?? referenceFlags())
  )
  fs.copyFileSync(path.join(here, "nvidia-smi"), path.join(s.bin, "nvidia-smi"))
  fs.writeFileSync(
    path.join(s.bin, "vllm"),
    `#!${path.join(s.bin, "python")}\nimport sys\nfrom vllm.entrypoints.cli.main import main\nsys.exit(main())\n`
  )
  for (const tool of ["nvidia-smi", "vllm"]) fs.chmodSync(path.join(s.bin, tool), 0o755)
  fs.mkdirSync(s.modelPath, { recursive: true })
  fs.writeFileSync(path.join(s.modelPath, "config.json"), JSON.stringify(qwen25_7b, null, 2))
  fs.mkdirSync(s.mlopsHome, { recursive: true })
  fs.writeFileSync(
    path.join(s.mlopsHome, "hosts.json"),
    JSON.stringify({ hosts: { [alias]: { python: s.venv, stateDir: s.stateDir } } })
  )
}

/** Install for host `alias`; the temp dir goes when the scope closes. */
export const install = (
  alias: string,
  options: InstallOptions = {}
): Effect.Effect<VllmStandin, Error, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        const s = layout(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-vllm-standin-")))
        populate(s, alias, options)
        return s
      },
      catch: (e) => new Error(`installing the stand-in vLLM: ${String(e)}`)
    }),
    (s) => Effect.sync(() => fs.rmSync(path.dirname(s.venv), { recursive: true, force: true }))
  )
