/**
 * The sim that outlives its process: on build, a fresh FakeHost world restored from the state
 * file; when the layer's scope closes (the `mlops` command is over), the world is captured and
 * written back, before its processes are stopped. Warnings are one line on stderr and never
 * fail the command.
 *
 * Two `mlops` runs at the same time each work on the state as it was when they started; the
 * one that finishes last and changed something wins (with a warning). A run that changed
 * nothing (status, logs) does not write.
 *
 * @internal
 */

import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { Hosts } from "@mlops/core/Hosts"
import { FakeHost } from "@mlops/core/testing"
import { Cause, Console, Context, Effect, ExecutionStrategy, Exit, Layer, Scope } from "effect"
import * as State from "./state.js"
import * as StateFile from "./stateFile.js"

type Services = Hosts | ConnectionPool | FakeHost.FakeHostControl

const warn = (message: string) => Console.error(`mlops: ${message}`)

export const layer = (
  world: Layer.Layer<Services>,
  alias: string,
  stateFile: string,
  kinds: State.ServerKinds
): Layer.Layer<Services> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const scope = yield* Effect.scope
      const build = (state: State.SimState | undefined) =>
        Effect.gen(function* () {
          const child = yield* Scope.fork(scope, ExecutionStrategy.sequential)
          const context = yield* Layer.buildWithScope(world, child)
          const handle = yield* Effect.orDie(Context.get(context, FakeHost.FakeHostControl).host(alias))
          const baseline = yield* State.baselineOf(handle)
          if (state !== undefined)
            yield* State.restore(handle, state).pipe(
              Effect.catchAllCause((cause) =>
                Effect.zipRight(Scope.close(child, Exit.void), Effect.failCause(cause))
              )
            )
          return { context, handle, baseline }
        })

      const loaded = yield* StateFile.read(stateFile)
      if (loaded._tag === "Ignored")
        yield* warn(`ignoring the sim state in ${stateFile} (${loaded.reason}); starting a fresh sim`)
      const restored =
        loaded._tag === "Loaded"
          ? yield* build(loaded.state).pipe(
              Effect.map((built) => ({ built, from: loaded.state as State.SimState | undefined })),
              Effect.catchAllCause((cause) =>
                warn(
                  `cannot restore the sim state in ${stateFile} (${Cause.squash(cause)}); starting a fresh sim`
                ).pipe(Effect.zipRight(Effect.map(build(undefined), (built) => ({ built, from: undefined }))))
              )
            )
          : { built: yield* build(undefined), from: undefined }
      const { built, from } = restored
      // an ignored file is replaced even when this run changes nothing (no warning next time)
      const before =
        loaded._tag === "Ignored" ? undefined : State.fingerprint(from ?? { files: [], servers: [] })
      const loadedText = loaded._tag === "Missing" ? undefined : loaded.text

      // added after the world's scope: runs first, while its servers still run
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          const now = yield* State.capture(built.handle, built.baseline, kinds)
          if (State.fingerprint(now) === before) return
          const onDisk = yield* Effect.either(StateFile.readText(stateFile))
          if (onDisk._tag === "Right" && onDisk.right !== loadedText)
            yield* warn(`another mlops run changed ${stateFile} meanwhile; this run's sim state replaces it`)
          yield* StateFile.write(stateFile, now).pipe(
            Effect.catchAll((reason) => warn(`the sim state was not saved: ${reason}`))
          )
        }).pipe(Effect.catchAllCause((cause) => warn(`the sim state was not saved: ${Cause.squash(cause)}`)))
      )
      return built.context
    })
  )
