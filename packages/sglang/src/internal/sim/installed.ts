/**
 * Which SGLang release the sim has installed: the `__version__` in its `sglang/__init__.py`
 * (the sim is built with one; `Simulator.makeHostSpec({ sglangVersion })` picks it), and that
 * release's shipped catalogue, which its parser and checks use.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import { Effect } from "effect"
import * as Catalogue from "../../Catalogue.js"
import { sglangDir } from "./paths.js"

export const defaultVersion = "0.5.11"

/** The files a sim with this release has in its package directory. */
export const packageFiles = (version: string): Readonly<Record<string, string>> => ({
  [`${sglangDir}/__init__.py`]: `__version__ = "${version}"\n`,
  [`${sglangDir}/srt/server_args.py`]: `# the simulated server_args.py of SGLang ${version}\n`
})

export interface Installed {
  readonly version: string
  readonly catalogue: Catalogue.Catalogue
}

/** The installed release (the default when the file says nothing a shipped release is called). */
export const installed = (ctx: FakeHost.ProgramContext): Effect.Effect<Installed> =>
  Effect.map(ctx.fs.readText(`${sglangDir}/__init__.py`), (text) => {
    const version = /__version__ = "([^"]+)"/.exec(text ?? "")?.[1] ?? defaultVersion
    const catalogue = Catalogue.get(version)
    return catalogue === undefined
      ? { version: defaultVersion, catalogue: Catalogue.get(defaultVersion)! }
      : { version: catalogue.version, catalogue }
  })
