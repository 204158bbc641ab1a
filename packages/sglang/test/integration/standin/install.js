/**
 * Installs the stand-in SGLang (the Python files next to this module) into a throwaway venv
 * on this machine, which the test sshd serves as the remote host: `python3 -m venv` (no pip,
 * no network), the package and its dist-info copied into site-packages, the stand-in
 * `nvidia-smi` into the venv's bin, a Qwen3.6-27B-like model directory, and an mlops home whose
 * hosts.json points the test host at the venv and at a state directory inside the temp dir (so
 * deployments never touch this machine's real `~/.mlops`).
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { qwen36_27b } from "@mlops/serve/SampleModels"
import { Data, Effect } from "effect"
export class StandinError extends Data.TaggedError("StandinError") {
  get message() {
    return `stand-in SGLang: ${this.reason}`
  }
}
const sourceDir = path.dirname(fileURLToPath(import.meta.url))
const run = (file, args) =>
  Effect.async((resume) => {
    execFile(file, [...args], { timeout: 60_000 }, (error, _stdout, stderr) => {
      if (error)
        resume(
          Effect.fail(new StandinError({ reason: `${file} ${args.join(" ")}: ${stderr || error.message}` }))
        )
      else resume(Effect.void)
    })
  })
const sitePackages = (venv) => {
  const lib = path.join(venv, "lib")
  const python = fs.readdirSync(lib).find((entry) => entry.startsWith("python"))
  if (python === undefined) throw new Error(`no lib/python* in ${venv}`)
  return path.join(lib, python, "site-packages")
}
/** Build the stand-in environment in a temp dir; removed when the scope closes. */
export const install = Effect.gen(function* () {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-standin-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const venv = path.join(dir, "venv")
  yield* run("python3", ["-m", "venv", "--without-pip", venv])
  const bin = path.join(venv, "bin")
  yield* Effect.try({
    try: () => {
      const site = sitePackages(venv)
      fs.cpSync(path.join(sourceDir, "sglang"), path.join(site, "sglang"), { recursive: true })
      fs.cpSync(path.join(sourceDir, "sglang-0.5.11.dist-info"), path.join(site, "sglang-0.5.11.dist-info"), {
        recursive: true
      })
      fs.copyFileSync(path.join(sourceDir, "nvidia-smi"), path.join(bin, "nvidia-smi"))
      fs.chmodSync(path.join(bin, "nvidia-smi"), 0o755)
    },
    catch: (error) => new StandinError({ reason: `installing into ${venv}: ${String(error)}` })
  })
  const modelPath = path.join(dir, "models", "Qwen3.6-27B")
  fs.mkdirSync(modelPath, { recursive: true })
  fs.writeFileSync(path.join(modelPath, "config.json"), JSON.stringify(qwen36_27b, null, 2))
  const mlopsHome = path.join(dir, "mlops-home")
  fs.mkdirSync(mlopsHome, { recursive: true })
  const stateDir = path.join(dir, "state")
  const stampFile = path.join(dir, "stamps.ndjson")
  const remotePath = [
    bin,
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin"
  ].join(":")
  return {
    dir,
    venv,
    bin,
    modelPath,
    mlopsHome,
    stateDir,
    stampFile,
    // SHLVL=1: bash (the login shell) reads ~/.bashrc for commands sshd runs only at shell
    // level 1, so this keeps the machine's own bashrc out of the test host: one that runs
    // `pyenv init` rehashes on every command and waits up to 60 s for a shim lock a killed
    // session left behind (PYENV_REHASH_TIMEOUT bounds that wait where a bashrc runs anyway).
    sshdConfig: [`SetEnv PATH=${remotePath} SHLVL=1 PYENV_REHASH_TIMEOUT=1`],
    writeHostsFile: (alias) =>
      fs.writeFileSync(
        path.join(mlopsHome, "hosts.json"),
        JSON.stringify({ hosts: { [alias]: { python: venv, stateDir } } })
      ),
    stamps: () =>
      fs.existsSync(stampFile)
        ? fs
            .readFileSync(stampFile, "utf8")
            .split("\n")
            .filter((line) => line.trim() !== "")
            .map((line) => JSON.parse(line))
        : []
  }
})
//# sourceMappingURL=install.js.map
