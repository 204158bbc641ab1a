/**
 * What the terminal tests share: a fresh `sim` per terminal (its own MLOPS_HOME), the README's
 * way of running mlops (`npm run mlops -- ...` from the repository root), and readers of what
 * the screen shows.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterEach, beforeAll } from "@effect/vitest"
import { mlopsBin, open, type Terminal } from "../support/Terminal.js"

export const repoRoot = path.resolve(path.dirname(mlopsBin), "..", "..", "..")

/** The launch from the quickstart that reaches ready (two GPUs, no speculative decoding). */
export const readyFlags = "--model-path /root/models/Qwen3.6-27B --tp 2"
/** The sim's clock 5× faster than its default (a launch in under a second) where loading time does not matter. */
export const fast = "--env MLOPS_SIM_TIME_SCALE=0.01"
/** The incident's command: SGLang refuses it (offline: both problems; at runtime: the first). */
export const storyFlags =
  "--model-path /root/models/Qwen3.6-27B --speculative-algorithm NEXTN --speculative-num-draft-tokens 1 --tp 2"

/** Build the bundle once, so a terminal test does not time a rebuild. */
const buildOnce = () => {
  const isolated = isolatedEnv()
  const ran = spawnSync(mlopsBin, ["hosts"], {
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, ...isolated }
  })
  fs.rmSync(isolated.MLOPS_HOME, { recursive: true, force: true })
  if (ran.status !== 0) throw new Error(`bin/mlops hosts failed: ${ran.stderr}`)
}

let homes = 0

/** A throwaway MLOPS_HOME and an empty ssh_config: a fresh sim, none of the user's hosts. */
export const isolatedEnv = (): { readonly MLOPS_HOME: string; readonly MLOPS_SSH_CONFIG: string } => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `mlops-term-${++homes}-`))
  const sshConfig = path.join(home, "ssh_config")
  fs.writeFileSync(sshConfig, "")
  return { MLOPS_HOME: home, MLOPS_SSH_CONFIG: sshConfig }
}

/**
 * A 160×50 terminal with a fresh sim, colour on unless `env` says otherwise, and `mlops` on
 * PATH (the README's "link it onto your PATH"), so a command mlops prints is pasted as is.
 */
export const terminal = (env: Readonly<Record<string, string>> = {}): Terminal => {
  const isolated = isolatedEnv()
  return open(
    { NO_COLOR: "", ...isolated, ...env, PATH: `${path.dirname(mlopsBin)}:${process.env.PATH ?? ""}` },
    [isolated.MLOPS_HOME]
  )
}

/**
 * For a test file: build the bundle before its tests, and close each test's terminal after
 * it (also when it failed). Returns how a test opens its terminal.
 */
export const terminals = () => {
  let current: Terminal | undefined
  beforeAll(buildOnce, 180_000)
  afterEach(() => current?.close())
  return (env?: Readonly<Record<string, string>>): Terminal => {
    current?.close()
    current = terminal(env)
    return current
  }
}

/** `npm run mlops -- <args>`, typed into the terminal (from the repository root). */
export const mlops = (t: Terminal, args: string) => t.run(`cd ${repoRoot} && npm run mlops -- ${args}`)

/** The lines of a screen or transcript, trailing spaces dropped. */
export const linesOf = (text: string): ReadonlyArray<string> => text.split("\n").map((l) => l.trimEnd())

/** Index of the first line matching `pattern` (-1 when none). */
export const lineIndex = (text: string, pattern: RegExp): number =>
  linesOf(text).findIndex((line) => pattern.test(line))

/** How many lines match `pattern`. */
export const count = (text: string, pattern: RegExp): number =>
  linesOf(text).filter((line) => pattern.test(line)).length

/** The live block's clock line: `  weights-loading · 1.2 s elapsed`. */
export const clockLine = /· [\d.]+ (ms|s|min)( \d+ s)? elapsed$/

/** The seconds a clock line shows (the last one on screen). */
export const clockSeconds = (screen: string): number | undefined => {
  const clock = linesOf(screen)
    .filter((line) => clockLine.test(line))
    .at(-1)
  const shown = clock === undefined ? undefined : /· ([\d.]+) (ms|s)/.exec(clock)
  return shown === undefined || shown === null ? undefined : Number(shown[1]) / (shown[2] === "ms" ? 1000 : 1)
}

/** The last line that is not the `[exit N]` marker or a shell prompt. */
export const lastOutputLine = (text: string): string =>
  linesOf(text)
    .filter((line) => line !== "" && !/^\[exit \d+\]$/.test(line) && line !== "$" && !line.startsWith("$ "))
    .at(-1) ?? ""
