/**
 * Every rule's version range, tested at both ends: at its first and last release the rule is in
 * that release's rule set and fires for an input written in that release's own flags (every
 * field exists there, every value is one its catalogue accepts); at the release before the first
 * and after the last it is not in the rule set. In every release of the range the rule reads only
 * fields that release has.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as ModelTraits from "@mlops/serve/ModelTraits"
import { Schema } from "effect"
import * as Catalogue from "../../src/Catalogue.js"
import { rangedIds } from "../../src/internal/rules/ranges.js"
import type * as Rule from "../../src/Rule.js"
import * as Rules from "../../src/Rules.js"
import * as ServerArgs from "../../src/ServerArgs.js"
import { a6000x2, b200x8, deepseek, h100x8, llama, qwen36 } from "./input.js"

interface Trigger {
  readonly given: Readonly<Record<string, unknown>>
  readonly traits?: ModelTraits.ModelTraits
  readonly gpus?: Rule.Gpus
  readonly platform?: Rule.Platform
}

const arch = (architecture: string): ModelTraits.ModelTraits => ({ ...llama, architecture })
const eagle = { speculative_algorithm: "EAGLE" }
const dflash = { speculative_algorithm: "DFLASH" }
const ngram = { speculative_algorithm: "NGRAM" }
const extraBuffer = { mamba_scheduler_strategy: "extra_buffer" }
const noBuffer = { mamba_scheduler_strategy: "no_buffer" }
const wideTriple = {
  ...eagle,
  speculative_num_steps: 3,
  speculative_eagle_topk: 4,
  speculative_num_draft_tokens: 8
}

/** For each rule: an input that makes it fire (in 0.5.11's words, valid in every release of its range). */
const triggers: Readonly<Record<string, Trigger>> = {
  R26: { given: { disaggregation_mode: "decode" } },
  "R26.extra-buffer": { given: { disaggregation_mode: "decode", ...extraBuffer } },
  "S7.unquant": { given: { quantization: "unquant" } },
  "S8.defaults": { given: {} },
  R19: { given: {} },
  "R35.context-length": { given: { context_length: 10_000_000 }, traits: qwen36 },
  "R35.quantization": { given: { quantization: "awq" }, traits: { ...llama, quantization: "fp8" } },
  R34: { given: {}, traits: qwen36 },
  R32: { given: {} },
  R33: { given: {} },
  "R20.radix": { given: {}, traits: arch("KimiLinearForCausalLM") },
  "R20.sm100-attention": { given: {}, traits: qwen36, gpus: b200x8 },
  "R20.triton": { given: { attention_backend: "triton" }, traits: arch("NemotronHForCausalLM") },
  R21: { given: extraBuffer, traits: arch("NemotronHForCausalLM") },
  R22: { given: { ...extraBuffer, disable_radix_cache: true }, traits: qwen36 },
  "R23.platform": { given: extraBuffer, traits: qwen36, platform: "rocm" },
  "R23.draft-tokens": { given: { ...extraBuffer, speculative_num_draft_tokens: 512 }, traits: qwen36 },
  "R23.page-size": { given: { ...extraBuffer, page_size: 48 }, traits: qwen36 },
  "R23.fla-chunk": { given: { ...extraBuffer, page_size: 96 }, traits: qwen36 },
  "R24.page-size": { given: { ...noBuffer, page_size: 16 }, traits: qwen36 },
  "R24.overlap": { given: noBuffer, traits: qwen36 },
  "R24.trtllm-mha": { given: { ...noBuffer, attention_backend: "trtllm_mha" }, traits: qwen36 },
  R24: { given: { ...noBuffer, ...eagle }, traits: qwen36 },
  "R24.no-buffer": { given: { mamba_radix_cache_strategy: "no_buffer" }, traits: qwen36 },
  R29: { given: {}, gpus: h100x8 },
  "R30.flashmla": { given: { attention_backend: "flashmla" } },
  "R30.cutlass-mla": { given: { attention_backend: "cutlass_mla" } },
  "R30.trtllm-mla": { given: { attention_backend: "trtllm_mla" } },
  "R30.trtllm-mha": { given: { attention_backend: "trtllm_mha" } },
  "R30.fa3-fp8": { given: { attention_backend: "fa3", kv_cache_dtype: "fp8_e5m2" } },
  "R27.default": { given: { mamba_ssm_dtype: "bfloat16" }, gpus: b200x8 },
  R27: { given: { linear_attn_decode_backend: "flashinfer", mamba_ssm_dtype: "float32" }, gpus: b200x8 },
  R31: { given: {} },
  "S7.hicache": { given: { enable_hierarchical_cache: true, disable_radix_cache: true } },
  "R37.dp-size-1": { given: { enable_dp_attention: true } },
  "R37.tp-dp": { given: { enable_dp_attention: true, tp_size: 4, dp_size: 3 } },
  "R37.chunked-prefill": {
    given: { enable_dp_attention: true, tp_size: 2, dp_size: 2, chunked_prefill_size: 8192 }
  },
  "R37.lm-head": { given: { enable_dp_lm_head: true } },
  R38: { given: { attn_cp_size: 3, tp_size: 4 } },
  "R39.a2a": { given: { moe_a2a_backend: "deepep", tp_size: 4 } },
  "R39.flashinfer-ep": { given: { moe_runner_backend: "flashinfer_cutlass", tp_size: 4, ep_size: 2 } },
  "R39.eplb": { given: { enable_eplb: true } },
  "R37.dp-size-assert": { given: { enable_dp_attention: true } },
  "R18.pp-mixed": { given: { pp_size: 2, enable_mixed_chunk: true } },
  R40: { given: { pp_size: 2 } },
  R2: { given: { speculative_draft_model_path: "/draft" } },
  R3: { given: { ...eagle, speculative_moe_runner_backend: "flashinfer_trtllm" } },
  "R3.default": { given: eagle },
  "R1.upper": { given: { speculative_algorithm: "nextn" } },
  "R1.unknown": { given: { speculative_algorithm: "MTP" } },
  R1: { given: { speculative_algorithm: "NEXTN" } },
  R4: { given: { ...ngram, speculative_skip_dp_mlp_sync: true } },
  "R5.dp-attention": { given: { ...dflash, enable_dp_attention: true } },
  "R5.pp": { given: { ...dflash, pp_size: 2 } },
  "R5.draft-path": { given: dflash },
  "R6.steps": { given: { ...dflash, speculative_num_steps: 3 } },
  "R6.topk": { given: { ...dflash, speculative_eagle_topk: 4 } },
  "R7.block-size": { given: { ...dflash, speculative_dflash_block_size: 0 } },
  "R7.block-vs-draft": {
    given: { ...dflash, speculative_dflash_block_size: 8, speculative_num_draft_tokens: 4 }
  },
  "R7.draft-tokens": { given: dflash },
  "R7.window": { given: { ...dflash, speculative_dflash_draft_window_size: 0 } },
  "R7.window-vs-block": {
    given: { ...dflash, speculative_dflash_draft_window_size: 2, speculative_num_draft_tokens: 4 }
  },
  "R15.dflash": { given: dflash },
  "R8.overlap": { given: dflash },
  "R8.mixed-chunk": { given: { ...dflash, enable_mixed_chunk: true } },
  R9: { given: { speculative_algorithm: "STANDALONE", enable_dp_attention: true } },
  R15: { given: eagle },
  R10: { given: eagle },
  "R10.mixed-chunk": { given: { ...eagle, enable_mixed_chunk: true } },
  R11: { given: eagle, traits: deepseek },
  R12: { given: { ...eagle, speculative_num_draft_tokens: 1 } },
  "R12.auto": { given: eagle },
  "R12.auto-broken": { given: eagle },
  "R12.topk-missing-paged": { given: { ...eagle, speculative_num_steps: 3, page_size: 16 } },
  "R12.topk-missing": { given: { ...eagle, speculative_num_steps: 3 } },
  "R14.trtllm-mha": { given: { ...wideTriple, attention_backend: "trtllm_mha" } },
  R13: {
    given: { ...eagle, speculative_num_steps: 1, speculative_eagle_topk: 1, speculative_num_draft_tokens: 1 }
  },
  "R14.page-size": { given: { ...wideTriple, page_size: 16, attention_backend: "triton" } },
  R17: { given: { ...ngram, speculative_adaptive: true } },
  "R16.device": { given: { ...ngram, device: "cpu" } },
  "R15.ngram": { given: ngram },
  "R16.topk": { given: ngram },
  "R16.draft-tokens": { given: ngram },
  "R16.corpus": {
    given: {
      ...ngram,
      speculative_ngram_external_corpus_path: "/corpus",
      speculative_ngram_external_sam_budget: 0
    }
  },
  "R16.overlap": { given: ngram },
  "R16.page-size": {
    given: { ...ngram, speculative_eagle_topk: 10, page_size: 16, attention_backend: "triton" }
  },
  "R16.dp-attention": { given: { ...ngram, enable_dp_attention: true } },
  "R18.flex-attention": { given: { ...eagle, attention_backend: "flex_attention" } },
  "R18.pd-decode-radix": {
    given: { ...eagle, disaggregation_mode: "decode", disaggregation_decode_enable_radix_cache: true }
  },
  R36: { given: { tp_size: 3, nnodes: 2 } },
  "R36.multi-node-dp": { given: { dp_size: 2, nnodes: 2, tp_size: 2 } },
  "R36.gpu-ids": { given: { base_gpu_id: -1 } },
  "R31.chunked-prefill": { given: { chunked_prefill_size: 100, page_size: 64 } },
  "R18.mixed-chunk": { given: { ...eagle, enable_mixed_chunk: true } },
  "R18.pp": { given: { pp_size: 2 } },
  "S8.served-model-name": { given: { served_model_name: "org:model" } },
  "R18.lora": { given: { ...eagle, lora_paths: ["adapter"] } },
  "R35.priority": { given: { enable_priority_scheduling: true, schedule_policy: "lpm" } },
  "R35.swa-ratio": { given: { swa_full_tokens_ratio: 0 } },
  "R35.tokenizer-workers": { given: { tokenizer_worker_num: 0 } },
  "R37.heads": { given: { tp_size: 3 }, traits: llama },
  "R37.gdn-heads": { given: { tp_size: 5 }, traits: qwen36 },
  R28: { given: { attention_backend: "fa3" }, traits: qwen36, gpus: b200x8 }
}

