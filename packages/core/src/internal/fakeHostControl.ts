/**
 * The service that hands out the fake hosts' handles (public through `FakeHost.ts`; here so
 * that the fake host's implementation and its public module do not import each other).
 *
 * @internal
 */
import { Context, type Effect } from "effect"
import type { HostNotFound } from "../Errors.js"
import type { FakeHostHandle } from "../FakeHost.js"

export class FakeHostControl extends Context.Tag("@mlops/core/FakeHostControl")<
  FakeHostControl,
  {
    readonly host: (alias: string) => Effect.Effect<FakeHostHandle, HostNotFound>
    readonly aliases: ReadonlyArray<string>
  }
>() {}
