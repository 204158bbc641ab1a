/**
 * Runs the real `mlops` command tree in-process with a captured console: what it printed
 * (stdout and stderr lines) and the exit code `bin.ts` would use. The live side reads a
 * throwaway ssh_config and MLOPS_HOME, never the user's.
 */

import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Console, type Duration, Effect } from "effect"
import { main } from "../../src/Cli.js"

export interface Ran {
  readonly code: number
  readonly stdout: ReadonlyArray<string>
  readonly stderr: ReadonlyArray<string>
  /** stdout then stderr, as one text. */
  readonly text: string
}

const isolated = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-cli-test-"))
fs.writeFileSync(path.join(isolated, "ssh_config"), "Host lab-box\n  HostName 127.0.0.1\n  Port 2222\n")

/** Environment of every run: an empty-ish ssh_config and MLOPS_HOME in a temp dir. */
export const env: Record<string, string> = {
  MLOPS_SSH_CONFIG: path.join(isolated, "ssh_config"),
  MLOPS_HOME: path.join(isolated, "home")
}

let homes = 0

/** A new, empty MLOPS_HOME (so a new sim: the sim is kept under `$MLOPS_HOME/sim/`). */
export const freshHome = (): string => path.join(isolated, `home-${++homes}`)

const text = (args: ReadonlyArray<unknown>) =>
  args.map((a) => (typeof a === "string" ? a : String(a))).join(" ")

export interface RunOptions {
  /** Default: a fresh one per run (each run starts with a fresh sim). */
  readonly mlopsHome?: string
  /** Interrupt the command after this long (Ctrl-C), e.g. `logs -f`; `code` is then -1. */
  readonly interruptAfter?: Duration.DurationInput
  /** Settings over the default environment (e.g. a real test sshd's `MLOPS_SSH_CONFIG`). */
  readonly env?: Readonly<Record<string, string>>
}

/** `mlops <args...>` with a fresh MLOPS_HOME: a fresh sim, as if nothing ran before. */
export const mlops = (...args: ReadonlyArray<string>): Effect.Effect<Ran> => mlopsWith({}, ...args)

/**
 * Invocations sharing one MLOPS_HOME, like a user typing commands one after another: the sim
 * keeps its state from one to the next.
 */
export const session = (mlopsHome: string = freshHome()) => ({
  mlopsHome,
  stateFile: path.join(mlopsHome, "sim", "state.json"),
  mlops: (...args: ReadonlyArray<string>) => mlopsWith({ mlopsHome }, ...args),
  interrupted: (after: Duration.DurationInput, ...args: ReadonlyArray<string>) =>
    mlopsWith({ mlopsHome, interruptAfter: after }, ...args)
})

/** `mlops <args...>` with options. */
/** `mlops <args...>` against a real test sshd (its ssh_config) with `mlopsHome` kept across runs. */
export const mlopsOn =
  (sshConfig: string, mlopsHome: string) =>
  (...args: ReadonlyArray<string>): Effect.Effect<Ran> =>
    mlopsWith({ mlopsHome, env: { MLOPS_SSH_CONFIG: sshConfig, MLOPS_HOME: mlopsHome } }, ...args)

export const mlopsWith = (options: RunOptions, ...args: ReadonlyArray<string>): Effect.Effect<Ran> =>
  Effect.gen(function* () {
    const stdout: Array<string> = []
    const stderr: Array<string> = []
    const base = yield* Effect.console
    const captured: Console.Console = {
      ...base,
      log: (...a) => Effect.sync(() => void stdout.push(...text(a).split("\n"))),
      info: (...a) => Effect.sync(() => void stdout.push(...text(a).split("\n"))),
      error: (...a) => Effect.sync(() => void stderr.push(...text(a).split("\n"))),
      warn: (...a) => Effect.sync(() => void stderr.push(...text(a).split("\n"))),
      unsafe: {
        ...base.unsafe,
        log: (...a) => void stdout.push(...text(a).split("\n")),
        info: (...a) => void stdout.push(...text(a).split("\n")),
        error: (...a) => void stderr.push(...text(a).split("\n")),
        warn: (...a) => void stderr.push(...text(a).split("\n"))
      }
    }
    const runEnv = { ...env, ...options.env, MLOPS_HOME: options.mlopsHome ?? freshHome() }
    const run = main(["node", "mlops", ...args]).pipe(
      Console.withConsole(captured),
      Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(runEnv)))),
      Effect.provide(NodeContext.layer)
    )
    const code =
      options.interruptAfter === undefined
        ? yield* run
        : yield* run.pipe(
            Effect.timeoutTo({ duration: options.interruptAfter, onSuccess: (c) => c, onTimeout: () => -1 })
          )
    return { code, stdout, stderr, text: [...stdout, ...stderr].join("\n") }
  })

/** The story's first command (rules.md §9) on the simulated host. */
export const story: ReadonlyArray<string> = [
  "--model-path",
  "/root/models/Qwen3.6-27B",
  "--speculative-algorithm",
  "NEXTN",
  "--speculative-num-draft-tokens",
  "1",
  "--tp",
  "2"
]

/** Its two fixes. */
export const storyFixes: ReadonlyArray<string> = [
  "--mamba-scheduler-strategy",
  "extra_buffer",
  "--speculative-num-steps",
  "1",
  "--speculative-eagle-topk",
  "1"
]
