/**
 * Resolves host aliases to `HostConfig` the way `ssh -G` would, plus the mlops hosts file.
 *
 * @since 0.1.0
 */
import { Context, type Effect } from "effect"
import type { ConfigFileError, HostNotFound } from "./Errors.js"
import type { HostConfig } from "./HostConfig.js"

/** @category tags */
export class Hosts extends Context.Tag("@mlops/core/Hosts")<
  Hosts,
  {
    readonly resolve: (alias: string) => Effect.Effect<HostConfig, HostNotFound | ConfigFileError>
    /** Every concrete alias (no wildcard patterns), resolved. */
    readonly list: Effect.Effect<ReadonlyArray<HostConfig>, ConfigFileError>
  }
>() {}
