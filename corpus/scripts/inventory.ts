/**
 * The engines' own failure vocabulary against the classifier: every message of
 * corpus/inventory/<engine>.jsonl (read from SGLang's and vLLM's sources, README there) is pasted
 * as a log in three forms (a bare traceback or the engine's log line; the same with a rank or
 * process prefix on every line; the same quoted in a GitHub comment) and classified the way the
 * corpus is (`predict`). Prints the coverage (the share of messages whose class is named, in all
 * three forms) per engine and sampled release, per form and per class, and lists the misses,
 * grouped by expected class -> class named.
 *
 *   npx tsx corpus/scripts/inventory.ts            # figures and the biggest groups of misses
 *   npx tsx corpus/scripts/inventory.ts --misses   # every miss
 */
import { readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { pathToFileURL } from "node:url"
import { predict } from "./predict.js"

const root = join(import.meta.dirname, "..", "inventory")

export type Engine = "sglang" | "vllm"
export const engines: ReadonlyArray<Engine> = ["sglang", "vllm"]

/** One message template as the inventory holds it. */
export interface Entry {
  readonly engine: Engine
  readonly file: string
  readonly function: string | null
  readonly exceptionType: string
  readonly template: string
  readonly example: string
  /** First and last sampled release that has it. */
  readonly releases: readonly [string, string]
  readonly seenIn: number
  readonly class: string
  readonly why: string
}

export const loadInventory = (engine: Engine): ReadonlyArray<Entry> =>
  readFileSync(join(root, `${engine}.jsonl`), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Entry)

/** The sampled releases of each engine, oldest first (as extract.py wrote them). */
export const releasesOf = (engine: Engine): ReadonlyArray<string> =>
  Object.keys(
    (
      JSON.parse(readFileSync(join(root, "releases.json"), "utf8")) as Record<Engine, Record<string, unknown>>
    )[engine]
  )

/** Whether a sampled release lies in the entry's first..last range. */
export const inRelease = (entry: Entry, release: string, order: ReadonlyArray<string>): boolean => {
  const i = order.indexOf(release)
  return i >= order.indexOf(entry.releases[0]) && i <= order.indexOf(entry.releases[1])
}

export type Form = "bare" | "prefixed" | "quoted"
export const forms: ReadonlyArray<Form> = ["bare", "prefixed", "quoted"]

const isLog = (e: Entry) => e.exceptionType.startsWith("logger.")
const isArgparse = (e: Entry) => e.exceptionType === "ArgumentTypeError"

// where the file sits in an installed package: python/sglang/srt/x.py -> sglang/srt/x.py
const modulePath = (e: Entry) => e.file.replace(/^python\//, "")
const functionName = (e: Entry) => e.function?.split(".").at(-1) ?? "<module>"
const levelOf = (e: Entry) =>
  e.exceptionType === "logger.critical" || e.exceptionType === "logger.fatal" ? "CRITICAL" : "ERROR"

/** The lines of the message as its engine prints them, with no process or rank prefix. */
const bareLines = (e: Entry): Array<string> => {
  if (isArgparse(e)) return e.example.split("\n")
  if (isLog(e)) {
    const base = e.file.split("/").at(-1)
    return (
      e.engine === "vllm"
        ? `${levelOf(e)} 01-01 00:00:00 [${base}:1] ${e.example}`
        : `[2026-01-01 00:00:00] ${levelOf(e)} ${e.example}`
    ).split("\n")
  }
  return [
    "Traceback (most recent call last):",
    `  File "/usr/lib/python3/dist-packages/${modulePath(e)}", line 1, in ${functionName(e)}`,
    ...e.example.split("\n")
  ]
}

/** The entry pasted as a log in one form. */
export const paste = (e: Entry, form: Form): string => {
  const lines = bareLines(e)
  switch (form) {
    case "bare":
      return lines.join("\n")
    case "prefixed": {
      if (e.engine === "vllm") return lines.map((l) => `(EngineCore_0 pid=123) ${l}`).join("\n")
      // SGLang's rank prefix stands in for its timestamp on a log line
      const body = isLog(e) ? `${levelOf(e)} ${e.example}`.split("\n") : lines
      return body.map((l) => `[2026-01-01 00:00:00 TP0] ${l}`).join("\n")
    }
    case "quoted":
      return lines.map((l) => `> ${l}`).join("\n")
  }
}

/** The label the classifier gives a text, as the corpus is scored (`predict`). */
export const labelOf = (id: string, text: string): string =>
  predict({ id, url: "inventory", engine: "other", version: null, label: "", keyLine: "", cut: "", text })
    .label

export interface Verdict {
  readonly entry: Entry
  /** The label named in each form. */
  readonly named: Readonly<Record<Form, string>>
  /** Named its class in every form. */
  readonly covered: boolean
}

export const judge = (entry: Entry): Verdict => {
  const named = Object.fromEntries(
    forms.map((form) => [form, labelOf(`${entry.engine}:${entry.file}`, paste(entry, form))])
  ) as Record<Form, string>
  return { entry, named, covered: forms.every((form) => named[form] === entry.class) }
}

export interface Share {
  readonly covered: number
  readonly total: number
}
const share = (vs: ReadonlyArray<Verdict>, ok: (v: Verdict) => boolean): Share => ({
  covered: vs.filter(ok).length,
  total: vs.length
})
export const pct = (s: Share): string =>
  s.total === 0 ? "   -" : `${((100 * s.covered) / s.total).toFixed(1).padStart(5)}%`

export interface EngineCoverage {
  readonly engine: Engine
  readonly verdicts: ReadonlyArray<Verdict>
  /** Named in all three forms. */
  readonly all: Share
  readonly perForm: Readonly<Record<Form, Share>>
  readonly perRelease: ReadonlyArray<{ readonly release: string; readonly share: Share }>
  readonly perClass: ReadonlyArray<{ readonly label: string; readonly share: Share }>
}

/** Every inventory message of an engine through the classifier. */
export const coverage = (engine: Engine): EngineCoverage => {
  const verdicts = loadInventory(engine).map(judge)
  const order = releasesOf(engine)
  const labels = [...new Set(verdicts.map((v) => v.entry.class))].sort()
  return {
    engine,
    verdicts,
    all: share(verdicts, (v) => v.covered),
    perForm: Object.fromEntries(
      forms.map((form) => [form, share(verdicts, (v) => v.named[form] === v.entry.class)])
    ) as Record<Form, Share>,
    perRelease: order.map((release) => ({
      release,
      share: share(
        verdicts.filter((v) => inRelease(v.entry, release, order)),
        (v) => v.covered
      )
    })),
    perClass: labels.map((label) => ({
      label,
      share: share(
        verdicts.filter((v) => v.entry.class === label),
        (v) => v.covered
      )
    }))
  }
}

/** One line per engine: the coverage in all forms and in each (for `npm run eval:diagnose`). */
export const summary = (covs: ReadonlyArray<EngineCoverage>): string =>
  covs
    .map(
      (c) =>
        `inventory (${c.engine}): ${pct(c.all).trim()} of ${c.all.total} engine messages named in all 3 paste forms (${forms
          .map((f) => `${f} ${pct(c.perForm[f]).trim()}`)
          .join(", ")})`
    )
    .join("\n")

/** Misses grouped by expected class -> the class named in the bare form (else the first form that missed). */
export const missGroups = (c: EngineCoverage) => {
  const groups = new Map<string, Array<Verdict>>()
  for (const v of c.verdicts) {
    if (v.covered) continue
    const form = forms.find((f) => v.named[f] !== v.entry.class) ?? "bare"
    const key = `${v.entry.class} -> ${v.named[form]}${form === "bare" ? "" : ` (${form} form)`}`
    groups.set(key, [...(groups.get(key) ?? []), v])
  }
  return [...groups].sort(([, a], [, b]) => b.length - a.length)
}

export const render = (covs: ReadonlyArray<EngineCoverage>, allMisses: boolean): string => {
  const out: Array<string> = []
  for (const c of covs) {
    out.push(
      `== ${c.engine}: ${c.all.covered}/${c.all.total} messages named in all 3 forms, ${pct(c.all).trim()}`
    )
    out.push(`   per form: ${forms.map((f) => `${f} ${pct(c.perForm[f]).trim()}`).join(", ")}`)
    out.push("", "   release            messages  covered")
    for (const r of c.perRelease)
      out.push(
        `   ${r.release.padEnd(18)} ${String(r.share.total).padStart(8)}  ${String(r.share.covered).padStart(7)}  ${pct(r.share)}`
      )
    out.push("", "   class                      messages  covered")
    for (const k of c.perClass)
      out.push(
        `   ${k.label.padEnd(26)} ${String(k.share.total).padStart(8)}  ${String(k.share.covered).padStart(7)}  ${pct(k.share)}`
      )
    out.push("", `   misses: expected -> named (${c.all.total - c.all.covered})`)
    for (const [key, vs] of missGroups(c)) {
      out.push(`   ${String(vs.length).padStart(4)}  ${key}`)
      for (const v of allMisses ? vs : vs.slice(0, 3))
        out.push(
          `           ${v.entry.file.split("/").at(-1)} ${v.entry.exceptionType}: ${v.entry.template.replace(/\s+/g, " ").slice(0, 130)}`
        )
    }
    out.push("")
  }
  return out.join("\n")
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const covs = engines.map(coverage)
  console.log(render(covs, process.argv.includes("--misses")))
  console.log(summary(covs))
}
