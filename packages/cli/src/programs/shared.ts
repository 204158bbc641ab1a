/**
 * What the commands' programs share: printing JSON, turning a failure into its rendering plus
 * the exit code of its class, and taking a job's name where a deployment's is expected.
 */
import type { FileSystem, Path, Terminal } from "@effect/platform"
import type { ConnectionPool } from "@mlops/core/ConnectionPool"
import type { Hosts } from "@mlops/core/Hosts"
import { DeploymentNotFound } from "@mlops/serve/Deployment"
import * as Job from "@mlops/serve/Job"
import { Console, Effect } from "effect"
import { CommandExit } from "../commands/shared.js"
import * as ExitCodes from "../ExitCodes.js"
import type * as RenderFailure from "../render/failure.js"
import * as Json from "../render/json.js"
import { TerminalStyle } from "../render/style.js"

/** Print one JSON value as a line. */
export const printJson = (value: unknown) => Console.log(Json.line(value))

/**
 * Run a command's program: on failure print it (human or JSON, with the fixed command when the
 * context allows one) and end with the failure's exit code. The renderer (every engine's flags,
 * for fixed commands) is loaded only when there is a failure to render.
 */
export const handle = <A, E, R>(
  asJson: boolean,
  context: RenderFailure.FailureContext,
  program: Effect.Effect<A, E, R>
): Effect.Effect<A, CommandExit, R> =>
  program.pipe(
    Effect.catchAll((failure) =>
      Effect.gen(function* () {
        const RenderFailure = yield* Effect.promise(() => import("../render/failure.js"))
        if (asJson) yield* printJson(RenderFailure.json(failure, context))
        else yield* Console.error(RenderFailure.human(yield* TerminalStyle, failure, context))
        return yield* new CommandExit({ code: ExitCodes.fromFailure(failure) })
      })
    )
  )

/** What a command's program runs with: the routed hosts (`Layers.layer`) and Node's platform (`launch`, `check` and `flags` also the flag cache). */
export type ProgramEnv = ConnectionPool | Hosts | FileSystem.FileSystem | Path.Path | Terminal.Terminal

/**
 * A name that is no deployment may be a job's (`mlops run`): `stop`, `logs` and `rm` take
 * either. When it is neither, the deployment's refusal stands, naming every deployment and job.
 */
export const orJob = <A, E, R, B, E2, R2>(
  deployment: Effect.Effect<A, E | DeploymentNotFound, R>,
  job: Effect.Effect<B, E2 | Job.JobNotFound, R2>
): Effect.Effect<A | B, E | E2 | DeploymentNotFound, R | R2> =>
  Effect.catchIf(
    deployment,
    (error): error is DeploymentNotFound => error instanceof DeploymentNotFound,
    (missing) =>
      Effect.catchIf(
        job,
        (error): error is Job.JobNotFound => error instanceof Job.JobNotFound,
        (none) =>
          Effect.fail(
            new DeploymentNotFound({
              host: missing.host,
              name: missing.name,
              known: [...missing.known, ...none.known.map((name) => `${name} (job)`)]
            })
          )
      )
  )
