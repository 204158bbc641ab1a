/**
 * `mlops launch --host H [options] -- <engine flags>`: everything after `--` reaches the engine
 * untouched. Human output follows the launch phase by phase; `--json` prints one NDJSON line
 * per event, the last one being the result (`Launched`) or the failure (with `_tag` and fix).
 *
 * Ctrl-C: stderr says whether the server keeps running and how to follow or stop it (with
 * `--stop-on-interrupt`, that it was stopped, confirmed on the host).
 */
import * as Hosts from "@mlops/core/Hosts"
import * as Launch from "@mlops/serve/Launch"
import type * as Placement from "@mlops/serve/Placement"
import * as Stop from "@mlops/serve/Stop"
import { Cause, Console, type Duration, Effect, Fiber, Option, Ref, Stream } from "effect"
import { autoFixAttempts, type Parsed } from "../commands/launch.js"
import { type CommandExit, MlopsWords, SglangFlags, UsageError } from "../commands/shared.js"
import * as Engines from "../Engines.js"
import * as Progress from "../render/progress.js"
import { type Style, TerminalStyle } from "../render/style.js"
import * as PlacementSpec from "./placementSpec.js"
import * as RuntimeSpec from "./runtimeSpec.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

/** `K=V` entries to a record; the first `=` splits. */
export const parseEnv = (entries: ReadonlyArray<string>): Effect.Effect<Record<string, string>, UsageError> =>
  Effect.suspend(() => {
    const env: Record<string, string> = {}
    for (const entry of entries) {
      const at = entry.indexOf("=")
      if (at <= 0) {
        // the entry may be a secret pasted without its name: say which one without showing it
        const shown = at === 0 ? `=${"*".repeat(3)}` : `${entry.slice(0, 2)}… (${entry.length} characters)`
        return Effect.fail(new UsageError({ message: `--env expects NAME=VALUE, got ${shown}` }))
      }
      env[entry.slice(0, at)] = entry.slice(at + 1)
    }
    return Effect.succeed(env)
  })

/** The parsed options with SGLang's flags (the words after `--`) and the host(s) settled. */
type WithFlags = Omit<Parsed, "host" | "hosts"> & {
  readonly host: string
  /** Every host, rank 0's first (one for a launch on one host). */
  readonly hosts: ReadonlyArray<string>
  readonly flags: ReadonlyArray<string>
}

/**
 * `--host H`, or `--hosts a,b[,…]` or `--hosts GROUP` (hosts.json's `groups`): rank 0's first;
 * `--host`, when also given, must be it.
 */
export const hostsOf = (parsed: Pick<Parsed, "host" | "hosts">) =>
  Effect.gen(function* () {
    const host = Option.getOrUndefined(parsed.host)
    if (Option.isNone(parsed.hosts)) {
      if (host === undefined)
        return yield* new UsageError({
          message: "give the host: --host H (or --hosts a,b for one deployment across several)"
        })
      return { host, hosts: [host] }
    }
    const given = parsed.hosts.value
      .split(",")
      .map((h) => h.trim())
      .filter((h) => h !== "")
    // one name that hosts.json's `groups` knows: its hosts
    const groups = given.length === 1 ? yield* Effect.flatMap(Hosts.Hosts, (h) => h.groups) : undefined
    const hosts = groups?.get(given[0]!) ?? given
    if (hosts.length === 0)
      return yield* new UsageError({ message: "--hosts expects host aliases: --hosts a,b" })
    if (host !== undefined && host !== hosts[0])
      return yield* new UsageError({
        message: `--host ${host} is not the first of --hosts ${hosts.join(",")}: rank 0 runs on the first; give --hosts alone`
      })
    return { host: hosts[0]!, hosts }
  })

const withRuntime = (runtime: Launch.LaunchRequest["runtime"]) => (runtime === undefined ? {} : { runtime })

