/**
 * What the command definitions (their help) say about the engines and `check`'s defaults,
 * written out here so that defining the commands does not load the engines: their catalogues,
 * rules and error schemas are what made every `mlops` start slow. `test/commands/facts.test.ts`
 * holds these to `Engines.registry` and `@mlops/serve/Check`; adding an engine adds a line here.
 */

/** The registered engines, in `Engines.registry`'s order. */
export const engines: ReadonlyArray<{
  readonly name: string
  readonly displayName: string
  /** Its newest shipped release (`Engine.latestFlags.version`). */
  readonly latestVersion: string
}> = [
  { name: "sglang", displayName: "SGLang", latestVersion: "0.5.11" },
  { name: "vllm", displayName: "vLLM", latestVersion: "0.21" }
]

/** The names `--engine` accepts. */
export const engineNames: ReadonlyArray<string> = engines.map((engine) => engine.name)

/** `check`'s GPU facts when not given (`Check.defaultGpus`). */
export const defaultGpus = { count: 1, computeCapability: "9.0", memoryGiB: 80 } as const
