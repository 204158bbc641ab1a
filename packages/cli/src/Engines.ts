/**
 * The engines the `mlops` command knows, in order of preference: when a host's Python
 * environment has several, `launch` without `--engine` takes the first. Adding an engine is
 * one line in `others` (its package exports the `Engine` value) and one in `commands/facts.ts`.
 *
 * The first engine is loaded with the programs (its flags spell fixed commands and hide secrets
 * when no other engine is named); the others when a command needs every engine or names one:
 * an offline SGLang `check` does not evaluate vLLM's catalogues and rules.
 *
 * @since 0.1.0
 */
import * as Engine from "@mlops/serve/Engine"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import { Effect, Option } from "effect"
import * as Facts from "./commands/facts.js"

/** The first registered engine. @category engines */
export const first: Engine.Engine = SglangEngine.engine

/** Every other registered engine, in order of preference, loaded on first use. */
const others: ReadonlyArray<() => Promise<Engine.Engine>> = [
  () => import("@mlops/vllm/Engine").then((module) => module.VllmEngine)
]

let loading: Promise<Engine.Registry> | undefined

/** Every registered engine, in order of preference (each package loaded once). @category engines */
export const registry: Effect.Effect<Engine.Registry> = Effect.promise(() => {
  loading ??= Promise.all(others.map((load) => load())).then((rest) => [first, ...rest])
  return loading
})

/** The registered engine of this name (only it is loaded), or undefined. @category engines */
export const named = (name: string): Effect.Effect<Engine.Engine | undefined> =>
  name === first.name ? Effect.succeed(first) : Effect.map(registry, (all) => Engine.byName(all, name))

/** How the first registered engine's newest release spells flags (secrets, fixes) when no engine is named. @category engines */
export const defaultFlags: Engine.Flags = first.latestFlags

/** What every engine adds to the log classifier (`diagnose` reads logs of any engine). @category engines */
export const logs = Effect.map(registry, (all) => all.map((engine) => engine.logs))

/** The names `--engine` accepts. @category engines */
export const names: ReadonlyArray<string> = Facts.engineNames

/** An engine's display name (`SGLang`) from its name (`sglang`); the name itself for one not registered. @category engines */
export const displayName = (name: string): string =>
  Facts.engines.find((engine) => engine.name === name)?.displayName ?? name

/** The engine `--engine` names, or every registered one to look for in order. @category engines */
export const engineOf = (chosen: Option.Option<string>): Effect.Effect<Engine.Engine | Engine.Registry> =>
  Option.match(chosen, {
    onNone: () => registry,
    onSome: (name) =>
      Effect.flatMap(
        named(name),
        (engine): Effect.Effect<Engine.Engine | Engine.Registry> =>
          engine === undefined ? registry : Effect.succeed(engine)
      )
  })
