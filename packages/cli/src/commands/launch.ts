/**
 * `mlops launch --host H [options] -- <sglang flags>`: everything after `--` reaches SGLang
 * untouched. Human output follows the launch phase by phase; `--json` prints one NDJSON line
 * per event, the last one being the result (`Launched`) or the failure (with `_tag` and fix).
 */
import { Command, Options } from "@effect/cli"
import * as Launch from "@mlops/sglang/Launch"
import { Clock, Console, Effect, Option, Ref, Stream } from "effect"
import * as Progress from "../render/progress.js"
import { type Style, TerminalStyle } from "../render/style.js"
import { handle, host, json, MlopsWords, printJson, SglangFlags, UsageError } from "./shared.js"

/** Relaunches `--auto-fix` allows. */
export const autoFixAttempts = 3

const options = {
  host,
  name: Options.text("name").pipe(
    Options.optional,
    Options.withDescription("Deployment name (default: from the model)")
  ),
  env: Options.text("env").pipe(
    Options.repeated,
    Options.withDescription("K=V environment for SGLang (repeatable)")
  ),
  json,
  autoFix: Options.boolean("auto-fix").pipe(
    Options.withDescription(`Apply a classified failure's fix and relaunch (up to ${autoFixAttempts} times)`)
  ),
  noPreflight: Options.boolean("no-preflight").pipe(
    Options.withDescription("Skip host probes and the offline rule check; meet problems at runtime")
  ),
  remoteCheck: Options.boolean("remote-check").pipe(
    Options.withDescription(
      "Also run the host's own SGLang argument parsing before launching (default: only for a version whose rules mlops has not verified)"
    )
  ),
  noRemoteCheck: Options.boolean("no-remote-check").pipe(
    Options.withDescription("Never run the host's own argument parsing, even for an unverified version")
  ),
  flagsFromHost: Options.boolean("flags-from-host").pipe(
    Options.withDescription(
      "Read the flags from the host's own SGLang parser, even for a release mlops ships"
    )
  ),
  replace: Options.boolean("replace").pipe(Options.withDescription("Replace a deployment of the same name")),
  stopOnInterrupt: Options.boolean("stop-on-interrupt").pipe(
    Options.withDescription("Stop the server on Ctrl-C (default: it keeps running)")
  ),
  tunnel: Options.boolean("tunnel").pipe(
    Options.withDescription("Keep a local tunnel to the server open until Ctrl-C")
  )
}

/** `K=V` entries to a record; the first `=` splits. */
export const parseEnv = (entries: ReadonlyArray<string>): Effect.Effect<Record<string, string>, UsageError> =>
  Effect.suspend(() => {
    const env: Record<string, string> = {}
    for (const entry of entries) {
      const at = entry.indexOf("=")
      if (at <= 0)
        return Effect.fail(new UsageError({ message: `--env expects K=V, got ${JSON.stringify(entry)}` }))
      env[entry.slice(0, at)] = entry.slice(at + 1)
    }
    return Effect.succeed(env)
  })

type Parsed = {
  readonly host: string
  readonly name: Option.Option<string>
  readonly env: ReadonlyArray<string>
  readonly json: boolean
  readonly autoFix: boolean
  readonly noPreflight: boolean
  readonly remoteCheck: boolean
  readonly noRemoteCheck: boolean
  readonly flagsFromHost: boolean
  readonly replace: boolean
  readonly stopOnInterrupt: boolean
  readonly tunnel: boolean
  readonly flags: ReadonlyArray<string>
}

/** The library request for these command-line options. */
export const toRequest = (parsed: Parsed, env: Record<string, string>): Launch.LaunchRequest => ({
  host: parsed.host,
  argv: parsed.flags,
  ...(Option.isSome(parsed.name) ? { name: parsed.name.value } : {}),
  ...(Object.keys(env).length > 0 ? { env } : {}),
  preflight: !parsed.noPreflight,
  ...(parsed.remoteCheck ? { remoteCheck: true } : parsed.noRemoteCheck ? { remoteCheck: false } : {}),
  flagsFromHost: parsed.flagsFromHost,
  autoFix: parsed.autoFix ? autoFixAttempts : 0,
  replace: parsed.replace,
  stopOnInterrupt: parsed.stopOnInterrupt,
  tunnel: parsed.tunnel
})

const printEvents = <R>(
  style: Style,
  asJson: boolean,
  events: Stream.Stream<Launch.LaunchProgress, Launch.LaunchError, R>
) => {
  if (asJson) return Stream.runForEach(events, printJson)
  if (!style.live) {
    return Stream.runForEach(events, (event) =>
      Effect.forEach(Progress.plain(style, event), (line) => Console.log(line), { discard: true })
    )
  }
  return Effect.gen(function* () {
    const start = yield* Clock.currentTimeMillis
    const state = yield* Ref.make(Progress.initial(start))
    const draw = (event: Launch.LaunchProgress | undefined) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const next = Progress.live(style, yield* Ref.get(state), event, now)
        yield* Ref.set(state, next.state)
        if (next.text !== "") yield* Console.log(next.text)
      })
    // a tick redraws the running clock; it ends with the events
    const ticks = Stream.tick("1 second").pipe(Stream.map(() => undefined))
    yield* Stream.runForEach(Stream.merge(events, ticks, { haltStrategy: "left" }), draw)
  })
}

export const launch = Command.make("launch", options, (options) =>
  Effect.gen(function* () {
    const parsed = { ...options, flags: yield* SglangFlags }
    const style = yield* TerminalStyle
    const context = { host: parsed.host, argv: parsed.flags, prefix: yield* MlopsWords }
    yield* handle(
      parsed.json,
      context,
      Effect.gen(function* () {
        const env = yield* parseEnv(parsed.env)
        if (parsed.flags.length === 0) {
          return yield* Effect.fail(
            new UsageError({
              message: "no SGLang flags: put them after `--`, e.g. mlops launch --host sim -- --model-path /m"
            })
          )
        }
        if (parsed.remoteCheck && parsed.noRemoteCheck) {
          return yield* new UsageError({ message: "give --remote-check or --no-remote-check, not both" })
        }
        const request = toRequest(parsed, env)
        if (parsed.tunnel && !parsed.json) {
          yield* Console.log("the tunnel stays open until Ctrl-C")
        }
        yield* printEvents(style, parsed.json, Launch.launch(request))
      })
    )
  })
).pipe(
  Command.withDescription(
    "Start an SGLang server on a host and follow it to ready. SGLang's flags go after `--`, exactly as SGLang takes them: mlops launch --host sim -- --model-path /root/models/Qwen3.6-27B --tp 2"
  )
)
