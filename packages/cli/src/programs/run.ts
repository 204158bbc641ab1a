/** `mlops run`: a job on a host, followed to its end (or `--detach`ed once started). */
import * as Job from "@mlops/serve/Job"
import { Console, Effect, Option, Stream } from "effect"
import type { Parsed } from "../commands/run.js"
import { CommandExit, SglangFlags, UsageError } from "../commands/shared.js"
import * as ExitCodes from "../ExitCodes.js"
import * as RenderFailure from "../render/failure.js"
import { bold, dim, green, red, TerminalStyle, yellow } from "../render/style.js"
import { parseEnv } from "./launch.js"
import * as RuntimeSpec from "./runtimeSpec.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"
import * as SlurmPlacementOptions from "./slurmPlacement.js"

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** `0,1` → [0, 1], or a usage error naming the option. */
const gpuIdsOf = (text: string) =>
  /^\d+(,\d+)*$/.test(text.trim())
    ? Effect.succeed(text.trim().split(",").map(Number))
    : Effect.fail(
        new UsageError({
          message: `--gpu-ids ${text}: give GPU indices as nvidia-smi numbers them, e.g. --gpu-ids 0,1`
        })
      )

export const run = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const words = yield* SglangFlags
    const request = yield* handle(
      parsed.json,
      { host: parsed.host },
      Effect.gen(function* () {
        const [program, ...args] = words
        if (program === undefined)
          return yield* new UsageError({
            message: `no command to run: give it after --, e.g. mlops run --host ${parsed.host} --gpus 1 -- python train.py`
          })
        const env = yield* parseEnv(parsed.env)
        const gpuIds = Option.isSome(parsed.gpuIds) ? yield* gpuIdsOf(parsed.gpuIds.value) : undefined
        const placement = yield* SlurmPlacementOptions.specOf(parsed)
        const runtime = yield* RuntimeSpec.specOf(parsed)
        return {
          host: parsed.host,
          argv: [program, ...args] as const,
          env,
          wait: parsed.wait,
          follow: !parsed.detach,
          ...(Option.isSome(parsed.name) ? { name: parsed.name.value } : {}),
          ...(Option.isSome(parsed.gpus) ? { gpus: parsed.gpus.value } : {}),
          ...(gpuIds === undefined ? {} : { gpuIds }),
          ...(placement === undefined ? {} : { placement }),
          ...(runtime === undefined ? {} : { runtime }),
          ...(Option.isSome(parsed.sync)
            ? { sync: { local: parsed.sync.value, include: parsed.include } }
            : {})
        } satisfies Job.JobRequest
      })
    )
    const said = (line: string) => Console.error(line)
    // Ctrl-C while following: the job goes on (it is detached); say how to find it again
    let submitted: { readonly name: string; readonly server: string } | undefined
    const interrupted = Effect.suspend(() =>
      said(
        submitted === undefined
          ? `\ninterrupted before the job was started: nothing runs on ${parsed.host}`
          : [
              // on a line of its own: the terminal echoed ^C after the job's last output
              "",
              `interrupted: job ${submitted.name} (${submitted.server}) keeps running on ${parsed.host}`,
              `  follow it: mlops logs --host ${parsed.host} --name ${submitted.name} -f`,
              `  stop it:   mlops stop --host ${parsed.host} --name ${submitted.name}`
            ].join("\n")
      )
    )
    const failed = yield* handle(
      parsed.json,
      { host: parsed.host },
      Job.run(request).pipe(
        Stream.runForEach((event) => {
          if (event._tag === "Submitted") submitted = { name: event.name, server: event.server.label }
          // NDJSON: every event, the job's own lines included (`Output`)
          if (parsed.json) return printJson(event)
          switch (event._tag) {
            case "Preparing":
              return said(`${dim(style, "·")} ${event.step}: ${event.detail}`)
            case "Connected":
              return said(
                `${green(style, "✓")} connected to ${event.host} as job ${bold(style, event.name)} ${dim(style, `${event.elapsedMs} ms`)}`
              )
            case "Synced":
              return said(
                `${green(style, "✓")} synced ${event.local}: ${event.files} files, ${event.sent} sent (${event.bytes} bytes), ${event.deleted} deleted ${dim(style, seconds(event.elapsedMs))}${event.skipped.length === 0 ? "" : `\n  left out: ${event.skipped.slice(0, 5).join(", ")}${event.skipped.length > 5 ? ` and ${event.skipped.length - 5} more` : ""} (--include PATTERN sends one)`}`
              )
            case "Submitted":
              return said(
                `${green(style, "✓")} ${event.server.started} in ${event.runDir}: ${event.commandLine}\n  in ${event.runsIn}`
              )
            case "Queued":
              return said(
                `${yellow(style, "…")} queued behind ${event.behind}: it starts when its GPUs are free (the queue is on the host; Ctrl-C leaves it waiting)`
              )
            case "Started":
              return said(
                `${green(style, "✓")} running on ${event.gpus.length === 0 ? "no GPU (ask with --gpus K)" : `GPU ${event.gpus.join(",")}`} ${dim(style, seconds(event.elapsedMs))}`
              )
            case "State":
              return said(`${dim(style, "·")} ${event.state}`)
            case "Output":
              return Console.log(event.line)
            case "Disconnected":
              return said(
                `${yellow(style, "⚠")} connection lost (${event.reason}); the job keeps running, reconnecting…`
              )
            case "Reconnected":
              return said(`${green(style, "✓")} reconnected after ${seconds(event.downMs)}`)
            case "Finished":
              return said(
                `${green(style, "✓")} ${bold(style, `${event.job.name} ${event.job.state}`)} ${dim(style, seconds(event.elapsedMs))}`
              )
            case "Log":
              return Effect.void
          }
        }),
        Effect.as(undefined),
        // a failed job is rendered below with its own classified failure
        Effect.catchTag("JobFailed", (failure) => Effect.succeed(failure))
      )
    ).pipe(Effect.onInterrupt(() => interrupted))
    if (failed === undefined) return
    if (parsed.json) yield* printJson(RenderFailure.json(failed, { host: parsed.host }))
    else {
      yield* said(
        `${red(style, "✗")} ${bold(style, failed.message.slice(0, failed.message.indexOf(":")))} ${dim(style, "[JobFailed]")}`
      )
      yield* said(RenderFailure.human(style, failed.failure, { host: parsed.host }))
      yield* said(`  log: mlops logs --host ${failed.host} --name ${failed.name}`)
    }
    return yield* new CommandExit({ code: ExitCodes.fromFailure(failed) })
  })
