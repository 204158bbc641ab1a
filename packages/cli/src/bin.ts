/**
 * The `mlops` process: Node platform services, the exit code of the failure's class, and
 * Ctrl-C interrupting the running command (its finalizers run: channels close, and a launch
 * leaves the server running unless `--stop-on-interrupt`).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit } from "effect"
import { main } from "./Cli.js"
import { ExitCode } from "./ExitCodes.js"
import * as Platform from "./Platform.js"

let code: number = ExitCode.Ok

main(process.argv).pipe(
  Effect.tap((result) =>
    Effect.sync(() => {
      code = result
    })
  ),
  Effect.provide(Platform.layer),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) =>
      onExit(
        Exit.isSuccess(exit)
          ? code
          : Cause.isInterruptedOnly(exit.cause)
            ? ExitCode.Interrupted
            : ExitCode.Unexpected
      )
  })
)
