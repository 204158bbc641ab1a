/**
 * The stand-in vLLM in a container image: its package, a dist-info saying the chosen version
 * and a `vllm` entry point in /usr/local/bin (what `vllm/vllm-openai` images run), for
 * `Containers.buildImage(engine, { name, ...contents })` from core's test support; and how the
 * host's stand-in `nvidia-smi` comes to see the GPU memory of a containerised stand-in.
 *
 * ```ts
 * const contents = yield* installInImage({ version: "0.13.0" })
 * const image = yield* Containers.buildImage(docker, { name: "mlops-test/vllm:v0.13.0", ...contents })
 * seeContainers(standin.venv, [docker.dir])
 * ```
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect, type Scope } from "effect"

const here = import.meta.dirname

/** The version the stand-in's sources and dist-info say. */
export const SOURCE_VERSION = "0.13.0"

/** Where the stand-in registers its GPU memory inside an image (the host's nvidia-smi looks there). */
export const IMAGE_GPU_REGISTRY = "/var/lib/standin-gpu"

export interface ImageContents {
  /** For `ImageSpec.packages`: `vllm` and its dist-info into site-packages, the `vllm` entry point into bin. */
  readonly packages: ReadonlyArray<{ readonly from: string; readonly into: "site-packages" | "bin" }>
  /** For `ImageSpec.env`: `STANDIN_GPU_REGISTRY`. */
  readonly env: Readonly<Record<string, string>>
  /** For `ImageSpec.labels`: `org.opencontainers.image.version`. */
  readonly labels: Readonly<Record<string, string>>
  readonly version: string
}

export interface InImageOptions {
  /** The dist-info version (what `importlib.metadata.version("vllm")` answers); default 0.13.0. */
  readonly version?: string
  /** `vllm.__version__`; default: `version`. */
  readonly moduleVersion?: string
  /** The image's version label; default: `version`. */
  readonly label?: string
}

/** The stand-in's files for an image, prepared in a temp dir removed with the scope. */
export const installInImage = (
  options: InImageOptions = {}
): Effect.Effect<ImageContents, Error, Scope.Scope> =>
  Effect.gen(function* () {
    const version = options.version ?? SOURCE_VERSION
    const moduleVersion = options.moduleVersion ?? version
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-vllm-image-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    return yield* Effect.try({
      try: () => {
        const pkg = path.join(dir, "vllm")
        fs.cpSync(path.join(here, "vllm"), pkg, {
          recursive: true,
          filter: (source) => path.basename(source) !== "__pycache__"
        })
        const init = path.join(pkg, "__init__.py")
        fs.writeFileSync(
          init,
          fs.readFileSync(init, "utf8").replace(/__version__ = "[^"]*"/, `__version__ = "${moduleVersion}"`)
        )
        const main = path.join(pkg, "entrypoints", "cli", "main.py")
        fs.writeFileSync(
          main,
          fs.readFileSync(main, "utf8").replace(/^VERSION = "[^"]*"/m, `VERSION = "${moduleVersion}"`)
        )
        const distInfo = path.join(dir, `vllm-${version}.dist-info`)
        fs.mkdirSync(distInfo)
        fs.writeFileSync(
          path.join(distInfo, "METADATA"),
          `Metadata-Version: 2.1\nName: vllm\nVersion: ${version}\n`
        )
        fs.writeFileSync(path.join(distInfo, "top_level.txt"), "vllm\n")
        const bin = path.join(dir, "vllm-bin")
        fs.mkdirSync(bin)
        fs.writeFileSync(
          path.join(bin, "vllm"),
          "#!/usr/bin/python3\nimport sys\nfrom vllm.entrypoints.cli.main import main\nsys.exit(main())\n",
          { mode: 0o755 }
        )
        return {
          packages: [
            { from: pkg, into: "site-packages" },
            { from: distInfo, into: "site-packages" },
            { from: path.join(bin, "vllm"), into: "bin" }
          ],
          env: { STANDIN_GPU_REGISTRY: IMAGE_GPU_REGISTRY },
          labels: { "org.opencontainers.image.version": options.label ?? version },
          version
        } satisfies ImageContents
      },
      catch: (e) => new Error(`preparing the stand-in vLLM image contents: ${String(e)}`)
    })
  })

/**
 * Let the stand-in `nvidia-smi` in `venv` report stand-in processes in the containers of these
 * engines (`DockerDaemon.dir`, `Podman.dir`; `*` for any container) under their host pids.
 */
export const seeContainers = (venv: string, engineDirs: ReadonlyArray<string>): void => {
  const registry = path.join(venv, "standin-gpu")
  fs.mkdirSync(registry, { recursive: true })
  fs.writeFileSync(path.join(registry, "containers"), engineDirs.map((d) => `${d}\n`).join(""))
}