const releases = Catalogue.releases.map((r) => r.version)
const latest = releases.at(-1)!

/** The rule's input in `version`'s own flags; fails when a given field or value does not exist there. */
const inputIn = (version: string, trigger: Trigger, reads: Set<string>): Rule.RuleInput => {
  const catalogue = Catalogue.get(version)!
  for (const [field, value] of Object.entries(trigger.given)) {
    const spec = catalogue.byField.get(field)
    assert.isDefined(spec, `${version} has no ${field}`)
    assert.isTrue(
      Schema.is(ServerArgs.fieldSchema(spec!))(value),
      `${version} ${spec!.flag} takes no ${String(value)}`
    )
  }
  const values = { ...ServerArgs.defaults(catalogue), model_path: "/root/models/m", ...trigger.given }
  const args = new Proxy(values, {
    get: (target, key) => {
      if (typeof key === "string") reads.add(key)
      return Reflect.get(target, key)
    }
  }) as unknown as ServerArgs.ServerArgs
  return {
    args,
    explicit: new Set(Object.keys(trigger.given)),
    traits: trigger.traits,
    gpus: trigger.gpus ?? a6000x2,
    env: {},
    version,
    ...(trigger.platform === undefined ? {} : { platform: trigger.platform })
  }
}

const inRuleSet = (rule: Rule.Rule, version: string) => Rules.forVersion(version).rules.includes(rule)