/** The library request for these command-line options (`placement`, `runtime`: the specs their options give). */
export const toRequest = (
  parsed: WithFlags,
  engine: Launch.LaunchRequest["engine"],
  env: Record<string, string>,
  placement?: Placement.Spec,
  runtime?: Launch.LaunchRequest["runtime"]
): Launch.LaunchRequest => ({
  host: parsed.host,
  ...(parsed.hosts.length > 1 ? { hosts: parsed.hosts } : {}),
  ...(Option.isSome(parsed.rendezvousPort) ? { rendezvousPort: parsed.rendezvousPort.value } : {}),
  engine,
  argv: parsed.flags,
  ...(placement === undefined ? {} : { placement }),
  ...withRuntime(runtime),
  ...(Option.isSome(parsed.name) ? { name: parsed.name.value } : {}),
  ...(Object.keys(env).length > 0 ? { env } : {}),
  preflight: !parsed.noPreflight,
  ...(parsed.remoteCheck ? { remoteCheck: true } : parsed.noRemoteCheck ? { remoteCheck: false } : {}),
  flagsFromHost: parsed.flagsFromHost,
  autoFix: parsed.autoFix ? autoFixAttempts : 0,
  allowBusyGpus: parsed.allowBusyGpus,
  replace: parsed.replace,
  stopOnInterrupt: parsed.stopOnInterrupt,
  tunnel: parsed.tunnel
})

/** Live mode writes to the terminal as is: its text carries the cursor moves and newlines. */
const write = (text: string): void => {
  if (text !== "") process.stdout.write(text)
}

const printEvents = <R>(
  style: Style,
  asJson: boolean,
  context: Progress.Context,
  events: Stream.Stream<Launch.LaunchProgress, Launch.LaunchError, R>
) => {
  if (asJson) return Stream.runForEach(events, printJson)
  if (!style.live) {
    return Stream.runForEach(events, (event) =>
      Effect.forEach(Progress.plain(style, event, context), (line) => Console.log(line), { discard: true })
    )
  }
  return Effect.gen(function* () {
    const clock = yield* Effect.clock
    const base = yield* Effect.console
    // the view and the screen change in one synchronous step, whichever fiber prints
    let state = Progress.initial(yield* clock.currentTimeMillis)
    const show = (
      step: (
        view: Progress.ViewState,
        nowMs: number
      ) => { readonly text: string; readonly state: Progress.ViewState }
    ) =>
      Effect.sync(() => {
        const next = step(state, clock.unsafeCurrentTimeMillis())
        state = next.state
        write(next.text)
      })
    const draw = (event: Launch.LaunchProgress | undefined) =>
      show((view, now) => Progress.live(style, view, event, now, context))
    // a failure or Ctrl-C leaves the phases reached on screen, without the running clock
    const freeze = (ending: "failed" | "interrupted") =>
      show((view, now) => Progress.freeze(style, view, now, ending))
    // what the launch's own code prints meanwhile (the sim's warnings) goes above the block: the
    // block is taken off the screen and drawn again under it, so its next rewind erases the block
    const aside =
      (method: "log" | "info" | "warn" | "error" | "debug") =>
      (...args: ReadonlyArray<unknown>): void => {
        const around = Progress.around(style, state, clock.unsafeCurrentTimeMillis())
        state = around.state
        write(around.before)
        base.unsafe[method](...args)
        write(around.after)
      }
    const unsafe = {
      ...base.unsafe,
      log: aside("log"),
      info: aside("info"),
      warn: aside("warn"),
      error: aside("error"),
      debug: aside("debug")
    }
    const liveConsole: Console.Console = {
      ...base,
      log: (...args) => Effect.sync(() => unsafe.log(...args)),
      info: (...args) => Effect.sync(() => unsafe.info(...args)),
      warn: (...args) => Effect.sync(() => unsafe.warn(...args)),
      error: (...args) => Effect.sync(() => unsafe.error(...args)),
      debug: (...args) => Effect.sync(() => unsafe.debug(...args)),
      unsafe
    }
    // a tick redraws the running clock; it ends with the events
    const ticks = Stream.tick("1 second").pipe(Stream.map(() => undefined))
    yield* Stream.runForEach(Stream.merge(events, ticks, { haltStrategy: "left" }), draw).pipe(
      Console.withConsole(liveConsole),
      Effect.onError((cause) => freeze(Cause.isInterruptedOnly(cause) ? "interrupted" : "failed"))
    )
  })
}

/** What stderr says after Ctrl-C, from what the launch had reached. */
/**
 * A timeout that holds on the way out of an interruption too (`onInterrupt` runs its handler
 * uninterruptibly, where `Effect.timeout` alone cannot end the wait).
 */
const bounded =
  (duration: Duration.DurationInput) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(Effect.interruptible, Effect.timeout(duration))

