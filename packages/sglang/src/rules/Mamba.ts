/**
 * Mamba scheduler rules for hybrid linear-attention models (rules.md R19, R21-R24, R26):
 * the scheduler strategy, the radix cache, track interval and page size, PD decode.
 * Architecture-specific defaults and linear-attention kernels are in `HybridModels.ts`.
 *
 * @since 0.1.0
 */
import { platformOf, releaseField } from "../internal/rules/helpers.js"
import { mambaArchitectureOf } from "../internal/rules/mambaArchitectures.js"
import { rangeOf } from "../internal/rules/ranges.js"
import * as Rule from "../Rule.js"
import * as VersionRange from "../VersionRange.js"

const FLA_CHUNK_SIZE = 64

const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b))

/** R26: a PD decode server forces chunk cache. */
export const pdDecodeChunkCache = Rule.make({
  id: "R26",
  title: "PD decode server forces chunk cache",
  versions: rangeOf("R26"),
  order: { step: 5, sub: 1 },
  kind: "adjust",
  check: ({ args }) =>
    args.disaggregation_mode === "decode" &&
    !args.disaggregation_decode_enable_radix_cache &&
    !args.disable_radix_cache
      ? Rule.adjust(
          { disable_radix_cache: true },
          "a PD decode server runs without radix cache unless --disaggregation-decode-enable-radix-cache",
          "KV cache is forced as chunk cache for decode server"
        )
      : undefined
})

/** R26: ... which turns extra_buffer back into no_buffer. */
export const pdDecodeNoExtraBuffer = Rule.make({
  id: "R26.extra-buffer",
  title: "PD decode falls back to mamba no_buffer",
  versions: rangeOf("R26.extra-buffer"),
  order: { step: 5, sub: 2 },
  kind: "adjust",
  check: ({ args }) =>
    args.disaggregation_mode === "decode" &&
    !args.disaggregation_decode_enable_radix_cache &&
    args.mamba_scheduler_strategy === "extra_buffer"
      ? Rule.adjust(
          { mamba_scheduler_strategy: "no_buffer" },
          "extra_buffer needs radix cache, which a PD decode server does not have",
          "Mamba extra_buffer is disabled because decode disaggregation currently forces chunk cache. Falling back to no_buffer."
        )
      : undefined
})

/** R19: `auto` means no_buffer in 0.5.11. */
export const autoStrategy = Rule.make({
  id: "R19",
  title: "mamba scheduler strategy auto -> no_buffer",
  versions: rangeOf("R19"),
  order: { step: 8, sub: 10 },
  kind: "adjust",
  check: ({ args }) =>
    args.mamba_scheduler_strategy === "auto"
      ? Rule.adjust(
          { mamba_scheduler_strategy: "no_buffer" },
          "SGLang 0.5.11 resolves `auto` to no_buffer",
          undefined
        )
      : undefined
})

/** R21: extra_buffer only for archs that support it. */
export const extraBufferUnsupported = Rule.make({
  id: "R21",
  title: "mamba extra_buffer not supported for the architecture",
  versions: rangeOf("R21"),
  order: { step: 12, sub: 4 },
  kind: "fatal",
  check: ({ args, traits }) => {
    const spec = mambaArchitectureOf(traits)
    if (spec === undefined || spec.extraBufferAllowed || args.mamba_scheduler_strategy !== "extra_buffer") {
      return undefined
    }
    return Rule.violation({
      errorType: "AssertionError",
      message: `--mamba-scheduler-strategy extra_buffer is not available for ${traits?.architecture}`,
      engineMessage: `mamba extra_buffer is not supported for ${traits?.architecture} model`,
      fields: ["mamba_scheduler_strategy"],
      fix: { mamba_scheduler_strategy: "no_buffer" }
    })
  }
})

