/**
 * The vLLM classifier (the serving layer's with vLLM's lines and signatures) on the real-logs
 * corpus' vLLM cases: accuracy on the development and held-out parts, and the development
 * misses. Usage (from the repository root): npx tsx packages/vllm/scripts/eval-corpus.ts
 */
import { loadVllmCases, verdict } from "../test/support/corpus.js"

for (const part of ["dev", "heldOut"] as const) {
  const cases = loadVllmCases(part)
  const misses = cases.filter((c) => verdict(c) !== c.label)
  const right = cases.length - misses.length
  console.log(`${part}: ${right}/${cases.length} = ${((100 * right) / cases.length).toFixed(1)}%`)
  if (part === "dev") for (const m of misses) console.log(`  ${m.id}: ${m.label} -> ${verdict(m)}`)
}
