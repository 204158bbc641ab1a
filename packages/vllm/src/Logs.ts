/**
 * What vLLM's logs add to the serving layer's classifier: its start-up lines as lifecycle
 * phases and events, and the signatures of its own failures.
 *
 * @since 0.1.0
 */
import type { EngineLogs } from "@mlops/serve/Classifier"
import { reader } from "./internal/logs/lifecycle.js"
import { signatures } from "./internal/logs/signatures.js"

/** @category logs */
export const logs: EngineLogs = { engine: "vllm", signatures, lifecycle: reader }
