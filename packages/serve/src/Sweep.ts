/**
 * `sweep`: engine-flag variants (speculative steps/topk/draft tokens, or none) × concurrencies.
 * Every variant is checked first, against the host as `check --host` does, so a variant the
 * engine would refuse costs no GPU time (it is reported with its violations and skipped);
 * then each accepted variant in turn is launched (as `<name>-<n>`), benchmarked at every
 * concurrency, and stopped. A variant that fails to start or dies during its run is reported
 * with its failure and the sweep goes on with the next; one whose server cannot be stopped ends
 * it (`Aborted`).
 *
 * @since 0.1.0
 */
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import { Cause, Clock, Effect, Stream } from "effect"
import * as Bench from "./Bench.js"
import * as Check from "./Check.js"
import type * as Deployment from "./Deployment.js"
import type { Registry } from "./Engine.js"
import { boundedCleanup } from "./internal/cleanup.js"
import * as Launch from "./Launch.js"
import type { Spec as PlacementSpec } from "./Placement.js"
import type { Spec as RuntimeSpec } from "./Runtime.js"
import * as Secrets from "./Secrets.js"
import * as Stop from "./Stop.js"

/** One point of the sweep: flags added to the base command. @category models */
export interface Variant {
  /** How tables and the chart name it (`mtp-1`, `off`). */
  readonly label: string
  readonly flags: ReadonlyArray<string>
}

/** @category models */
export interface SweepRequest {
  readonly host: string
  readonly engines: Registry
  /** The flags every variant shares (the model, tp, ...). */
  readonly argv: ReadonlyArray<string>
  readonly variants: ReadonlyArray<Variant>
  /** Deployment names are `<name>-1`, `<name>-2`, ... in the variants' order. */
  readonly name: string
  readonly env?: Readonly<Record<string, string>>
  readonly runtime?: RuntimeSpec
  readonly placement?: PlacementSpec
  /** What each variant's benchmark runs (concurrencies, lengths, requests). */
  readonly bench: Bench.BenchOptions
}

/** How one variant went. @category models */
export type VariantOutcome =
  | {
      readonly _tag: "Refused"
      readonly variant: Variant
      /** The check's failure (`LaunchRulesViolated`, `UnknownFlag`, ...) and its message. */
      readonly error: string
      readonly reason: string
    }
  | {
      readonly _tag: "Failed"
      readonly variant: Variant
      readonly name: string
      /** Where it failed: starting or during its benchmark. */
      readonly stage: "launch" | "bench"
      readonly error: string
      readonly reason: string
    }
  | {
      readonly _tag: "Measured"
      readonly variant: Variant
      readonly name: string
      readonly timeToReady: Deployment.TimeToReady | undefined
      readonly result: Bench.BenchResult
    }

/** What a sweep reports as it goes (a CLI prints them). @category models */
export type SweepEvent =
  | { readonly _tag: "Checked"; readonly variant: Variant; readonly refused: string | undefined }
  | { readonly _tag: "Launching"; readonly variant: Variant; readonly name: string }
  | { readonly _tag: "Benchmarking"; readonly variant: Variant; readonly name: string }
  | { readonly _tag: "Done"; readonly outcome: VariantOutcome }
  /** A variant's server could not be stopped: the sweep ends here. */
  | { readonly _tag: "Aborted"; readonly name: string; readonly error: string; readonly reason: string }

/** The whole sweep (secret values shown as `***`). @category models */
export interface SweepResult {
  readonly host: string
  readonly name: string
  readonly argv: ReadonlyArray<string>
  readonly concurrency: ReadonlyArray<number>
  readonly startedAt: string
  readonly outcomes: ReadonlyArray<VariantOutcome>
  /** Set when a server could not be stopped and the sweep ended early. */
  readonly aborted: { readonly name: string; readonly error: string; readonly reason: string } | undefined
}

const reasonOf = (error: unknown): { readonly error: string; readonly reason: string } => {
  const tag =
    typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : "Error"
  return { error: tag, reason: error instanceof Error ? error.message : String(error) }
}

/** One event as a stream. */
const say = (event: SweepEvent): Stream.Stream<SweepEvent> => Stream.succeed(event)

/** A stop bounded in time even on the way out of an interrupted sweep (a dead connection). */
const stopBounded = (host: string, name: string) =>
  boundedCleanup(Stop.stop(host, name).pipe(Effect.timeout("2 minutes")))

/**
 * The sweep as events, each variant's outcome as it ends. Every variant is checked before any
 * starts. A variant's server is stopped before the next starts, also when its benchmark fails
 * or the sweep is interrupted; a stop that fails ends the sweep (`Aborted`: the next variant
 * would meet that server's GPUs). Use `collect` for the whole result.
 *
 * @category programs
 */
