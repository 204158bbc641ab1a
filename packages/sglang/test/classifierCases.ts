/**
 * The expected verdict for every fixture log in fixtures/logs/, and helpers to read them.
 */
import { readFileSync } from "node:fs"
import type { LaunchEvent } from "@mlops/serve/LaunchEvent"
import { containersCases } from "./classifierCases/containers.js"
import { launcherAndMemoryCases } from "./classifierCases/launcherAndMemory.js"
import { ranksAndExitsCases } from "./classifierCases/ranksAndExits.js"
import type { Expected } from "./classifierCases/shared.js"

export type { Expected } from "./classifierCases/shared.js"
export { exit1, killed } from "./classifierCases/shared.js"

export const DIR = new URL("./fixtures/logs/", import.meta.url)
export const read = (file: string) => readFileSync(new URL(file, DIR), "utf8")

export const phasesOf = (events: ReadonlyArray<LaunchEvent>) =>
  events.flatMap((e) => (e._tag === "PhaseStarted" ? [e.phase] : []))

export const table: Record<string, Expected> = {
  ...launcherAndMemoryCases,
  ...ranksAndExitsCases,
  ...containersCases
}

export const successes = ["success-qwen3-tp1.log", "success-hybrid-mtp-tp2.log", "success-messy-tty.log"]
export const stalledOnly = ["stalled-silent.log"]