/** R22: extra_buffer needs the radix cache. */
export const extraBufferNeedsRadix = Rule.make({
  id: "R22",
  title: "mamba extra_buffer requires radix cache",
  versions: rangeOf("R22"),
  order: { step: 12, sub: 5 },
  kind: "fatal",
  check: ({ args, traits, version }) =>
    mambaArchitectureOf(traits) !== undefined &&
    args.mamba_scheduler_strategy === "extra_buffer" &&
    args.disable_radix_cache
      ? Rule.violation({
          errorType: "ValueError",
          message: "--mamba-scheduler-strategy extra_buffer only makes sense with the radix cache on",
          // 0.5.13 added the period after the flag
          engineMessage: `mamba extra_buffer is not compatible with --disable-radix-cache${VersionRange.atLeast(version, "0.5.13") ? "." : ""} Overlap scheduling is already supported with no_buffer + disable_radix_cache. Please use --mamba-scheduler-strategy no_buffer instead.`,
          fields: ["mamba_scheduler_strategy", "disable_radix_cache"],
          fix: { mamba_scheduler_strategy: "no_buffer" },
          alternatives: [{ disable_radix_cache: false }]
        })
      : undefined
})

const extraBufferActive = (input: Rule.RuleInput): boolean =>
  mambaArchitectureOf(input.traits) !== undefined && input.args.mamba_scheduler_strategy === "extra_buffer"

/** R23: extra_buffer only on CUDA / MUSA. */
export const extraBufferPlatform = Rule.make({
  id: "R23.platform",
  title: "mamba extra_buffer only on CUDA and MUSA",
  versions: rangeOf("R23.platform"),
  order: { step: 12, sub: 6 },
  kind: "fatal",
  check: (input) =>
    extraBufferActive(input) && platformOf(input) === "rocm"
      ? Rule.violation({
          errorType: "AssertionError",
          message: "extra_buffer needs the FLA kernels, which run only on CUDA and MUSA",
          engineMessage: "Mamba extra_buffer is only supported on CUDA and MUSA devices with FLA backend",
          fields: ["mamba_scheduler_strategy"],
          fix: { mamba_scheduler_strategy: "no_buffer" }
        })
      : undefined
})

/** R23: the track interval must cover the draft tokens (raw user value, before R13). */
export const trackIntervalVsDraft = Rule.make({
  id: "R23.draft-tokens",
  title: "mamba track interval >= speculative draft tokens",
  versions: rangeOf("R23.draft-tokens"),
  order: { step: 12, sub: 7 },
  kind: "fatal",
  check: (input) => {
    const { mamba_track_interval: interval, speculative_num_draft_tokens: draft } = input.args
    if (!extraBufferActive(input) || draft === null || interval >= draft) return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `--mamba-track-interval ${interval} is smaller than --speculative-num-draft-tokens ${draft}`,
      engineMessage: `mamba_track_interval ${interval} must be greater than or equal to speculative_num_draft_tokens ${draft}`,
      fields: ["mamba_track_interval", "speculative_num_draft_tokens"],
      fix: { mamba_track_interval: Math.ceil(draft / FLA_CHUNK_SIZE) * FLA_CHUNK_SIZE }
    })
  }
})

/** R23: the track interval must be a multiple of the page size. */
export const trackIntervalVsPage = Rule.make({
  id: "R23.page-size",
  title: "mamba track interval divisible by page size",
  versions: rangeOf("R23.page-size"),
  order: { step: 12, sub: 8 },
  kind: "fatal",
  check: (input) => {
    const { mamba_track_interval: interval, page_size: page } = input.args
    if (!extraBufferActive(input) || page === null || page <= 0 || interval % page === 0) return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `--mamba-track-interval ${interval} is not a multiple of --page-size ${page}`,
      engineMessage: `mamba_track_interval ${interval} must be divisible by page_size ${page}`,
      fields: ["mamba_track_interval", "page_size"],
      // The largest page size that divides the interval and passes the FLA chunk rule below.
      fix: { page_size: gcd(interval, FLA_CHUNK_SIZE) },
      alternatives: [{ mamba_track_interval: page * Math.max(1, Math.round(interval / page)) }]
    })
  }
})

