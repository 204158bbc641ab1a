/**
 * An engine's Prometheus `/metrics` page as samples (`name{labels} value` lines), and the
 * figures a benchmark reads from two pages, one before and one after its run: each engine
 * says which (`Engine.metrics`), since their names differ and change between releases
 * (SGLang's prefix went `sglang:` → `sglang_` → `sglang:`).
 *
 * @since 0.1.0
 */

/** One line of the page. @category models */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** @category models */
export type Samples = ReadonlyArray<Sample>

/** What an engine's pages say about a run. @category models */
export interface RunFigures {
  /** Mean tokens per speculative decoding step over the run (undefined: not speculative, or not told). */
  readonly acceptLength: number | undefined
  /** Tokens the engine says it generated during the run. */
  readonly generationTokens: number | undefined
  /** Requests the engine says it finished during the run. */
  readonly requests: number | undefined
}

/** How an engine's pages are read. @category models */
export interface EngineMetrics {
  /** How to turn the page on when the server does not serve it (`--enable-metrics`); undefined: always served. */
  readonly enable: string | undefined
  readonly figures: (before: Samples, after: Samples) => RunFigures
}

const unescapeLabel = (value: string) =>
  value.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c))

const sampleLine = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?$/
const labelPair = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** The samples of a page in Prometheus' text format (comments and lines it cannot read skipped). @category parsing */
export const parse = (text: string): Samples => {
  const samples: Array<Sample> = []
  for (const raw of text.split("\n")) {
    const line = raw.trim()
    if (line === "" || line.startsWith("#")) continue
    const m = sampleLine.exec(line)
    if (m === null) continue
    const value = Number(
      m[3] === "+Inf" ? Number.POSITIVE_INFINITY : m[3] === "-Inf" ? Number.NEGATIVE_INFINITY : m[3]
    )
    if (Number.isNaN(value) && m[3] !== "NaN") continue
    const labels: Record<string, string> = {}
    for (const pair of (m[2] ?? "").matchAll(labelPair)) labels[pair[1]!] = unescapeLabel(pair[2]!)
    samples.push({ name: m[1]!, labels, value })
  }
  return samples
}

/** The sum of every series of the first of `names` the page has (several engines or label sets add up); undefined when it has none. @category figures */
export const total = (samples: Samples, names: ReadonlyArray<string>): number | undefined => {
  for (const name of names) {
    const found = samples.filter((s) => s.name === name)
    if (found.length > 0) return found.reduce((sum, s) => sum + s.value, 0)
  }
  return undefined
}

/** The mean over the series of the first of `names` the page has: a gauge reported per scheduler (data-parallel ranks) is one figure, not their sum. @category figures */
export const mean = (samples: Samples, names: ReadonlyArray<string>): number | undefined => {
  for (const name of names) {
    const found = samples.filter((s) => s.name === name)
    if (found.length > 0) return found.reduce((sum, s) => sum + s.value, 0) / found.length
  }
  return undefined
}

/** How much a counter grew between two pages (undefined when either lacks it; a restart's reset counts from 0). @category figures */
export const increase = (
  before: Samples,
  after: Samples,
  names: ReadonlyArray<string>
): number | undefined => {
  const end = total(after, names)
  if (end === undefined) return undefined
  const start = total(before, names) ?? 0
  return end >= start ? end - start : end
}
