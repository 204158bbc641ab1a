/**
 * The engines the `mlops` command knows, in order of preference: when a host's Python
 * environment has several, `launch` without `--engine` takes the first. Adding an engine is
 * one line here (its package exports the `Engine` value).
 *
 * @since 0.1.0
 */
import * as Engine from "@mlops/serve/Engine"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import { VllmEngine } from "@mlops/vllm/Engine"
import { Option } from "effect"

/** @category engines */
export const registry: Engine.Registry = [SglangEngine.engine, VllmEngine]

/** How the first registered engine's newest release spells flags (secrets, fixes) when no engine is named. @category engines */
export const defaultFlags: Engine.Flags = registry[0]!.latestFlags

/** What every engine adds to the log classifier (`diagnose` reads logs of any engine). @category engines */
export const logs = registry.map((engine) => engine.logs)

/** The names `--engine` accepts. @category engines */
export const names: ReadonlyArray<string> = registry.map((engine) => engine.name)

/** An engine's display name (`SGLang`) from its name (`sglang`); the name itself for one not registered. @category engines */
export const displayName = (name: string): string =>
  registry.find((engine) => engine.name === name)?.displayName ?? name

/** The engine `--engine` names, or every registered one to look for in order. @category engines */
export const engineOf = (named: Option.Option<string>): Engine.Engine | Engine.Registry =>
  Option.match(named, {
    onNone: () => registry,
    onSome: (name) => Engine.byName(registry, name) ?? registry
  })
