/**
 * Which hosts the CLI talks to: the built-in simulated host `sim` (SimHost.layerPersistent,
 * kept in `$MLOPS_HOME/sim/`) and every real host (the live ssh2 `ConnectionPool` over `Hosts`
 * from ssh_config + `$MLOPS_HOME/hosts.json`).
 * One `ConnectionPool` and one `Hosts` route by alias, so `--host sim` and `--host ct129` use the
 * same commands, and `mlops hosts` / `mlops status` see both.
 *
 * Each side is built on first use: a `--host sim` command never reads ssh_config, a real-host
 * command never starts the simulator, and `mlops hosts` lists `sim` without starting it
 * (`simListing`). The simulator's and the flag cache's modules (every engine) are loaded only
 * when built.
 *
 * Environment: `MLOPS_SSH_CONFIG`, `MLOPS_HOME`, `MLOPS_SSH_PASSPHRASE`, `MLOPS_MAX_CHANNELS`,
 * `MLOPS_COMMAND_TIMEOUT` (read through `Config`).
 *
 * @since 0.1.0
 */

import { homedir } from "node:os"
import { join } from "node:path"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import { ConfigFileError } from "@mlops/core/Errors"
import * as HostConfig from "@mlops/core/HostConfig"
import * as Hosts from "@mlops/core/Hosts"
import type * as ImageRuntime from "@mlops/serve/ImageRuntime"
import type * as HostFlags from "@mlops/sglang/HostFlags"
import type * as VllmHostFlags from "@mlops/vllm/HostFlags"
import { Config, Context, Effect, Layer, Option } from "effect"

/** The alias of the built-in simulated host. @category constants */
export const simAlias = "sim"

type Services = ConnectionPool.ConnectionPool | Hosts.Hosts

/** The live side: ssh2 connections to hosts resolved from ssh_config and hosts.json. @category layers */
export const live: Layer.Layer<Services, ConfigFileError> = ConnectionPool.layer().pipe(
  Layer.provideMerge(Hosts.layerConfig()),
  Layer.mapError(
    (error) =>
      new ConfigFileError({
        path: "environment",
        reason: `bad mlops setting: ${String(error)}`,
        fix: "check MLOPS_SSH_CONFIG, MLOPS_HOME, MLOPS_MAX_CHANNELS and MLOPS_COMMAND_TIMEOUT"
      })
  )
)

/** Where the CLI keeps the `sim` host between invocations, under an mlops home. @category constructors */
export const simStateFile = (mlopsHome: string): string => join(mlopsHome, "sim", "state.json")

/**
 * The simulated side: only `sim`, persisted in `$MLOPS_HOME/sim/state.json` (MLOPS_HOME
 * default `~/.mlops`), so a launch on `sim` is still there for the next `mlops` command. Every
 * registered engine is installed on it; `MLOPS_SIM_<ENGINE>_VERSION` (`MLOPS_SIM_SGLANG_VERSION`)
 * installs another shipped release of that engine for this command.
 *
 * @category layers
 */
export const sim: Layer.Layer<Services, ConfigFileError> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const [SimHost, Engines] = yield* Effect.promise(() =>
      Promise.all([import("@mlops/serve/SimHost"), import("./Engines.js")])
    )
    const options = yield* Hosts.config.pipe(Effect.orElseSucceed((): Hosts.HostsOptions => ({})))
    const stateFile = simStateFile(options.mlopsHome ?? join(homedir(), ".mlops"))
    const engines = yield* Effect.forEach(yield* Engines.registry, (engine) =>
      Effect.gen(function* () {
        const variable = `MLOPS_SIM_${engine.name.toUpperCase()}_VERSION`
        const wanted = yield* Config.option(Config.string(variable)).pipe(
          Effect.orElseSucceed(() => Option.none<string>())
        )
        if (Option.isNone(wanted)) return { engine }
        const version = yield* SimHost.simVersion(engine, wanted.value).pipe(
          Effect.mapError(
            (error) => new ConfigFileError({ path: variable, reason: error.message, fix: error.fix })
          )
        )
        return { engine, version }
      })
    )
    return SimHost.layerPersistent({ stateFile, engines })
  })
)

