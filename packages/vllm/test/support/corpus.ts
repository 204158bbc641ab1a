/**
 * The real-logs corpus' vLLM cases (corpus/logs: whole lines from public threads, each with its
 * URL), and the vLLM classifier's verdict on one in the corpus' labels.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { classifyText } from "@mlops/serve/Classifier"
import { logs } from "../../src/Logs.js"

const root = join(import.meta.dirname, "../../../../corpus/logs")

export interface VllmCase {
  readonly id: string
  readonly url: string
  readonly label: string
  readonly keyLine: string
  readonly text: string
}

export const loadCase = (id: string): VllmCase => {
  const meta = JSON.parse(readFileSync(join(root, "cases", `${id}.json`), "utf8")) as Omit<
    VllmCase,
    "id" | "text"
  > & {
    readonly engine: string
  }
  return {
    id,
    url: meta.url,
    label: meta.label,
    keyLine: meta.keyLine,
    text: readFileSync(join(root, "cases", `${id}.log`), "utf8")
  }
}

const engineOf = (id: string): string =>
  (JSON.parse(readFileSync(join(root, "cases", `${id}.json`), "utf8")) as { readonly engine: string }).engine

/**
 * The part's vLLM cases: of the batches the classifier was designed against (`"designed"`: those
 * before the first batch split.json lists the cases of), or of batch `n` alone.
 */
export const loadVllmCases = (
  part: "dev" | "heldOut",
  batches: "designed" | number = "designed"
): ReadonlyArray<VllmCase> => {
  const split = JSON.parse(readFileSync(join(root, "split.json"), "utf8")) as Record<
    "dev" | "heldOut",
    ReadonlyArray<string>
  > & { readonly batches: ReadonlyArray<{ readonly batch: number; readonly ids?: ReadonlyArray<string> }> }
  const listed = split.batches.filter((b) => b.ids !== undefined)
  const keep =
    batches === "designed"
      ? (id: string) => !listed.some((b) => b.ids?.includes(id))
      : (id: string) => listed.some((b) => b.batch === batches && b.ids?.includes(id))
  return split[part].filter((id) => keep(id) && engineOf(id) === "vllm").map(loadCase)
}

/** The label the vLLM classifier gives a case: a failure tag, `other` (unclassified) or `none`. */
export const verdict = (c: VllmCase): string => {
  const failure = classifyText(c.text, undefined, [logs]).failure
  return failure === undefined ? "none" : failure._tag === "Unclassified" ? "other" : failure._tag
}
