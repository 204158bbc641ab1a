/**
 * SGLang's hybrid (mamba) models refusing the radix cache / buffer strategy combination, in
 * any release's wording.
 * @internal
 */
import { saysMissingSchedulerStrategy } from "@mlops/serve/ArgumentFailure"
import * as F from "@mlops/serve/Failures"
import { base, firstLine, reasonOf, type Signature, Tier } from "@mlops/serve/LogSignature"

const MAMBA_LINE =
  /compatible with radix cache|MambaRadixCache|incompatible with no_buffer|extra_buffer (?:is|needs|requires|only)/i

export const mambaStrategy: Signature = {
  id: "mamba-radix-cache-strategy",
  tag: "MissingSchedulerStrategy",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.5.5-0.5.11",
      text: "ValueError: Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer. To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1."
    },
    {
      from: "SGLang main 2026",
      text: "ValueError: Spec decoding for Qwen3NextForCausalLM incompatible with no_buffer radix cache. Use extra_buffer with SGLANG_ENABLE_SPEC_V2=1."
    },
    { from: "SGLang 0.5.x", text: "AssertionError: Page size must be 1 for MambaRadixCache v1, got 128" },
    { from: "SGLang 0.5.x", text: "AssertionError: extra_buffer needs CUDA/MUSA/NPU (FLA)." }
  ],
  match: (s) =>
    s.final !== undefined
      ? saysMissingSchedulerStrategy(firstLine(s.final.message)) && !/sanity check/i.test(s.final.message)
      : MAMBA_LINE.test(s.text),
  build: (s) => {
    const architecture = /(?:Speculative|Spec) decoding for (\w+)/.exec(s.flat)?.[1]
    return new F.MissingSchedulerStrategy({
      ...base(
        s,
        reasonOf(s),
        /disable-radix-cache|disable_radix_cache/.test(s.flat)
          ? { flags: { "--mamba-scheduler-strategy": "no_buffer" } }
          : /page.?size/i.test(s.flat)
            ? { flags: { "--mamba-scheduler-strategy": "extra_buffer" }, action: "or --page-size 1" }
            : { flags: { "--mamba-scheduler-strategy": "extra_buffer" } }
      ),
      ...(architecture === undefined ? {} : { architecture })
    })
  }
}
