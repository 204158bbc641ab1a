/**
 * `npm run eval:diagnose`: `mlops diagnose` on the real-logs corpus. Prints the development
 * part (designed against) and the held-out part (never tuned against) with accuracy, per-class
 * precision and recall, the confusion table and every miss.
 *
 *   npm run eval:diagnose                 # both parts
 *   npm run eval:diagnose -- --part dev   # one part
 *
 * Then each batch that lists its cases in split.json (batch 7 on): its development and held-out
 * parts on their own lines (summary figures only).
 * Last, the inventory coverage per engine: the share of SGLang's and vLLM's own failure messages
 * (corpus/inventory) whose class the classifier names (`npx tsx corpus/scripts/inventory.ts`).
 */
import { coverage, engines, summary } from "./inventory.js"
import { predict } from "./predict.js"
import { listedBatches, loadPart, type Part, render, score } from "./score.js"

const only = process.argv.includes("--part") ? process.argv[process.argv.indexOf("--part") + 1] : undefined
const parts: ReadonlyArray<Part> =
  only === "dev" ? ["dev"] : only === "held-out" || only === "heldOut" ? ["heldOut"] : ["dev", "heldOut"]
const reports = parts.map((part) => score(part, loadPart(part), predict))
console.log(reports.map(render).join("\n\n"))
console.log("")
for (const r of reports)
  console.log(
    `${r.part === "dev" ? "development" : "held-out"}: ${(r.accuracy * 100).toFixed(1)}% (${r.correct}/${r.cases}); basis: ${[
      ...r.basis.entries()
    ]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([basis, n]) => `${basis} ${n.cases} (${n.correct} right)`)
      .join(", ")}`
  )
// the batches that list their cases (batch 7 on), each on its own: the old parts' figures are the
// whole parts' less these
for (const { batch, ids } of listedBatches())
  for (const part of parts) {
    const r = score(
      part,
      loadPart(part).filter((c) => ids.has(c.id)),
      predict
    )
    console.log(
      `batch ${batch} ${part === "dev" ? "development" : "held-out"}: ${(r.accuracy * 100).toFixed(1)}% (${r.correct}/${r.cases}); basis: ${[
        ...r.basis.entries()
      ]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([basis, n]) => `${basis} ${n.cases} (${n.correct} right)`)
        .join(", ")}`
    )
  }
// the engines' own failure messages (corpus/inventory), named by class in all 3 paste forms
console.log(summary(engines.map(coverage)))
