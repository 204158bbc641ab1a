/**
 * One of the checks vLLM runs before the weights load (in vllm/config/*.py and
 * vllm/engine/arg_utils.py), as a value: vLLM's literal message, the releases that have it,
 * what the check looks at, and the change that makes it pass.
 *
 * @since 0.1.0
 */
import type { ModelTraits } from "@mlops/serve/ModelTraits"

/** The GPUs of the host vLLM starts on. @category models */
export interface GpuFacts {
  readonly count: number
  /** CUDA compute capability, `"7.5"` (T4), `"8.0"` (A100), `"9.0"` (H100). */
  readonly computeCapability: string
  /** Memory of one device, MiB. */
  readonly memoryMiB: number
  /** Product name as `nvidia-smi` gives it (`Tesla T4`), when known. */
  readonly name?: string
}

/** What a check sees. @category models */
export interface CheckInput {
  /** Every flag's value by dest, defaults filled in (`Argv.decode`). */
  readonly values: Readonly<Record<string, unknown>>
  /** The dests given on the command line. */
  readonly given: ReadonlySet<string>
  /** From the model's config.json; undefined: model checks are skipped. */
  readonly model: ModelTraits | undefined
  /** Undefined: hardware checks are skipped. */
  readonly gpus: GpuFacts | undefined
  /** The environment vLLM starts with (`VLLM_ALLOW_LONG_MAX_MODEL_LEN`). */
  readonly env: Readonly<Record<string, string>>
  /** The nearest release of the catalogue in use (`0.13`). */
  readonly release: string
}

/**
 * What a check found. `vllmText` is vLLM's own message with this command line's numbers in it
 * (what its log would say); `fix` sets dests to new values (null: back to vLLM's default),
 * `env` sets environment variables instead, when that is the way out.
 *
 * @category models
 */
export interface Finding {
  readonly severity: "error" | "warning"
  readonly vllmText: string
  /** Our explanation, with the numbers. */
  readonly explanation: string
  readonly dests: ReadonlyArray<string>
  readonly fix: Readonly<Record<string, unknown>>
  /** Another way out, in words (`set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`). */
  readonly otherwise?: string
}

/** Release minors, inclusive; `until: null` = still in the newest snapshot. @category models */
export interface Releases {
  readonly from: string
  readonly until: string | null
}

/** @category models */
export interface Rule {
  /** Stable id: `<config file>.<what>`, e.g. `model.heads-divisible-by-tp`. */
  readonly id: string
  /** Where vLLM raises it. */
  readonly raisedIn: string
  /** The message template as vLLM writes it (`{}` where it formats a value). */
  readonly text: string
  readonly releases: Releases
  /** Dests whose flags must exist in the catalogue for the check to make sense. */
  readonly needs: ReadonlyArray<string>
  readonly check: (input: CheckInput) => Finding | undefined
}

const minor = (release: string): number => {
  const [major, min] = release.split(".").map(Number)
  return (major ?? 0) * 1000 + (min ?? 0)
}

/** Whether a release (`0.13`, `0.13.2`) has the rule. @category predicates */
export const inRelease = (rule: Rule, release: string): boolean =>
  minor(release) >= minor(rule.releases.from) &&
  (rule.releases.until === null || minor(release) <= minor(rule.releases.until))

/** @category constructors */
export const error = (
  vllmText: string,
  explanation: string,
  dests: ReadonlyArray<string>,
  fix: Readonly<Record<string, unknown>>,
  otherwise?: string
): Finding => ({
  severity: "error",
  vllmText,
  explanation,
  dests,
  fix,
  ...(otherwise === undefined ? {} : { otherwise })
})

/** @category constructors */
export const warning = (
  vllmText: string,
  explanation: string,
  dests: ReadonlyArray<string>,
  fix: Readonly<Record<string, unknown>>
): Finding => ({ severity: "warning", vllmText, explanation, dests, fix })

/** A number-valued flag, or undefined when unset (None). @category getters */
export const num = (input: CheckInput, dest: string): number | undefined => {
  const v = input.values[dest]
  return typeof v === "number" ? v : undefined
}

/** A boolean flag (unset counts as false). @category getters */
export const on = (input: CheckInput, dest: string): boolean => input.values[dest] === true