/** R23: page size and the FLA chunk size (64) must divide one another. */
export const pageVsFlaChunk = Rule.make({
  id: "R23.fla-chunk",
  title: "page size and FLA chunk size divide one another",
  versions: rangeOf("R23.fla-chunk"),
  order: { step: 12, sub: 9 },
  kind: "fatal",
  check: (input) => {
    const page = input.args.page_size
    if (!extraBufferActive(input) || page === null || page <= 0) return undefined
    if (Math.max(FLA_CHUNK_SIZE, page) % Math.min(FLA_CHUNK_SIZE, page) === 0) return undefined
    return Rule.violation({
      errorType: "AssertionError",
      message: `--page-size ${page} and the FLA chunk size 64 must divide one another (use a power of two)`,
      engineMessage: `For SSM models with extra buffer, either FLA_CHUNK_SIZE or page_size must be divisible by the other, got FLA_CHUNK_SIZE=${FLA_CHUNK_SIZE}, self.page_size=${page}`,
      fields: ["page_size"],
      fix: { page_size: 64 }
    })
  }
})

const noBufferWithRadix = (input: Rule.RuleInput): boolean =>
  mambaArchitectureOf(input.traits) !== undefined &&
  input.args.mamba_scheduler_strategy === "no_buffer" &&
  !input.args.disable_radix_cache

/** R24: no_buffer + radix cache needs page size 1. */
export const noBufferPageSize = Rule.make({
  id: "R24.page-size",
  title: "mamba no_buffer with radix cache forces page size 1",
  versions: rangeOf("R24.page-size"),
  order: { step: 12, sub: 10 },
  kind: "adjust",
  check: (input) => {
    const page = input.args.page_size
    if (!noBufferWithRadix(input) || page === null || page === 1) return undefined
    const arch = input.traits?.architecture
    return Rule.adjust(
      { page_size: 1 },
      "the no_buffer mamba radix cache works on single-token pages",
      `${arch} with radix cache requires page_size=1 in the current Mamba scheduling mode (no_buffer), but got ${page}. Automatically setting page_size=1.`
    )
  }
})

/** R24: no_buffer + radix cache without speculative decoding disables the overlap scheduler. */
export const noBufferOverlap = Rule.make({
  id: "R24.overlap",
  title: "mamba no_buffer with radix cache disables overlap schedule",
  versions: rangeOf("R24.overlap"),
  order: { step: 12, sub: 11 },
  kind: "adjust",
  check: (input) =>
    noBufferWithRadix(input) && input.args.speculative_algorithm === null
      ? Rule.adjust(
          { disable_overlap_schedule: true },
          "mamba no_buffer cannot overlap scheduling with the radix cache on",
          "Disabling overlap schedule since mamba no_buffer is not compatible with overlap schedule, try to use --disable-radix-cache if overlap schedule is necessary"
        )
      : undefined
})

/** R24: ... and with trtllm_mha (page size 1 impossible) the radix cache goes instead. */
export const noBufferTrtllm = Rule.make({
  id: "R24.trtllm-mha",
  title: "mamba no_buffer with trtllm_mha disables radix cache",
  versions: rangeOf("R24.trtllm-mha"),
  order: { step: 12, sub: 12 },
  kind: "adjust",
  check: (input) =>
    noBufferWithRadix(input) &&
    input.args.speculative_algorithm === null &&
    input.args.attention_backend === "trtllm_mha"
      ? Rule.adjust(
          { disable_radix_cache: true, disable_overlap_schedule: false },
          "trtllm_mha cannot use single-token pages, so the radix cache is dropped and overlap comes back",
          "Disabling radix cache since trtllm_mha does not support page_size = 1, which is required by MambaRadixCache. Try to use --attention-backend triton if radix cache is necessary."
        )
      : undefined
})

