/**
 * `sweep`: engine-flag variants (speculative steps/topk/draft tokens, or none) × concurrencies.
 * Every variant is checked first, against the host as `check --host` does, so a variant the
 * engine would refuse costs no GPU time (it is reported with its violations and skipped);
 * then each accepted variant in turn is launched (as `<name>-<n>`), benchmarked at every
 * concurrency, and stopped. A variant that fails to start or dies during its run is reported
 * with its failure and the sweep goes on with the next.
 *
 * @since 0.1.0
 */
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import { Clock, Effect, Stream } from "effect"
import * as Bench from "./Bench.js"
import * as Check from "./Check.js"
import type * as Deployment from "./Deployment.js"
import type { Registry } from "./Engine.js"
import * as Launch from "./Launch.js"
import type { Spec as PlacementSpec } from "./Placement.js"
import type { Spec as RuntimeSpec } from "./Runtime.js"
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

/** The whole sweep. @category models */
export interface SweepResult {
  readonly host: string
  readonly name: string
  readonly argv: ReadonlyArray<string>
  readonly concurrency: ReadonlyArray<number>
  readonly startedAt: string
  readonly outcomes: ReadonlyArray<VariantOutcome>
}

const reasonOf = (error: unknown): { readonly error: string; readonly reason: string } => {
  const tag =
    typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string"
      ? error._tag
      : "Error"
  return { error: tag, reason: error instanceof Error ? error.message : String(error) }
}

/**
 * The sweep as events, each variant's outcome as it ends; the last event is the last
 * variant's `Done`. Use `collect` for the whole result.
 *
 * @category programs
 */
export const events = (request: SweepRequest): Stream.Stream<SweepEvent, never, ConnectionPool> =>
  Stream.asyncPush<SweepEvent, never, ConnectionPool>((emit) =>
    Effect.gen(function* () {
      const argvOf = (variant: Variant) => [...request.argv, ...variant.flags]
      const placing = {
        ...(request.env === undefined ? {} : { env: request.env }),
        ...(request.runtime === undefined ? {} : { runtime: request.runtime }),
        ...(request.placement === undefined ? {} : { placement: request.placement })
      }
      // every variant checked before any starts: a refused one costs no GPU time
      const checked = yield* Effect.forEach(request.variants, (variant) =>
        Check.host(request.engines, { host: request.host, argv: argvOf(variant), ...placing }).pipe(
          Effect.as(undefined),
          Effect.catchAll((error) => Effect.succeed(reasonOf(error))),
          Effect.tap((refused) =>
            Effect.sync(() => emit.single({ _tag: "Checked", variant, refused: refused?.reason }))
          ),
          Effect.map((refused) => ({ variant, refused }))
        )
      )
      for (const [index, { variant, refused }] of checked.entries()) {
        if (refused !== undefined) {
          emit.single({ _tag: "Done", outcome: { _tag: "Refused", variant, ...refused } })
          continue
        }
        const name = `${request.name}-${index + 1}`
        emit.single({ _tag: "Launching", variant, name })
        const outcome: VariantOutcome = yield* Launch.launchDeployment({
          host: request.host,
          engine: request.engines,
          name,
          argv: argvOf(variant),
          replace: true,
          stopOnInterrupt: true,
          ...placing
        }).pipe(
          Effect.matchEffect({
            onFailure: (error) =>
              Effect.succeed<VariantOutcome>({
                _tag: "Failed",
                variant,
                name,
                stage: "launch",
                ...reasonOf(error)
              }),
            onSuccess: (deployment) =>
              Effect.sync(() => emit.single({ _tag: "Benchmarking", variant, name })).pipe(
                Effect.zipRight(Bench.run(request.host, name, request.engines, request.bench)),
                Effect.map(
                  (result): VariantOutcome => ({
                    _tag: "Measured",
                    variant,
                    name,
                    timeToReady: deployment.timeToReady,
                    result
                  })
                ),
                Effect.catchAll((error) =>
                  Effect.succeed<VariantOutcome>({
                    _tag: "Failed",
                    variant,
                    name,
                    stage: "bench",
                    ...reasonOf(error)
                  })
                ),
                // each point on its own GPUs: stopped before the next starts (a dead one too)
                Effect.ensuring(Stop.stop(request.host, name).pipe(Effect.ignore))
              )
          })
        )
        emit.single({ _tag: "Done", outcome })
      }
      emit.end()
    }).pipe(Effect.forkScoped)
  )

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
    yield* events(request).pipe(
      Stream.runForEach((event) =>
        Effect.zipRight(
          onEvent(event),
          Effect.sync(() => {
            if (event._tag === "Done") outcomes.push(event.outcome)
          })
        )
      )
    )
    return {
      host: request.host,
      name: request.name,
      argv: request.argv,
      concurrency: request.bench.concurrency ?? [1],
      startedAt,
      outcomes
    }
  })