export const events = (request: SweepRequest): Stream.Stream<SweepEvent, never, ConnectionPool> => {
  const argvOf = (variant: Variant) => [...request.argv, ...variant.flags]
  const flags = request.engines[0]?.latestFlags ?? Secrets.byName
  // what events and results show of a variant: its secrets as ***
  const shownOf = (variant: Variant): Variant => ({
    label: variant.label,
    flags: Secrets.redactArgv(variant.flags, flags)
  })
  // a server launched with an API key is benchmarked with it (the command line holds it)
  const keyOf = (variant: Variant): string | undefined => {
    const keyFlags = new Set(
      request.engines.flatMap((e) => (e.apiKeyFlag === undefined ? [] : [e.apiKeyFlag]))
    )
    return Secrets.split(argvOf(variant), flags).secrets.find((secret) => keyFlags.has(secret.flag))?.value
  }
  const placing = {
    ...(request.env === undefined ? {} : { env: request.env }),
    ...(request.runtime === undefined ? {} : { runtime: request.runtime }),
    ...(request.placement === undefined ? {} : { placement: request.placement })
  }
  const check = (variant: Variant) =>
    Check.host(request.engines, { host: request.host, argv: argvOf(variant), ...placing }).pipe(
      Effect.as(undefined),
      Effect.catchAllCause((cause) => Effect.succeed(reasonOf(Cause.squash(cause))))
    )

  // one variant: launched, benchmarked, stopped (the stop also on interruption, from the
  // moment the launch returns: no gap where an interrupt leaves it running)
  const measure = (given: Variant, name: string): Stream.Stream<SweepEvent, never, ConnectionPool> =>
    Stream.unwrapScoped(
      Effect.gen(function* () {
        const variant = shownOf(given)
        const apiKey = request.bench.apiKey ?? keyOf(given)
        let stopped = false
        const launched = yield* Effect.uninterruptibleMask((restore) =>
          restore(
            Launch.launchDeployment({
              host: request.host,
              engine: request.engines,
              name,
              argv: argvOf(given),
              replace: true,
              stopOnInterrupt: true,
              ...placing
            })
          ).pipe(
            Effect.tap(() =>
              Effect.addFinalizer(() =>
                stopped ? Effect.void : Effect.ignore(stopBounded(request.host, name))
              )
            ),
            Effect.either
          )
        )
        if (launched._tag === "Left")
          return say({
            _tag: "Done",
            outcome: { _tag: "Failed", variant, name, stage: "launch", ...reasonOf(launched.left) }
          })
        const deployment = launched.right
        const benchmarked = Bench.run(request.host, name, request.engines, {
          ...request.bench,
          ...(apiKey === undefined ? {} : { apiKey })
        }).pipe(
          Effect.map(
            (result): VariantOutcome => ({
              _tag: "Measured",
              variant,
              name,
              timeToReady: deployment.timeToReady,
              result
            })
          ),
          Effect.catchAllCause((cause) =>
            Effect.succeed<VariantOutcome>({
              _tag: "Failed",
              variant,
              name,
              stage: "bench",
              ...reasonOf(Cause.squash(cause))
            })
          )
        )
        const stop = stopBounded(request.host, name).pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              stopped = true
            })
          ),
          Effect.as<ReadonlyArray<SweepEvent>>([]),
          Effect.catchAllCause((cause) =>
            Effect.succeed<ReadonlyArray<SweepEvent>>([
              { _tag: "Aborted", name, ...reasonOf(Cause.squash(cause)) }
            ])
          )
        )
        return Stream.concat(
          say({ _tag: "Benchmarking", variant, name }),
          Stream.fromEffect(Effect.map(benchmarked, (outcome): SweepEvent => ({ _tag: "Done", outcome })))
        ).pipe(Stream.concat(Stream.flattenIterables(Stream.fromEffect(stop))))
      })
    )

  return Stream.unwrap(
    Effect.gen(function* () {
      // every variant checked before any starts: a refused one costs no GPU time
      const checked = yield* Effect.forEach(request.variants, (variant) =>
        Effect.map(check(variant), (refused) => ({ variant, refused }))
      )
      const said = Stream.fromIterable(
        checked.map(
          ({ variant, refused }): SweepEvent => ({
            _tag: "Checked",
            variant: shownOf(variant),
            refused: refused?.reason
          })
        )
      )
      const runs = Stream.fromIterable(checked.entries()).pipe(
        Stream.flatMap(([index, { variant, refused }]) =>
          refused !== undefined
            ? say({ _tag: "Done", outcome: { _tag: "Refused", variant: shownOf(variant), ...refused } })
            : Stream.concat(
                say({ _tag: "Launching", variant: shownOf(variant), name: `${request.name}-${index + 1}` }),
                measure(variant, `${request.name}-${index + 1}`)
              )
        ),
        // a server that could not be stopped ends the sweep: the next would meet its GPUs
        Stream.takeUntil((event) => event._tag === "Aborted")
      )
      return Stream.concat(said, runs)
    })
  )
}

/**
 * Run the sweep to its end; `onEvent` sees each event as it happens.
 *
 * @category programs
 */
export const collect = (
  request: SweepRequest,
  onEvent: (event: SweepEvent) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<SweepResult, never, ConnectionPool> =>
  Effect.gen(function* () {
    const startedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
    const outcomes: Array<VariantOutcome> = []
    let aborted: SweepResult["aborted"]
    yield* events(request).pipe(
      Stream.runForEach((event) =>
        Effect.zipRight(
          onEvent(event),
          Effect.sync(() => {
            if (event._tag === "Done") outcomes.push(event.outcome)
            if (event._tag === "Aborted")
              aborted = { name: event.name, error: event.error, reason: event.reason }
          })
        )
      )
    )
    return {
      host: request.host,
      name: request.name,
      argv: Secrets.redactArgv(request.argv, request.engines[0]?.latestFlags ?? Secrets.byName),
      concurrency: request.bench.concurrency ?? [1],
      startedAt,
      outcomes,
      aborted
    }
  })