/**
 * `sim` as the simulated side lists it (the first engine's environment as its `python`), so
 * that `mlops hosts` need not start the simulator; `test/Layers.test.ts` holds it to the
 * built simulator's own listing.
 *
 * @category constants
 */
export const simListing: HostConfig.HostConfig = HostConfig.inMemory({
  alias: simAlias,
  hostname: "sim.local",
  user: "root",
  python: "/root/ml-env",
  tags: ["simulated", "gpu"]
})

/**
 * Route `sim` to `simulated`, every other alias to `real`; both built lazily. `list` names
 * `sim` from `simulatedListing` without building the simulated side.
 *
 * @category constructors
 */
export const makeRouted = (
  simulated: Layer.Layer<Services, ConfigFileError>,
  real: Layer.Layer<Services, ConfigFileError>,
  simulatedListing: ReadonlyArray<HostConfig.HostConfig> = [simListing]
) =>
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    const simContext = yield* Effect.cached(Layer.buildWithScope(simulated, scope))
    const realContext = yield* Effect.cached(Layer.buildWithScope(real, scope))
    const side = (alias: string) => (alias === simAlias ? simContext : realContext)
    const pool = ConnectionPool.ConnectionPool.of({
      get: (alias) =>
        side(alias).pipe(
          Effect.flatMap((context) => Context.get(context, ConnectionPool.ConnectionPool).get(alias))
        ),
      invalidate: (alias) =>
        side(alias).pipe(
          Effect.flatMap((context) => Context.get(context, ConnectionPool.ConnectionPool).invalidate(alias)),
          Effect.ignore
        )
    })
    const hosts = Hosts.Hosts.of({
      resolve: (alias) =>
        side(alias).pipe(Effect.flatMap((context) => Context.get(context, Hosts.Hosts).resolve(alias))),
      list: Effect.gen(function* () {
        const realHosts = yield* realContext.pipe(
          Effect.flatMap((context) => Context.get(context, Hosts.Hosts).list)
        )
        return [...simulatedListing, ...realHosts.filter((host) => host.alias !== simAlias)]
      }),
      // groups are hosts.json's (the simulated host is never part of one)
      groups: realContext.pipe(Effect.flatMap((context) => Context.get(context, Hosts.Hosts).groups))
    })
    return Context.make(ConnectionPool.ConnectionPool, pool).pipe(Context.add(Hosts.Hosts, hosts))
  })

/**
 * The host flag dumps cached under `$MLOPS_HOME/flags/`, for the commands that read a host's
 * SGLang parser (`launch`, `check`, `flags`); its module (SGLang's catalogues) is loaded when
 * one of them runs.
 *
 * @category layers
 */
export const flagCache: Layer.Layer<HostFlags.FlagCache> = Layer.unwrapEffect(
  Effect.map(
    Effect.promise(() => import("@mlops/sglang/HostFlags")),
    (HostFlags) => HostFlags.layerConfig
  )
)

/**
 * The flag dumps and what images hold (by image id), cached under `$MLOPS_HOME/flags/` and
 * `$MLOPS_HOME/images/`, for the commands that read a host's engine (`launch`, `check`,
 * `flags`).
 *
 * @category layers
 */
export const engineCaches: Layer.Layer<
  HostFlags.FlagCache | VllmHostFlags.FlagCache | ImageRuntime.ImageCache
> = Layer.mergeAll(
  flagCache,
  // vLLM's dumps beside SGLang's, under $MLOPS_HOME/flags/vllm
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("@mlops/vllm/HostFlags")),
      (module) => module.layerConfig
    )
  ),
  Layer.unwrapEffect(
    Effect.map(
      Effect.promise(() => import("@mlops/serve/ImageRuntime")),
      (module) => module.cacheConfig
    )
  )
)

/** What every command runs with: the routed hosts. @category layers */
export const layer: Layer.Layer<Services> = Layer.scopedContext(makeRouted(sim, live))
