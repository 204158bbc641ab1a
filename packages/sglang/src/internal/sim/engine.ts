/**
 * SGLang on the simulated host: its environment's files (`~/ml-env` with the release's
 * package files) and its Python program (probe, flag dump, argument check, the server).
 * @internal
 */
import type { SimulatedEngine } from "@mlops/serve/Engine"
import * as Catalogue from "../../Catalogue.js"
import { ready } from "../lifecycle/messages.js"
import * as Installed from "./installed.js"
import * as Python from "./python.js"

export const sim: SimulatedEngine = {
  prefix: Python.prefix,
  files: (version) => ({
    [`${Python.prefix}/bin/python`]: "#!simulated python\n",
    ...Installed.packageFiles(version ?? Installed.defaultVersion)
  }),
  programs: [Python.program],
  readyLine: ready(),
  versions: Catalogue.releases.map((r) => r.version),
  defaultVersion: Installed.defaultVersion
}
