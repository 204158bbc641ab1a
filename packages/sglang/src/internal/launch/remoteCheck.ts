/**
 * `--remote-check`: the host's own SGLang parses and validates the flags (no model load), and
 * its output goes through the classifier. Secrets reach it the way they reach the server
 * (`serverCommand`), never on its command line.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as Classifier from "@mlops/serve/Classifier"
import { Effect } from "effect"
import type * as Secrets from "../../Secrets.js"
import { logs } from "../logs/index.js"
import * as ServerCommand from "./serverCommand.js"

const REMOTE_CHECK = [
  "import sys",
  "from sglang.srt.server_args import prepare_server_args",
  "prepare_server_args(sys.argv[1:])",
  "print('{\"ok\": true}')"
].join("\n")

export const run = Effect.fn("Launch.remoteCheck")(function* (
  conn: Connection,
  o: {
    readonly interpreter: string
    readonly shown: ReadonlyArray<string>
    readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
    readonly env: Readonly<Record<string, string>>
  }
) {
  const command = ServerCommand.make({ ...o, target: { code: REMOTE_CHECK } })
  const result = yield* conn.exec(command, { timeout: "60 seconds" })
  if (result.exitCode === 0) return
  const text = `${result.stdout}\n${result.stderr}`
  const failure = Classifier.classifyText(
    text,
    { exitCode: result.exitCode ?? undefined, signal: result.signal ?? undefined },
    [logs]
  ).failure
  if (failure !== undefined) return yield* failure
})