describe("rule version ranges", () => {
  it("every rule has a range and a trigger, and every release is verified", () => {
    assert.sameMembers(
      Rules.all.map((r) => r.id),
      [...rangedIds]
    )
    assert.sameMembers(Object.keys(triggers), [...rangedIds])
    assert.deepStrictEqual(Rules.verifiedVersions, releases)
    for (const rule of Rules.all) assert.isAbove(rule.versions.verified.length, 20, rule.id)
  })

  for (const rule of Rules.all) {
    const { from, through } = rule.versions
    const last = through ?? latest
    const inRange = releases.slice(releases.indexOf(from), releases.indexOf(last) + 1)
    it(`${rule.id}: fires at ${from} and ${last}, not outside, reads only fields each release of ${from}–${last} has`, () => {
      const trigger = triggers[rule.id]!
      for (const version of [from, last]) {
        assert.isTrue(inRuleSet(rule, version), `${rule.id} in the rules of ${version}`)
        assert.isDefined(rule.check(inputIn(version, trigger, new Set())), `${rule.id} fires at ${version}`)
      }
      const before = releases[releases.indexOf(from) - 1]
      if (before !== undefined) assert.isFalse(inRuleSet(rule, before), `${rule.id} not in ${before}`)
      const after = through === null ? undefined : releases[releases.indexOf(through) + 1]
      if (after !== undefined) assert.isFalse(inRuleSet(rule, after), `${rule.id} not in ${after}`)
      for (const version of inRange) {
        const fields = Catalogue.get(version)!.byField
        for (const trig of [trigger, { given: {} }]) {
          const reads = new Set<string>()
          rule.check(inputIn(version, trig, reads))
          for (const field of reads)
            assert.isTrue(fields.has(field), `${rule.id} reads ${field}, which ${version} lacks`)
        }
      }
    })
  }
})