/** R24 (the incident's first failure): speculative decoding + no_buffer + radix cache. */
export const noBufferSpeculative = Rule.make({
  id: "R24",
  title: "speculative decoding with mamba no_buffer and radix cache",
  versions: rangeOf("R24"),
  order: { step: 12, sub: 13 },
  kind: "fatal",
  check: (input) => {
    if (!noBufferWithRadix(input) || input.args.speculative_algorithm === null) return undefined
    const arch = input.traits?.architecture
    // 0.5.11 added the ROCm exception; 0.5.10 raises there too
    if (platformOf(input) === "rocm" && VersionRange.atLeast(input.version, "0.5.11")) {
      return Rule.adjust(
        { disable_radix_cache: true },
        "on ROCm SGLang drops the radix cache for speculative decoding of hybrid models",
        `Speculative decoding for ${arch} is not compatible with radix cache on ROCm devices. Automatically disabling radix cache.`
      )
    }
    return Rule.violation({
      errorType: "ValueError",
      message: `speculative decoding on the hybrid model ${arch} needs --mamba-scheduler-strategy extra_buffer to keep the radix cache (SGLang resolves the default "auto" to no_buffer), or --disable-radix-cache`,
      engineMessage: `Speculative decoding for ${arch} is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set SGLANG_ENABLE_SPEC_V2=1.`,
      fields: ["speculative_algorithm", "mamba_scheduler_strategy", "disable_radix_cache"],
      fix: { mamba_scheduler_strategy: "extra_buffer" },
      alternatives: [{ disable_radix_cache: true }]
    })
  }
})

/** This family, in SGLang's order. */
/**
 * R24.no-buffer: from 0.5.14 the mamba radix cache's strategy is `--mamba-radix-cache-strategy`
 * (`--mamba-scheduler-strategy` its deprecated alias), and an explicit no_buffer with the radix
 * cache is checked, not adjusted: single-token pages, no overlap scheduler, no trtllm_mha.
 */
export const noBufferChecked = Rule.make({
  id: "R24.no-buffer",
  title: "an explicit mamba no_buffer radix cache: page size 1, no overlap, no trtllm_mha",
  versions: rangeOf("R24.no-buffer"),
  order: { step: 12, sub: 14 },
  kind: "fatal",
  check: (input) => {
    const { args } = input
    if (mambaArchitectureOf(input.traits) === undefined || args.disable_radix_cache) return undefined
    if (releaseField(args, "mamba_radix_cache_strategy") !== "no_buffer") return undefined
    const violation = (engineMessage: string, message: string, fix: Rule.Patch) =>
      Rule.violation({
        errorType: "AssertionError",
        message,
        engineMessage,
        fields: ["page_size", "disable_overlap_schedule", "attention_backend", "disable_radix_cache"],
        fix,
        alternatives: [{ disable_radix_cache: true }]
      })
    if (args.page_size !== null && args.page_size !== 1)
      return violation(
        "no_buffer only supports page_size=1.",
        `the mamba no_buffer radix cache works on single-token pages, not --page-size ${args.page_size}`,
        { page_size: 1 }
      )
    if (!args.disable_overlap_schedule)
      return violation(
        "no_buffer do not support overlap schedule. Try to set disable_overlap_schedule=True.",
        "the mamba no_buffer radix cache cannot overlap scheduling: add --disable-overlap-schedule, or use the default strategy (auto picks extra_buffer where it can)",
        { disable_overlap_schedule: true }
      )
    if (args.attention_backend === "trtllm_mha")
      return violation(
        "no_buffer do not support trtllm_mha attention backend.",
        "the mamba no_buffer radix cache does not work with the trtllm_mha attention backend",
        { attention_backend: "triton" }
      )
    return undefined
  }
})

export const rules: ReadonlyArray<Rule.Rule> = [
  pdDecodeChunkCache,
  pdDecodeNoExtraBuffer,
  autoStrategy,
  extraBufferUnsupported,
  extraBufferNeedsRadix,
  extraBufferPlatform,
  trackIntervalVsDraft,
  trackIntervalVsPage,
  pageVsFlaChunk,
  noBufferPageSize,
  noBufferOverlap,
  noBufferTrtllm,
  noBufferSpeculative,
  noBufferChecked
]
