/** Reading the outcome of an `Effect.exit` in assertions. */
import { Exit } from "effect"

/** The typed failure, or `undefined` for a success, a defect or an interruption. */
export const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined

/** The failure's `_tag`, `"Success"`, or the cause's kind (`"Die"`, `"Interrupt"`, ...). */
export const failureTag = <A, E extends { readonly _tag: string }>(exit: Exit.Exit<A, E>): string =>
  Exit.isSuccess(exit) ? "Success" : (failureOf(exit)?._tag ?? exit.cause._tag)
