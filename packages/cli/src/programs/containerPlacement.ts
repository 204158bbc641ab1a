/**
 * The container placement on the command line: `--shm-size` (over the host's hosts.json `shm`),
 * checked as hosts.json checks it. Given without an image runtime, the launch's resolution
 * refuses it (a container runs an image).
 */
import * as ContainerSettings from "@mlops/core/ContainerSettings"
import * as ContainerPlacement from "@mlops/serve/ContainerPlacement"
import type { Spec } from "@mlops/serve/Placement"
import { Effect, Either, Option, Schema } from "effect"
import type { containerOptions } from "../commands/containerOptions.js"
import { UsageError } from "../commands/shared.js"

type Given = { readonly [K in keyof typeof containerOptions]: Option.Option<string> }

/** The spec the options give (undefined when none is given), or the bad value named. */
export const specOf = (given: Given): Effect.Effect<Spec | undefined, UsageError> =>
  Effect.suspend(() => {
    if (Option.isNone(given.shmSize)) return Effect.succeed(undefined)
    const shm = given.shmSize.value
    return Either.isLeft(Schema.decodeUnknownEither(ContainerSettings.ShmSetting)(shm))
      ? Effect.fail(
          new UsageError({
            message: `--shm-size expects ${ContainerSettings.expected.shm}, got ${JSON.stringify(shm)}`
          })
        )
      : Effect.succeed(ContainerPlacement.spec({ shm }))
  })