const interrupted = (
  parsed: WithFlags,
  name: string | undefined,
  server: string | undefined,
  ready: boolean
) =>
  Effect.gen(function* () {
    // the terminal echoed `^C` where the cursor was: say it on a clean line
    if (process.stderr.isTTY === true) process.stderr.write("\r\x1b[2K")
    const hostName = parsed.host
    if (server === undefined || name === undefined) {
      return yield* Console.error(`interrupted before a server was started: nothing runs on ${hostName}`)
    }
    const follow = `mlops logs --host ${hostName} --name ${name} -f`
    const stop = `mlops stop --host ${hostName} --name ${name}`
    if (ready && parsed.stopOnInterrupt) {
      // the launch itself is over (only the tunnel was open): stop it as `mlops stop` does
      const stopped = yield* Stop.stop(hostName, name).pipe(bounded("60 seconds"), Effect.option)
      return yield* Console.error(
        Option.isSome(stopped)
          ? `tunnel closed: ${name} (${server}) was stopped on ${hostName} (${stopped.value.outcome}); no GPU memory held`
          : [
              `tunnel closed: could not confirm that ${name} (${server}) stopped on ${hostName}`,
              `  check: mlops status --host ${hostName}`,
              `  stop it: ${stop}`
            ].join("\n")
      )
    }
    if (!parsed.stopOnInterrupt || ready) {
      return yield* Console.error(
        [
          `${ready ? "tunnel closed" : "interrupted"}: ${name} (${server}) keeps running on ${hostName}`,
          `  follow it: ${follow}`,
          `  stop it:   ${stop}`
        ].join("\n")
      )
    }
    // the launch stopped it on the way out (--stop-on-interrupt): confirm with its placement
    const alive = yield* Stop.isRunning(hostName, name).pipe(bounded("15 seconds"), Effect.option)
    if (Option.isSome(alive) && !alive.value) {
      return yield* Console.error(`interrupted: ${name} (${server}) was stopped on ${hostName}`)
    }
    return yield* Console.error(
      [
        `interrupted: could not confirm that ${name} (${server}) stopped on ${hostName}`,
        `  check: mlops status --host ${hostName}`,
        `  stop it: ${stop}`
      ].join("\n")
    )
  })

export const launch = (options: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const hosts = yield* handle(options.json, {}, hostsOf(options))
    const parsed = { ...options, ...hosts, flags: yield* SglangFlags }
    const style = yield* TerminalStyle
    const words = yield* MlopsWords
    const context = { host: parsed.host, argv: parsed.flags, prefix: words, tunnel: parsed.tunnel }
    // what the launch reached, for the Ctrl-C message
    const reached = yield* Ref.make<{
      readonly name?: string
      /** What runs it (`pid 1012`, a batch job's id), once started. */
      readonly server?: string
      readonly ready?: boolean
    }>({})
    const track = (event: Launch.LaunchProgress) =>
      Ref.update(reached, (r) =>
        event._tag === "Connected"
          ? { ...r, name: event.name }
          : // across several hosts, rank 0's (the one the messages name with its host)
            event._tag === "Spawned" && (event.rank === undefined || event.rank.rank === 0)
            ? { ...r, server: event.server.label }
            : event._tag === "Launched"
              ? { ...r, server: r.server ?? event.deployment.server.label, ready: true }
              : r
      )
    yield* handle(
      parsed.json,
      context,
      Effect.gen(function* () {
        const env = yield* parseEnv(parsed.env)
        if (parsed.flags.length === 0) {
          return yield* Effect.fail(
            new UsageError({
              message:
                "no engine flags: put them after `--`, e.g. mlops launch --host sim -- --model-path /m (SGLang) or mlops launch --host sim --engine vllm -- Qwen/Qwen2.5-7B (vLLM)"
            })
          )
        }
        if (parsed.remoteCheck && parsed.noRemoteCheck) {
          return yield* new UsageError({ message: "give --remote-check or --no-remote-check, not both" })
        }
        const request = toRequest(
          parsed,
          yield* Engines.engineOf(parsed.engine),
          env,
          yield* PlacementSpec.specOf(parsed),
          yield* RuntimeSpec.specOf(parsed)
        )
        yield* printEvents(style, parsed.json, context, Launch.launch(request).pipe(Stream.tap(track)))
      })
    ).pipe(
      Effect.onInterrupt(() =>
        // a fresh interruptible fiber: inside the (uninterruptible) handler a timeout could not fire
        Effect.flatMap(Ref.get(reached), (r) => interrupted(parsed, r.name, r.server, r.ready === true)).pipe(
          Effect.interruptible,
          Effect.forkDaemon,
          Effect.flatMap(Fiber.join),
          Effect.ignore
        )
      )
    )
  })
