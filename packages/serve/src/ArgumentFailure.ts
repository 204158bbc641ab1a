/**
 * Which typed failure an argument-handling exception is, from its type and the stable words of
 * its message. The offline rules and the log classifier both call this, so a problem has the
 * same `_tag` whether preflight predicts it or SGLang raises it.
 * @internal
 */

/** The failures SGLang's argument handling can raise. */
export type ArgumentFailureTag =
  | "MissingSchedulerStrategy"
  | "UnsupportedConfig"
  | "AssertionFailure"
  | "InvalidArgument"

export const argumentFailureTags: ReadonlyArray<ArgumentFailureTag> = [
  "MissingSchedulerStrategy",
  "UnsupportedConfig",
  "AssertionFailure",
  "InvalidArgument"
]

// the hybrid (mamba) models' radix cache and buffer strategy refusing a combination, in any
// release's wording: they name the strategy (`no_buffer`, `extra_buffer`,
// `--mamba-scheduler-strategy`) or the MambaRadixCache
const MAMBA_STRATEGY =
  /no_buffer|extra_buffer|mamba[ _-]scheduler[ _-]strategy|MambaRadixCache|mamba radix cache/i

const UNSUPPORTED =
  /\bsupported only (?:on|for|with)\b|\bcan only be used (?:with|on|for)\b|\brequires SM ?\d{2,3}\b|\bnot (?:yet |currently )?(?:supported|compatible)\b|\b(?:does|do|is|are) not support|\bdoesn't support|\bonly (?:supports?|supported|compatible)\b|\bis only (?:supported|compatible|available)\b|\bonly\b.{1,80}\b(?:is|are) (?:supported|compatible)\b|\bincompatible\b|\bunsupported\b/i

// Python's own TypeErrors say "not supported" about operators, not about the configuration
const PYTHON_OPERATION = /between instances of|operand type|not supported for|object is not/

/** Whether a message says a combination is refused by this build (rather than a bad value). */
export const saysUnsupported = (message: string): boolean =>
  UNSUPPORTED.test(message) && !PYTHON_OPERATION.test(message)

/** Whether a message is the mamba radix-cache / scheduler-strategy refusal. */
export const saysMissingSchedulerStrategy = (message: string): boolean => MAMBA_STRATEGY.test(message)

/** The failure an exception of `errorType` with `message` raised while handling arguments is. */
export const argumentFailureTag = (errorType: string, message: string): ArgumentFailureTag => {
  if (saysMissingSchedulerStrategy(message)) return "MissingSchedulerStrategy"
  if (saysUnsupported(message)) return "UnsupportedConfig"
  return errorType === "AssertionError" || errorType.endsWith(".AssertionError")
    ? "AssertionFailure"
    : "InvalidArgument"
}
