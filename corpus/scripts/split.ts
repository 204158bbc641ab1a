/**
 * Splits the real-logs corpus into a development part (designed against) and a held-out part
 * (run only to report). Each batch of new cases is split ONCE, when it is added and before any
 * tuning on it; cases already assigned never move. Seeded (the seed plus the batch number), so
 * a split is reproducible; stratified by label so every class is in both parts; cases of one
 * thread stay together (a new case of a thread already split joins that thread's part).
 *
 *   npx tsx corpus/scripts/split.ts          # assigns the unassigned cases as a new batch
 *   npx tsx corpus/scripts/split.ts --check  # verifies split.json covers exactly the cases
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const SEED = 20261201
const HELD_OUT = 1 / 3

const root = join(import.meta.dirname, "..", "logs")
const casesDir = join(root, "cases")
const splitFile = join(root, "split.json")

interface Meta {
  readonly id: string
  readonly url: string
  readonly label: string
}

const cases: Array<Meta> = readdirSync(casesDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(join(casesDir, f), "utf8")) as Meta)

// mulberry32: a small, well-mixed 32-bit PRNG
const random = (() => {
  let a = SEED >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
})()

const shuffle = <A>(items: Array<A>): Array<A> => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

if (process.argv.includes("--check")) {
  const split = JSON.parse(readFileSync(splitFile, "utf8")) as { dev: Array<string>; heldOut: Array<string> }
  const listed = new Set([...split.dev, ...split.heldOut])
  const missing = cases.filter((c) => !listed.has(c.id)).map((c) => c.id)
  const extra = [...listed].filter((id) => !cases.some((c) => c.id === id))
  if (missing.length > 0 || extra.length > 0) {
    console.error(
      `split.json is out of date: unassigned ${missing.join(", ") || "-"}; unknown ${extra.join(", ") || "-"}`
    )
    process.exit(1)
  }
  console.log(`split.json: ${split.dev.length} development, ${split.heldOut.length} held-out`)
  process.exit(0)
}

interface Split {
  readonly seed: number
  readonly heldOutShare: number
  /** Each batch's size, and (from batch 7 on) its cases, so its figures can be reported apart. */
  readonly batches: ReadonlyArray<{
    readonly batch: number
    readonly cases: number
    readonly ids?: ReadonlyArray<string>
  }>
  readonly dev: ReadonlyArray<string>
  readonly heldOut: ReadonlyArray<string>
}
const previous: Split | undefined = existsSync(splitFile)
  ? (JSON.parse(readFileSync(splitFile, "utf8")) as Split)
  : undefined
const assigned = new Set([...(previous?.dev ?? []), ...(previous?.heldOut ?? [])])
const batch = (previous?.batches.length ?? 0) + 1
const fresh = cases.filter((c) => !assigned.has(c.id))
if (fresh.length === 0) {
  console.log("no unassigned cases")
  process.exit(0)
}
// a new batch draws from its own stream: SEED advanced by the batch number
for (let i = 0; i < batch - 1; i++) random()

const dev: Array<string> = [...(previous?.dev ?? [])]
const heldOut: Array<string> = [...(previous?.heldOut ?? [])]
// a thread already split keeps all its cases in one part
const partOfUrl = new Map<string, "dev" | "heldOut">()
for (const c of cases) {
  if (previous?.dev.includes(c.id)) partOfUrl.set(c.url, "dev")
  if (previous?.heldOut.includes(c.id)) partOfUrl.set(c.url, "heldOut")
}
const toDraw = fresh.filter((c) => {
  const part = partOfUrl.get(c.url)
  if (part === undefined) return true
  ;(part === "dev" ? dev : heldOut).push(c.id)
  return false
})

// one group per thread (URL), labelled by its first case; groups are drawn per label
const groups = new Map<string, Array<Meta>>()
for (const c of toDraw) groups.set(c.url, [...(groups.get(c.url) ?? []), c])
const byLabel = new Map<string, Array<Array<Meta>>>()
for (const group of groups.values()) {
  const label = group[0]!.label
  byLabel.set(label, [...(byLabel.get(label) ?? []), group])
}
for (const label of [...byLabel.keys()].sort()) {
  const shuffled = shuffle(byLabel.get(label)!)
  const take = Math.round(shuffled.length * HELD_OUT)
  shuffled.forEach((group, i) => {
    ;(i < take ? heldOut : dev).push(...group.map((c) => c.id))
  })
}
const split: Split = {
  seed: SEED,
  heldOutShare: HELD_OUT,
  batches: [...(previous?.batches ?? []), { batch, cases: fresh.length, ids: fresh.map((c) => c.id).sort() }],
  dev: dev.sort(),
  heldOut: heldOut.sort()
}
writeFileSync(splitFile, `${JSON.stringify(split, null, 2)}\n`)
console.log(
  `batch ${batch}: ${fresh.length} cases; split.json now ${dev.length} development, ${heldOut.length} held-out`
)
