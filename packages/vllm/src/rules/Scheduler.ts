/**
 * Checks of vllm/config/scheduler.py: the token budget per step against the sequence count and
 * length, and partial prefills.
 *
 * @since 0.1.0
 */
import { chunkedPrefill, maxModelLen, maxNumBatchedTokens, maxNumSeqs } from "../internal/rules/effective.js"
import { error, num, type Rule } from "../Rule.js"

/** @category rules */
export const batchedTokensCoverSeqs: Rule = {
  id: "scheduler.batched-tokens-at-least-num-seqs",
  raisedIn: "vllm/config/scheduler.py (_verify_args)",
  text: "max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs ({}).",
  releases: { from: "0.11", until: null },
  needs: ["max_num_batched_tokens", "max_num_seqs"],
  check: (input) => {
    const tokens = maxNumBatchedTokens(input)
    const seqs = maxNumSeqs(input)
    if (tokens >= seqs) return undefined
    const fixTokens = input.given.has("max_num_batched_tokens") || !input.given.has("max_num_seqs")
    return error(
      `max_num_batched_tokens (${tokens}) must be greater than or equal to max_num_seqs (${seqs}).`,
      `each of the ${seqs} sequences of a step needs at least one token of the ${tokens}-token budget`,
      [fixTokens ? "max_num_batched_tokens" : "max_num_seqs"],
      fixTokens ? { max_num_batched_tokens: seqs } : { max_num_seqs: tokens }
    )
  }
}

/** @category rules */
export const batchedTokensCoverModelLen: Rule = {
  id: "scheduler.batched-tokens-without-chunked-prefill",
  raisedIn: "vllm/config/scheduler.py (_verify_args)",
  text: "max_num_batched_tokens ({}) is smaller than max_model_len ({}). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.",
  releases: { from: "0.11", until: null },
  needs: ["max_num_batched_tokens", "enable_chunked_prefill"],
  check: (input) => {
    const len = maxModelLen(input)
    const tokens = maxNumBatchedTokens(input)
    if (chunkedPrefill(input) || len === undefined || tokens >= len) return undefined
    return error(
      `max_num_batched_tokens (${tokens}) is smaller than max_model_len (${len}). This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len.`,
      `without chunked prefill a whole prompt of up to ${len} tokens must fit one step's budget of ${tokens}`,
      ["max_num_batched_tokens"],
      { max_num_batched_tokens: len }
    )
  }
}

/** @category rules */
export const partialPrefillsNeedChunking: Rule = {
  id: "scheduler.partial-prefills-need-chunked-prefill",
  raisedIn: "vllm/config/scheduler.py (_verify_args)",
  text: "Chunked prefill must be enabled to set max_num_partial_prefills > 1.",
  releases: { from: "0.11", until: null },
  needs: ["max_num_partial_prefills", "enable_chunked_prefill"],
  check: (input) => {
    const partial = num(input, "max_num_partial_prefills") ?? 1
    if (partial <= 1 || chunkedPrefill(input)) return undefined
    return error(
      "Chunked prefill must be enabled to set max_num_partial_prefills > 1.",
      `max_num_partial_prefills ${partial} splits prompts into chunks, which --no-enable-chunked-prefill turns off`,
      ["enable_chunked_prefill"],
      { enable_chunked_prefill: true }
    )
  }
}

/** @category rules */
export const longPartialsWithinPartials: Rule = {
  id: "scheduler.long-partial-prefills-within-partial-prefills",
  raisedIn: "vllm/config/scheduler.py (_verify_args)",
  text: "max_long_partial_prefills ({}) must be greater than or equal to 1 and not greater than max_num_partial_prefills ({}).",
  releases: { from: "0.11", until: null },
  needs: ["max_long_partial_prefills", "max_num_partial_prefills"],
  check: (input) => {
    const long = num(input, "max_long_partial_prefills") ?? 1
    const partial = num(input, "max_num_partial_prefills") ?? 1
    if (long >= 1 && long <= partial) return undefined
    return error(
      `max_long_partial_prefills (${long}) must be greater than or equal to 1 and not greater than max_num_partial_prefills (${partial}).`,
      `long partial prefills are a subset of the ${partial} partial prefills`,
      ["max_long_partial_prefills"],
      { max_long_partial_prefills: Math.max(1, Math.min(long, partial)) }
    )
  }
}

/** @category rules */
export const longPrefillWithinModelLen: Rule = {
  id: "scheduler.long-prefill-threshold-within-max-model-len",
  raisedIn: "vllm/config/scheduler.py (_verify_args)",
  text: "long_prefill_token_threshold ({}) cannot be greater than the max_model_len ({}).",
  releases: { from: "0.11", until: null },
  needs: ["long_prefill_token_threshold"],
  check: (input) => {
    const threshold = num(input, "long_prefill_token_threshold") ?? 0
    const len = maxModelLen(input)
    if (len === undefined || threshold <= len) return undefined
    return error(
      `long_prefill_token_threshold (${threshold}) cannot be greater than the max_model_len (${len}).`,
      `a prompt cannot be longer than max_model_len (${len}), so a threshold of ${threshold} never applies`,
      ["long_prefill_token_threshold"],
      { long_prefill_token_threshold: len }
    )
  }
}
