/**
 * The stand-in SGLang in a container image: what to put in it (for
 * `Containers.buildImage(engine, { name, ...installInImage(...) })` from core's test support),
 * and how the host's stand-in `nvidia-smi` (in the venv of `install.ts`) comes to see the GPU
 * memory of stand-in processes in containers.
 *
 * ```ts
 * const contents = yield* installInImage({ version: "0.0.0.dev1+g1234abc" })
 * const image = yield* Containers.buildImage(docker, { name: "mlops-test/sglang:dev", ...contents })
 * seeContainers(standin.venv, [docker.dir])
 * ```
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"
import { StandinError } from "./install.js"

const sourceDir = path.dirname(fileURLToPath(import.meta.url))

/** The version the stand-in's sources and dist-info say. */
export const SOURCE_VERSION = "0.5.11"

/** Where the stand-in registers its GPU memory inside an image (the host's nvidia-smi looks there). */
export const IMAGE_GPU_REGISTRY = "/var/lib/standin-gpu"

export interface ImageContents {
  /** For `ImageSpec.packages`: the `sglang` package and its dist-info, into site-packages. */
  readonly packages: ReadonlyArray<{ readonly from: string; readonly into: "site-packages" }>
  /** For `ImageSpec.env`: `STANDIN_GPU_REGISTRY`. */
  readonly env: Readonly<Record<string, string>>
  /** For `ImageSpec.labels`: `org.opencontainers.image.version` (the version the image says it ships). */
  readonly labels: Readonly<Record<string, string>>
  /** The version the package metadata says (what `importlib.metadata.version("sglang")` answers). */
  readonly version: string
}

export interface InImageOptions {
  /** The dist-info version; default 0.5.11. A dev image says e.g. `0.0.0.dev1+g1234abc`. */
  readonly version?: string
  /** `sglang.__version__` (version.py); default: `version`. */
  readonly moduleVersion?: string
  /** The image's version label; default: `version`. */
  readonly label?: string
}

/**
 * The stand-in's package directories for an image, with its dist-info saying `version`
 * (copied into a temp dir removed with the scope unless the sources already say it).
 */
export const installInImage = (
  options: InImageOptions = {}
): Effect.Effect<ImageContents, StandinError, Scope.Scope> =>
  Effect.gen(function* () {
    const version = options.version ?? SOURCE_VERSION
    const moduleVersion = options.moduleVersion ?? version
    const env = { STANDIN_GPU_REGISTRY: IMAGE_GPU_REGISTRY }
    const labels = { "org.opencontainers.image.version": options.label ?? version }
    if (version === SOURCE_VERSION && moduleVersion === SOURCE_VERSION)
      return {
        packages: [
          { from: path.join(sourceDir, "sglang"), into: "site-packages" },
          { from: path.join(sourceDir, `sglang-${SOURCE_VERSION}.dist-info`), into: "site-packages" }
        ],
        env,
        labels,
        version
      } satisfies ImageContents
    const dir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-sglang-image-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    return yield* Effect.try({
      try: () => {
        const pkg = path.join(dir, "sglang")
        fs.cpSync(path.join(sourceDir, "sglang"), pkg, {
          recursive: true,
          filter: (source) => path.basename(source) !== "__pycache__"
        })
        fs.writeFileSync(path.join(pkg, "version.py"), `__version__ = "${moduleVersion}"\n`)
        const distInfo = path.join(dir, `sglang-${version}.dist-info`)
        fs.mkdirSync(distInfo)
        fs.writeFileSync(
          path.join(distInfo, "METADATA"),
          [
            "Metadata-Version: 2.1",
            "Name: sglang",
            `Version: ${version}`,
            "Summary: Stand-in SGLang for mlops end-to-end tests",
            ""
          ].join("\n")
        )
        fs.writeFileSync(path.join(distInfo, "INSTALLER"), "mlops-test\n")
        fs.writeFileSync(path.join(distInfo, "RECORD"), "")
        return {
          packages: [
            { from: pkg, into: "site-packages" },
            { from: distInfo, into: "site-packages" }
          ],
          env,
          labels,
          version
        } satisfies ImageContents
      },
      catch: (error) => new StandinError({ reason: `preparing the image contents: ${String(error)}` })
    })
  })

/**
 * Let the stand-in `nvidia-smi` in `venv` report the GPU memory of stand-in processes in the
 * containers of these engines (their directories: `DockerDaemon.dir`, `Podman.dir`; `*` for
 * any container on this machine) under their host pids. Without it, it sees none: tests of
 * plain-host launches running beside container tests must not see the containers' memory.
 */
export const seeContainers = (venv: string, engineDirs: ReadonlyArray<string>): void => {
  const registry = path.join(venv, "standin-gpu")
  fs.mkdirSync(registry, { recursive: true })
  fs.writeFileSync(path.join(registry, "containers"), engineDirs.map((d) => `${d}\n`).join(""))
}
