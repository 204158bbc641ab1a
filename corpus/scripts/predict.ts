/** `mlops diagnose`'s verdict on one case, in the corpus' labels (the adapter the scorer calls). */
import * as Diagnose from "@mlops/serve/Diagnose"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import type { Case, Prediction } from "./score.js"

// every registered engine's lines and signatures, as `mlops diagnose` reads a log
const engines = [SglangEngine.engine.logs]

export const predict = (c: Case): Prediction => {
  const { failure } = Diagnose.text(c.id, c.text, engines)
  if (failure === undefined) return { label: "none", reason: "no failure found", basis: "none" }
  return {
    label: failure._tag === "Unclassified" ? "other" : failure._tag,
    reason: failure.reason,
    basis: failure.basis ?? "signature"
  }
}
