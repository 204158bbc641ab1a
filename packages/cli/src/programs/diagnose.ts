/** `mlops diagnose FILE|- [--host H]`: classify a server log, local, on a host, or from standard input. */
import type { FileSystem } from "@effect/platform"
import * as NodeStream from "@effect/platform-node/NodeStream"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Diagnose from "@mlops/serve/Diagnose"
import { Console, Effect, Option } from "effect"
import type { Parsed } from "../commands/diagnose.js"
import { CommandExit, UsageError } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import * as ExitCodes from "../ExitCodes.js"
import * as RenderFailure from "../render/failure.js"
import { bold, dim, green, TerminalStyle } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

const stdin = (logs: Effect.Effect.Success<typeof Engines.logs>) =>
  Diagnose.bytes(
    "stdin",
    NodeStream.fromReadable(
      () => process.stdin,
      (cause) => new Diagnose.LogUnreadable({ path: "stdin", reason: String(cause) })
    ),
    logs
  )

/** `SGLang 0.5.11 log`, `vLLM log`, `log` (engine unknown). */
const origin = (d: Diagnose.Diagnosis): string =>
  `${d.engine === "vllm" ? "vLLM " : d.engine === "sglang" ? "SGLang " : ""}${d.version === undefined ? "" : `${d.version} `}log`

export const diagnose = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const host = Option.getOrUndefined(parsed.host)
    const diagnosis = yield* handle(
      parsed.json,
      { host },
      Effect.suspend(
        (): Effect.Effect<Diagnose.Diagnosis, unknown, FileSystem.FileSystem | ConnectionPool> =>
          parsed.file === "-"
            ? host === undefined
              ? Effect.flatMap(Engines.logs, stdin)
              : Effect.fail(
                  new UsageError({
                    message: "- reads standard input here: it cannot be combined with --host"
                  })
                )
            : host === undefined
              ? Effect.flatMap(Engines.logs, (logs) => Diagnose.localFile(parsed.file, logs))
              : Effect.flatMap(Engines.logs, (logs) => Diagnose.remoteFile(host, parsed.file, logs))
      )
    )
    const failure = diagnosis.failure
    if (parsed.json) {
      yield* printJson({
        _tag: "Diagnosis",
        source: diagnosis.source,
        engine: diagnosis.engine ?? null,
        version: diagnosis.version ?? null,
        phase: diagnosis.phase,
        ready: diagnosis.ready,
        lines: diagnosis.lines,
        failure: failure === undefined ? null : RenderFailure.json(failure, { host })
      })
    } else if (failure === undefined) {
      yield* Console.log(
        `${green(style, "✓")} ${bold(style, "no failure found")} in ${diagnosis.source} (${origin(diagnosis)}, ${diagnosis.lines} lines); phase reached: ${diagnosis.phase}${diagnosis.ready ? " (ready)" : ""}`
      )
    } else {
      yield* Console.log(
        `${diagnosis.source}: ${origin(diagnosis)}, ${diagnosis.lines} lines ${dim(style, `(phase reached: ${diagnosis.phase})`)}`
      )
      yield* Console.log(RenderFailure.human(style, failure, { host }))
    }
    // a log that shows a failure is a finding, not an error of this command; but scripts want to know
    if (failure !== undefined) return yield* new CommandExit({ code: ExitCodes.fromFailure(failure) })
  })
