/**
 * What SGLang adds to the neutral classifier: its lifecycle lines and its own signatures.
 * @internal
 */
import type { EngineLogs } from "@mlops/serve/Classifier"
import { reader } from "./lifecycle.js"
import { mambaStrategy } from "./mambaStrategy.js"

export const logs: EngineLogs = {
  engine: "sglang",
  signatures: [{ before: "architecture-unsupported", signature: mambaStrategy }],
  lifecycle: reader
}
