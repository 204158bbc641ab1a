/**
 * Scoring `mlops diagnose` on the real-logs corpus: load a part, classify every case, and report
 * accuracy, per-class precision and recall, the confusion table and every miss with its key line.
 * Used by `npm run eval:diagnose` and by the corpus test.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"

const root = join(import.meta.dirname, "..", "logs")

export type Part = "dev" | "heldOut"

export interface Case {
  readonly id: string
  readonly url: string
  readonly engine: string
  readonly version: string | null
  readonly label: string
  readonly keyLine: string
  readonly cut: string
  readonly notes?: string
  /** The log itself. */
  readonly text: string
}

export const partIds = (part: Part): ReadonlyArray<string> => {
  const split = JSON.parse(readFileSync(join(root, "split.json"), "utf8")) as Record<Part, Array<string>>
  return split[part]
}

export const loadCase = (id: string): Case => ({
  ...(JSON.parse(readFileSync(join(root, "cases", `${id}.json`), "utf8")) as Omit<Case, "text">),
  text: readFileSync(join(root, "cases", `${id}.log`), "utf8")
})

export const loadPart = (part: Part): ReadonlyArray<Case> => partIds(part).map(loadCase)

/** The batches split.json lists the cases of (from batch 7 on; earlier ones give counts only). */
export const listedBatches = (): ReadonlyArray<{
  readonly batch: number
  readonly ids: ReadonlySet<string>
}> => {
  const split = JSON.parse(readFileSync(join(root, "split.json"), "utf8")) as {
    readonly batches: ReadonlyArray<{ readonly batch: number; readonly ids?: ReadonlyArray<string> }>
  }
  return split.batches.flatMap((b) => (b.ids === undefined ? [] : [{ batch: b.batch, ids: new Set(b.ids) }]))
}

/** What the classifier said, in the corpus' labels. */
export interface Prediction {
  /** A failure tag, `none` (no failure found) or `other` (`Unclassified`). */
  readonly label: string
  /** The classifier's one-line reason, for the miss list. */
  readonly reason: string
  /** How it was reached: a signature, a fallback from the exception's structure, or none found. */
  readonly basis: "signature" | "fallback" | "none"
}

export interface ClassScore {
  readonly label: string
  readonly cases: number
  readonly predicted: number
  readonly correct: number
  readonly precision: number
  readonly recall: number
}

export interface Miss {
  readonly id: string
  readonly label: string
  readonly predicted: string
  readonly keyLine: string
  readonly reason: string
}

export interface Report {
  readonly part: Part
  readonly cases: number
  readonly correct: number
  readonly accuracy: number
  readonly classes: ReadonlyArray<ClassScore>
  /** label -> predicted -> count */
  readonly confusion: ReadonlyMap<string, ReadonlyMap<string, number>>
  readonly misses: ReadonlyArray<Miss>
  /** basis -> verdicts reached that way and how many of them were right */
  readonly basis: ReadonlyMap<string, { readonly cases: number; readonly correct: number }>
}

export const score = (part: Part, cases: ReadonlyArray<Case>, classify: (c: Case) => Prediction): Report => {
  const confusion = new Map<string, Map<string, number>>()
  const misses: Array<Miss> = []
  const predictions = cases.map((c) => ({ c, p: classify(c) }))
  for (const { c, p } of predictions) {
    const row = confusion.get(c.label) ?? new Map<string, number>()
    row.set(p.label, (row.get(p.label) ?? 0) + 1)
    confusion.set(c.label, row)
    if (p.label !== c.label)
      misses.push({ id: c.id, label: c.label, predicted: p.label, keyLine: c.keyLine, reason: p.reason })
  }
  const labels = [...new Set([...cases.map((c) => c.label), ...predictions.map(({ p }) => p.label)])].sort()
  const classes = labels.map((label) => {
    const inClass = predictions.filter(({ c }) => c.label === label)
    const predicted = predictions.filter(({ p }) => p.label === label)
    const correct = inClass.filter(({ p }) => p.label === label).length
    return {
      label,
      cases: inClass.length,
      predicted: predicted.length,
      correct,
      precision: predicted.length === 0 ? Number.NaN : correct / predicted.length,
      recall: inClass.length === 0 ? Number.NaN : correct / inClass.length
    }
  })
  const correct = cases.length - misses.length
  const basis = new Map<string, { cases: number; correct: number }>()
  for (const { c, p } of predictions) {
    const entry = basis.get(p.basis) ?? { cases: 0, correct: 0 }
    basis.set(p.basis, { cases: entry.cases + 1, correct: entry.correct + (p.label === c.label ? 1 : 0) })
  }
  return {
    part,
    cases: cases.length,
    correct,
    accuracy: correct / cases.length,
    classes,
    confusion,
    misses,
    basis
  }
}

const pct = (x: number) => (Number.isNaN(x) ? "   -" : `${(x * 100).toFixed(0).padStart(3)}%`)

/** The report as text: the figures, the per-class table, the confusion table, the misses. */
export const render = (report: Report): string => {
  const title = report.part === "dev" ? "development part" : "held-out part"
  const lines = [
    `== ${title}: ${report.correct}/${report.cases} correct, accuracy ${(report.accuracy * 100).toFixed(1)}%`,
    "",
    `${"class".padEnd(26)} cases  pred  correct  precision  recall`
  ]
  for (const c of report.classes) {
    lines.push(
      `${c.label.padEnd(26)} ${String(c.cases).padStart(5)} ${String(c.predicted).padStart(5)} ${String(c.correct).padStart(8)}       ${pct(c.precision)}    ${pct(c.recall)}`
    )
  }
  lines.push("", "confusion (rows: label, columns: predicted; only non-zero cells)")
  for (const [label, row] of [...report.confusion].sort(([a], [b]) => a.localeCompare(b))) {
    const cells = [...row]
      .sort(([, a], [, b]) => b - a)
      .map(([p, n]) => `${p === label ? "=" : ""}${p} ${n}`)
      .join(", ")
    lines.push(`  ${label.padEnd(26)} ${cells}`)
  }
  lines.push("", `misses (${report.misses.length})`)
  for (const m of report.misses) {
    lines.push(`  ${m.id}: ${m.label} -> ${m.predicted}`)
    lines.push(`      key line: ${m.keyLine.trim().slice(0, 160)}`)
    lines.push(`      said:     ${m.reason.slice(0, 160)}`)
  }
  return lines.join("\n")
}

/** The labels a case (or an inventory entry) may carry: the classifier's failure tags, `other` and `none` (README). */
export const labels: ReadonlySet<string> = new Set([
  "ContainerEngineUnreachable",
  "ContainerGpuUnavailable",
  "CudaDriverTooOld",
  "SharedMemoryTooSmall",
  "ArgparseError",
  "AssertionFailure",
  "InvalidArgument",
  "MissingSchedulerStrategy",
  "OOM",
  "HostOutOfMemory",
  "PortInUse",
  "ModelNotFound",
  "TrustRemoteCodeRequired",
  "UnsupportedConfig",
  "DistributedError",
  "CudaError",
  "DependencyError",
  "StartupStalled",
  "Hangup",
  "LossDiverged",
  "ProcessExited",
  "other",
  "none"
])
