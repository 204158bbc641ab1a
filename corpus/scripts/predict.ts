/** `mlops diagnose`'s verdict on one case, in the corpus' labels (the adapter the scorer calls). */
import * as Diagnose from "@mlops/sglang/Diagnose"
import type { Case, Prediction } from "./score.js"

export const predict = (c: Case): Prediction => {
  const { failure } = Diagnose.text(c.id, c.text)
  if (failure === undefined) return { label: "none", reason: "no failure found" }
  return {
    label: failure._tag === "Unclassified" ? "other" : failure._tag,
    reason: failure.reason
  }
}
