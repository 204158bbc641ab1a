/**
 * `--remote-check`: the host's own SGLang parses and validates the flags (no model load), and
 * its output goes through the classifier. Secrets reach it the way they reach the server
 * (`serverCommand`), never on its command line.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import { Effect } from "effect"
import * as Classifier from "../../Classifier.js"
import type { Engine } from "../../Engine.js"
import type * as Secrets from "../../Secrets.js"
import * as ServerCommand from "../../ServerCommand.js"

export const run = Effect.fn("Launch.remoteCheck")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    /** The engine's argument check (`Engine.remoteCheck`). */
    readonly code: string
    readonly flags: Secrets.FlagLookup
    readonly interpreter: string
    readonly shown: ReadonlyArray<string>
    readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
    readonly env: Readonly<Record<string, string>>
  }
) {
  const command = ServerCommand.make({ ...o, target: { code: o.code } })
  const result = yield* conn.exec(command, { timeout: "60 seconds" })
  if (result.exitCode === 0) return
  const text = `${result.stdout}\n${result.stderr}`
  const failure = Classifier.classifyText(text, result, [o.engine.logs]).failure
  if (failure !== undefined) return yield* failure
})
