/**
 * `mlops rm --host H --name N [--name M]... | --all`: remove the records of deployments that
 * have ended (their directory on the host, log included), so `status` no longer lists them.
 * A running deployment is never removed (`DeploymentRunning`, exit 7: stop it first); with
 * `--all` the running ones are kept and named. An unreachable host is an error (exit 6).
 */
import * as Remove from "@mlops/serve/Remove"
import { Console, Effect } from "effect"
import type { Parsed } from "../commands/rm.js"
import { type CommandExit, UsageError } from "../commands/shared.js"
import { green, TerminalStyle, yellow } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

const removedLine = (r: Remove.Removed) =>
  `removed ${r.name} on ${r.host} (${r.ended}${r.server === undefined ? "" : `, ${r.server}`}): ${r.path}`

export const rm = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const context = { host: parsed.host }
    if (parsed.all === parsed.name.length > 0) {
      return yield* handle(
        parsed.json,
        context,
        Effect.fail(
          new UsageError({ message: "give --name N (repeatable) or --all, not both and not neither" })
        )
      )
    }
    if (!parsed.all) {
      const removed = yield* handle(parsed.json, context, Remove.remove(parsed.host, parsed.name))
      if (parsed.json) return yield* printJson({ _tag: "Removed", removed, kept: [] })
      for (const r of removed) yield* Console.log(`${green(style, "✓")} ${removedLine(r)}`)
      return
    }
    const result = yield* handle(parsed.json, context, Remove.removeEnded(parsed.host))
    if (parsed.json) {
      return yield* printJson({
        _tag: "Removed",
        removed: result.removed,
        kept: result.kept.map((k) => ({ _tag: k._tag, name: k.name, message: k.message }))
      })
    }
    for (const r of result.removed) yield* Console.log(`${green(style, "✓")} ${removedLine(r)}`)
    for (const k of result.kept) {
      yield* Console.log(
        `${yellow(style, "!")} kept ${k.name} on ${k.host}: ${k._tag === "DeploymentRunning" ? (k.server === undefined ? "being started" : `running (${k.server})`) : k.message}`
      )
    }
    if (result.removed.length === 0 && result.kept.length === 0) {
      yield* Console.log(`no deployments on ${parsed.host}`)
    }
  })
