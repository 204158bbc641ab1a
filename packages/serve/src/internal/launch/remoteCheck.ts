/**
 * `--remote-check`: the host's own engine parses and validates the flags (no model load), run
 * by the runtime that found it, and its output goes through the classifier. Secrets reach it
 * the way they reach the server (the runtime's command), never on its command line.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import { Effect } from "effect"
import * as Classifier from "../../Classifier.js"
import type { Engine } from "../../Engine.js"
import type { Located, Runtime, ServerPaths } from "../../Runtime.js"
import type { RuntimeError } from "../../Runtimes.js"
import type * as Secrets from "../../Secrets.js"

export const run = Effect.fn("Launch.remoteCheck")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    /** The engine's argument check (`Engine.remoteCheck`). */
    readonly code: string
    readonly flags: Secrets.FlagLookup
    readonly runtime: Runtime<RuntimeError>
    readonly located: Located
    readonly shown: ReadonlyArray<string>
    readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
    readonly env: Readonly<Record<string, string>>
    /** The model's directory (SGLang's check reads its config.json) and the caches. */
    readonly paths: ServerPaths
  }
) {
  const command = o.runtime.command(o.located, {
    target: { code: o.code },
    shown: o.shown,
    secrets: o.secrets,
    env: o.env,
    flags: o.flags,
    // the engine's own check reads the GPUs' memory as its server would
    gpus: true,
    paths: o.paths
  })
  const result = yield* conn.exec(command, { timeout: "60 seconds" })
  if (result.exitCode === 0) return
  const text = `${result.stdout}\n${result.stderr}`
  const failure = Classifier.classifyText(text, result, [o.engine.logs]).failure
  if (failure !== undefined) return yield* failure
})
