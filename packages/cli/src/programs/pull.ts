/** `mlops pull`: a job's files, fetched to this machine. */
import * as Job from "@mlops/serve/Job"
import { Console, Effect } from "effect"
import type { Parsed } from "../commands/pull.js"
import type { CommandExit } from "../commands/shared.js"
import { dim, green, TerminalStyle } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

const size = (bytes: number) =>
  bytes >= 2 ** 30
    ? `${(bytes / 2 ** 30).toFixed(1)} GiB`
    : bytes >= 2 ** 20
      ? `${(bytes / 2 ** 20).toFixed(1)} MiB`
      : `${bytes} bytes`

export const pull = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const pulled = yield* handle(
      parsed.json,
      { host: parsed.host },
      Job.pull(parsed.host, parsed.name, parsed.path, { into: parsed.to })
    )
    if (parsed.json) return yield* printJson({ _tag: "Pulled", ...pulled })
    yield* Console.log(
      `${green(style, "✓")} ${pulled.host}:${pulled.remote} → ${pulled.local}: ${pulled.fetched} of ${pulled.files} file(s) fetched (${size(pulled.bytes)}), ${pulled.upToDate} up to date`
    )
    if (pulled.skipped.length > 0)
      yield* Console.log(
        dim(
          style,
          `  not copied: ${pulled.skipped
            .slice(0, 5)
            .map((s) => `${s.path} (${s.reason})`)
            .join(", ")}${pulled.skipped.length > 5 ? ` and ${pulled.skipped.length - 5} more` : ""}`
        )
      )
  })
