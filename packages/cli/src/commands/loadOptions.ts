/**
 * The options of a benchmark's load, shared by `bench` and `sweep` (their values become
 * `Bench.BenchOptions` in `programs/bench.ts`).
 */
import { Options } from "@effect/cli"

/** @internal */
export const loadOptions = {
  concurrency: Options.text("concurrency").pipe(
    Options.withDefault("1"),
    Options.withDescription("Requests in flight at once, one level per value: 1,8,32 (default 1)")
  ),
  requests: Options.integer("requests").pipe(
    Options.optional,
    Options.withDescription("Requests per level (default 4 × its concurrency, at least 8)")
  ),
  inputLen: Options.integer("input-len").pipe(
    Options.withDefault(128),
    Options.withDescription("Words per synthetic prompt, about one token each (default 128)")
  ),
  outputLen: Options.integer("output-len").pipe(
    Options.withDefault(128),
    Options.withDescription("Tokens asked of each request, end-of-sequence ignored (default 128)")
  )
}
