/**
 * Percentiles of a run's latencies: linear between the ranks of the sorted values (numpy's
 * default, which the engines' own benchmark scripts use).
 *
 * @internal
 */

/** p50/p90/p99 and the mean, in ms; undefined values when there is no sample. */
export interface Spread {
  readonly mean: number | undefined
  readonly p50: number | undefined
  readonly p90: number | undefined
  readonly p99: number | undefined
}

/** The value below which `q` (0–1) of the sorted samples lie (linear between ranks, numpy's default). */
export const percentile = (sorted: ReadonlyArray<number>, q: number): number | undefined => {
  if (sorted.length === 0) return undefined
  const at = (sorted.length - 1) * q
  const lo = Math.floor(at)
  const hi = Math.ceil(at)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo)
}

export const spread = (values: ReadonlyArray<number>): Spread => {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    mean: sorted.length === 0 ? undefined : sorted.reduce((a, b) => a + b, 0) / sorted.length,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99)
  }
}
