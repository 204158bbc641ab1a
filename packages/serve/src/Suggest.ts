/** @internal Did-you-mean suggestions for unknown flags. */

/** Levenshtein distance (insert, delete, substitute). */
export const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost)
    }
    previous = current
  }
  return previous[b.length]!
}

const bare = (flag: string) => flag.replace(/^-+/, "").toLowerCase().replaceAll("_", "-")

/**
 * Known spellings close to `given`: by edit distance (typos), then by name prefix (a flag
 * written with one dash or underscores). At most `limit`, closest first.
 */
export const suggest = (given: string, known: Iterable<string>, limit = 3): ReadonlyArray<string> => {
  const name = bare(given.split("=", 1)[0]!)
  if (name === "") return []
  const budget = Math.max(2, Math.floor(name.length / 4))
  const scored: Array<{ flag: string; score: number }> = []
  for (const flag of known) {
    const candidate = bare(flag)
    const distance = editDistance(name, candidate)
    if (distance <= budget) scored.push({ flag, score: distance })
    else if (name.length >= 2 && candidate.startsWith(name)) scored.push({ flag, score: budget + 1 })
  }
  scored.sort((x, y) => x.score - y.score || x.flag.length - y.flag.length || x.flag.localeCompare(y.flag))
  return scored.slice(0, limit).map((s) => s.flag)
}
