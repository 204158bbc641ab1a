import { Effect, Fiber } from "effect"

const t = (label: string, e: Effect.Effect<unknown>) =>
  Effect.gen(function* () {
    const start = Date.now()
    yield* e
    console.log(label, Date.now() - start, "ms")
  })
const work = Effect.never.pipe(Effect.timeout("200 millis"), Effect.ignore)
const prog = Effect.gen(function* () {
  yield* t("plain", work)
  const f = yield* Effect.fork(
    Effect.never.pipe(
      Effect.onInterrupt(() =>
        t(
          "onInterrupt: forkDaemon+interruptible",
          Effect.flatMap(Effect.forkDaemon(Effect.interruptible(work)), Fiber.join)
        )
      )
    )
  )
  yield* Effect.sleep("50 millis")
  yield* Fiber.interrupt(f)
  const g = yield* Effect.fork(Effect.never.pipe(Effect.onInterrupt(() => t("onInterrupt: plain", work))))
  yield* Effect.sleep("50 millis")
  yield* Fiber.interrupt(g).pipe(
    Effect.timeout("3 seconds"),
    Effect.tap(() => Effect.log("interrupt g returned")),
    Effect.ignore
  )
})
Effect.runPromise(prog).then(() => {
  console.log("done")
  process.exit(0)
})
