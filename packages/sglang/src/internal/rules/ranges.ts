/**
 * The SGLang releases each launch rule holds for, and how that was verified: every rule was
 * checked against the `server_args.py` (with `arg_groups/` from main-2026-05-19, and the model
 * files for the model-init checks) of each of the 29 shipped releases. The check compared, by AST,
 * SGLang's statement for the rule (its raise, assert, warning or assignment) and the condition
 * around it with 0.5.11's (where the rules were first read in full); a range is the run of releases
 * where they are the same (variable renames such as `self` → `server_args`, and code moved into
 * per-algorithm handlers with the same guard, count as the same). The note says what differs outside.
 *
 * @internal
 */
import * as VersionRange from "../../VersionRange.js"

const ranges: Readonly<Record<string, VersionRange.VersionRange>> = {
  R26: VersionRange.make(
    "0.5.11",
    null,
    "the chunk-cache warning under disaggregation_mode == decode and not --disaggregation-decode-enable-radix-cache is the same from 0.5.11 on; before 0.5.11 the radix-cache flag did not exist (the check had no such exception)"
  ),
  "R26.extra-buffer": VersionRange.make(
    "0.5.11",
    "0.5.13",
    "message and condition the same 0.5.11–0.5.13; absent before 0.5.11 and from 0.5.14 (mamba_radix_cache_strategy)"
  ),
  "S7.unquant": VersionRange.make(
    "0.5.11",
    null,
    '`quantization == "unquant"` → None in __post_init__ from 0.5.11 on; no unquant choice before'
  ),
  "S8.defaults": VersionRange.make(
    "0.4.0",
    null,
    "tokenizer_path / served_model_name default to model_path in every release; device defaults only when None (0.4.5 on)"
  ),
  R19: VersionRange.make(
    "0.5.7",
    "0.5.13",
    "`auto` → no_buffer in _handle_missing_default_values 0.5.7–0.5.13; no strategy flag before 0.5.7; from 0.5.14 the field is mamba_radix_cache_strategy with other auto resolution"
  ),
  "R35.quantization": VersionRange.make(
    "0.4.9",
    null,
    "ModelConfig._verify_quantization runs while the server arguments are handled: 0.4.9–0.5.4 only when --mem-fraction-static is unset (its default is computed from the model config), from 0.5.5 always (executed: the differential record); the compatible CLI methods grow in 0.5.14 (modelled)"
  ),
  "R35.context-length": VersionRange.make(
    "0.5.1",
    null,
    "the derived-context-length message and its env override (configs/model_config.py) the same from 0.5.1 on; 0.4.x words it differently"
  ),
  R34: VersionRange.make(
    "0.5.11",
    "main-2026-05-19",
    "_handle_piecewise_cuda_graph identical (AST) in 0.5.11 and main-2026-05-19; changed before and after"
  ),
  R32: VersionRange.make(
    "0.5.10",
    "main-2026-05-19",
    "_handle_gpu_memory_settings identical (AST) 0.5.10–main-2026-05-19; other tables before and after"
  ),
  R33: VersionRange.make(
    "0.5.10",
    "main-2026-05-19",
    "_handle_gpu_memory_settings identical (AST) 0.5.10–main-2026-05-19; another formula before and after"
  ),
  "R20.radix": VersionRange.make(
    "0.5.11",
    "0.5.13",
    "the 'Disabling Radix Cache for {arch}' warning for archs without mamba cache support, same 0.5.9–0.5.13, with 0.5.11's architecture table from 0.5.11; per-architecture branches before 0.5.9; gone in 0.5.14"
  ),
  "R20.sm100-attention": VersionRange.make(
    "0.5.10",
    "0.5.11",
    "the SM100 default backend of hybrid models (sm100_default_attention_backend) the same in 0.5.10–0.5.11; changed in main-2026-05-19"
  ),
  "R20.triton": VersionRange.make(
    "0.5.9",
    "0.5.11",
    "the NemotronH / Lfm2 triton asserts the same 0.5.9–0.5.11; reorganised from main-2026-05-19 (hooks)"
  ),
  R21: VersionRange.make(
    "0.5.9",
    "0.5.13",
    "assert on support_mamba_cache_extra_buffer the same 0.5.9–0.5.13; per-architecture asserts in 0.5.7–0.5.8; gone in 0.5.14"
  ),
  R22: VersionRange.make(
    "0.5.10",
    "0.5.13",
    "ValueError the same 0.5.10–0.5.13 (0.5.13 adds a period after --disable-radix-cache, modelled); absent before 0.5.10 and from 0.5.14"
  ),
  "R23.platform": VersionRange.make("0.5.11", "0.5.11", "the CUDA/MUSA assert exists in 0.5.11 only"),
  "R23.draft-tokens": VersionRange.make(
    "0.5.7",
    "0.5.13",
    "track interval >= draft tokens assert the same 0.5.7–0.5.13; no mamba_track_interval before 0.5.7; gone in 0.5.14"
  ),
  "R23.page-size": VersionRange.make(
    "0.5.7",
    "0.5.13",
    "track interval % page size assert the same 0.5.7–0.5.13; gone in 0.5.14"
  ),
  "R23.fla-chunk": VersionRange.make(
    "0.5.8",
    "main-2026-05-19",
    "the FLA_CHUNK_SIZE assert the same 0.5.8–main-2026-05-19; absent in 0.5.7 and from 0.5.13"
  ),
  "R24.page-size": VersionRange.make(
    "0.5.11",
    "0.5.13",
    "warning and condition the same 0.5.11–0.5.13; absent before 0.5.11 and from 0.5.14"
  ),
  "R24.overlap": VersionRange.make(
    "0.5.9",
    "0.5.13",
    "warning under no speculative algorithm the same 0.5.9–0.5.13; per-architecture in 0.5.7–0.5.8; gone in 0.5.14"
  ),
  "R24.trtllm-mha": VersionRange.make(
    "0.5.9",
    "main-2026-05-19",
    "warning and condition the same 0.5.9–main-2026-05-19; SM100-only in 0.5.6.post2–0.5.8; 0.5.13 words it with the backend's name"
  ),
  "R24.no-buffer": VersionRange.make(
    "0.5.14",
    null,
    "_validate_mamba_no_buffer's three asserts for an explicit no_buffer with radix cache from 0.5.14 on (executed: the differential record)"
  ),
  R24: VersionRange.make(
    "0.5.10",
    "0.5.13",
    "the ValueError the same 0.5.10–0.5.13; the ROCm branch (radix cache off instead) is new in 0.5.11, modelled; absent before 0.5.10; gone in 0.5.14 (validate_mamba_no_buffer)"
  ),
  R29: VersionRange.make(
    "0.5.11",
    "main-2026-05-19",
    "_get_default_attn_backend identical (AST) in 0.5.11 and main-2026-05-19; other choices before and after"
  ),
  "R30.flashmla": VersionRange.make(
    "0.4.6",
    null,
    "warning under attention backend flashmla from 0.4.6 on, or decode backend flashmla from 0.4.10 (no decode backend before); a resolved view from 0.5.15"
  ),
  "R30.cutlass-mla": VersionRange.make(
    "0.4.10",
    null,
    "warning under attention or decode backend cutlass_mla the same from 0.4.10 on"
  ),
  "R30.trtllm-mla": VersionRange.make(
    "0.5.9",
    "0.5.14",
    "all three checks (Blackwell, kv dtype, page size) the same 0.5.9–0.5.14; the Blackwell check is new in 0.5.9; page size read from a local in 0.5.15"
  ),
  "R30.trtllm-mha": VersionRange.make(
    "0.5.0rc2",
    null,
    "0.5.0rc2–0.5.9 one SM100-only ValueError for any trtllm_mha use (modelled); prefill, decode and page-size checks the same from 0.5.10 on; from 0.5.15 on the resolved backends, and the page-size adjustment moved to arg_groups/overrides.py with the same condition and words (executed: the differential record)"
  ),
  "R30.fa3-fp8": VersionRange.make("0.5.5", null, "warning and condition the same from 0.5.5 on"),
  "R27.default": VersionRange.make(
    "0.5.11",
    "main-2026-05-19",
    "condition includes `speculative_algorithm is None` in 0.5.11–main-2026-05-19; dropped in 0.5.13"
  ),
  R27: VersionRange.make(
    "0.5.10",
    null,
    "ValueError the same from 0.5.10 on (is_cuda() instead of torch.cuda.is_available() from 0.5.14)"
  ),
  R31: VersionRange.make(
    "0.5.11",
    "main-2026-05-19",
    "_handle_page_size identical (AST) in 0.5.11 and main-2026-05-19"
  ),
  "S7.hicache": VersionRange.make("0.5.1", null, "ValueError the same from 0.5.1 on"),
  "R37.dp-size-1": VersionRange.make(
    "0.5.2",
    "0.5.14",
    "dp_size == 1 turns dp attention off, same 0.5.2–0.5.14"
  ),
  "R37.tp-dp": VersionRange.make(
    "0.4.2",
    null,
    "bare `assert self.tp_size % self.dp_size == 0` under dp attention from 0.4.2 on"
  ),
  "R37.chunked-prefill": VersionRange.make(
    "0.4.5",
    "0.5.15",
    "the divided chunked prefill and its warning the same 0.4.5–0.5.15; gone in main-2026-07-20"
  ),
  "R37.lm-head": VersionRange.make(
    "0.4.10",
    null,
    "assert the same from 0.4.10 (when --enable-dp-lm-head appeared) on"
  ),
  R38: VersionRange.make("0.5.9", null, "both asserts the same from 0.5.9 (attn_cp_size) on"),
  "R39.a2a": VersionRange.make(
    "0.5.0rc2",
    null,
    "the all-to-all backends set ep = tp from 0.5.0rc2 on, each in its own branch (DeepEP worded as such before 0.5.10; megamoe added in main-2026-05-19, modelled; on the resolved backend from 0.5.15); executed: the differential record"
  ),
  "R39.flashinfer-ep": VersionRange.make(
    "0.5.11",
    null,
    "assert for flashinfer_cutlass and flashinfer_cutedsl from 0.5.11 on (cutlass only before)"
  ),
  "R39.eplb": VersionRange.make(
    "0.4.10",
    null,
    "bare assert under --enable-eplb from 0.4.10 on: the EP MoE switches in 0.4.10, ep size > 1 or an all-to-all backend in 0.5.0rc2, ep size > 1 from 0.5.1 (the resolved ep size from 0.5.15); executed: the differential record"
  ),
  R40: VersionRange.make("0.4.7", null, "warning under pp_size > 1 the same from 0.4.7 on"),
  R2: VersionRange.make("0.5.6", null, "draft revision defaults to main from 0.5.6 on"),
  R3: VersionRange.make("0.5.10", "0.5.11", "assert the same 0.5.10–0.5.11; gone from main-2026-05-19"),
  "R3.default": VersionRange.make(
    "0.5.10",
    "0.5.11",
    "the draft MoE runner copies the target's 0.5.10–0.5.11; unconditional copy from main-2026-05-19"
  ),
  "R1.upper": VersionRange.make(
    "main-2026-05-19",
    null,
    "argparse lists no choices and the speculative hook upper-cases the name from main-2026-05-19 on (executed: the differential record)"
  ),
  "R1.unknown": VersionRange.make(
    "main-2026-05-19",
    null,
    "SpeculativeAlgorithm.from_string's ValueError for an unknown name from main-2026-05-19 on (DSPARK known from main-2026-07-20)"
  ),
  R1: VersionRange.make(
    "0.4.4",
    "0.5.11",
    "NEXTN → EAGLE in _handle_speculative_decoding 0.4.4–0.5.11; from main-2026-05-19 an alias resolver may pick FROZEN_KV_MTP"
  ),
  R4: VersionRange.make("0.5.11", null, "assert the same from 0.5.11 on"),
  "R5.dp-attention": VersionRange.make(
    "0.5.11",
    null,
    "ValueError in the DFLASH branch from 0.5.11 on (a per-algorithm handler from main-2026-05-19, the algorithm registry from 0.5.14)"
  ),
  "R5.pp": VersionRange.make("0.5.11", null, "ValueError in the DFLASH branch from 0.5.11 on"),
  "R5.draft-path": VersionRange.make("0.5.11", null, "ValueError in the DFLASH branch from 0.5.11 on"),
  "R6.steps": VersionRange.make("0.5.11", null, "override warning in the DFLASH branch from 0.5.11 on"),
  "R6.topk": VersionRange.make("0.5.11", null, "override warning in the DFLASH branch from 0.5.11 on"),
  "R7.block-size": VersionRange.make("0.5.11", null, "ValueError in the DFLASH branch from 0.5.11 on"),
  "R7.block-vs-draft": VersionRange.make("0.5.11", null, "ValueError in the DFLASH branch from 0.5.11 on"),
  "R7.draft-tokens": VersionRange.make(
    "0.5.11",
    null,
    "the block-size fallback to 16 draft tokens in the DFLASH branch from 0.5.11 on"
  ),
  "R7.window": VersionRange.make(
    "0.5.11",
    "0.5.11",
    "only 0.5.11 has the DFLASH draft-window checks (a generic --speculative-draft-window-size check later)"
  ),
  "R7.window-vs-block": VersionRange.make(
    "0.5.11",
    "0.5.11",
    "only 0.5.11 has the DFLASH draft-window checks"
  ),
  "R15.dflash": VersionRange.make("0.5.11", null, "the 48 reset in the DFLASH branch from 0.5.11 on"),
  "R8.overlap": VersionRange.make(
    "0.5.11",
    "0.5.13",
    "DFLASH disables overlap 0.5.11–0.5.13; spec v2 for DFLASH from 0.5.14"
  ),
  "R8.mixed-chunk": VersionRange.make("0.5.11", null, "warning in the DFLASH branch from 0.5.11 on"),
  R9: VersionRange.make("0.5.3", null, "ValueError from 0.5.3 on (an assert in 0.5.2)"),
  R15: VersionRange.make(
    "0.5.5",
    null,
    "the 48 reset in the EAGLE-family branch, same message from 0.5.5 on (0.5.4 words it shorter)"
  ),
  R10: VersionRange.make(
    "0.5.11",
    "main-2026-05-19",
    "spec v1/v2 choice by topk and SGLANG_ENABLE_SPEC_V2 in 0.5.11–main-2026-05-19; the variable is gone from 0.5.14"
  ),
  "R10.mixed-chunk": VersionRange.make(
    "0.4.7",
    null,
    "warning in the EAGLE-family branch from 0.4.7 on (STANDALONE is no choice before 0.5.2)"
  ),
  R11: VersionRange.make(
    "0.5.11",
    null,
    "the MTP draft-path default with 0.5.11's architecture list (HYV3 new in 0.5.11), same from 0.5.11 on"
  ),
  R12: VersionRange.make(
    "0.4.5",
    null,
    "the bare assert in the EAGLE-family branch from 0.4.5 on (STANDALONE is no choice before 0.5.2; its source line names server_args from main-2026-05-19, and it is skipped for --speculative-adaptive from 0.5.14: both modelled)"
  ),
  "R12.auto": VersionRange.make(
    "0.5.11",
    "0.5.13",
    "auto_choose_speculative_params identical (AST) 0.5.11–0.5.13"
  ),
  "R12.topk-missing-paged": VersionRange.make(
    "0.4.5",
    "0.4.8",
    "`if self.page_size > 1 and self.speculative_eagle_topk > 1` in the EAGLE branch 0.4.5–0.4.8: TypeError for None on pages over one token (executed: the differential record)"
  ),
  "R12.auto-broken": VersionRange.make(
    "0.4.5",
    "0.4.5",
    "auto_choose_speculative_params reads self.decrypted_config_file, which 0.4.5's ServerArgs lacks: AttributeError (executed: the differential record)"
  ),
  "R12.topk-missing": VersionRange.make(
    "0.5.2",
    null,
    "`speculative_eagle_topk > 1` is first evaluated unguarded in the paged-attention check from 0.5.2 on (TypeError for None; executed: the differential record shows it through main-2026-07-20, where the check's backend list changed around it)"
  ),
  "R14.trtllm-mha": VersionRange.make("0.5.1", null, "ValueError under a trtllm_mha backend from 0.5.1 on"),
  R13: VersionRange.make("0.4.6", null, "adjustment and warning in the EAGLE-family branch from 0.4.6 on"),
  "R14.page-size": VersionRange.make(
    "0.5.6",
    "main-2026-05-19",
    "ValueError with flashinfer and fa3 allowed 0.5.6–main-2026-05-19 (flashinfer only before 0.5.6)"
  ),
  R17: VersionRange.make("0.5.11", null, "adaptive fallback warning from 0.5.11 on"),
  "R16.device": VersionRange.make(
    "0.5.3",
    "0.5.15",
    "ValueError in the NGRAM branch 0.5.3–0.5.15; CPU allowed in main-2026-07-20"
  ),
  "R15.ngram": VersionRange.make("0.5.5", null, "the 48 reset in the NGRAM branch from 0.5.5 on"),
  "R16.topk": VersionRange.make("0.5.3", "0.5.11", "topk := max BFS breadth 0.5.3–0.5.11"),
  "R16.draft-tokens": VersionRange.make("0.5.11", null, "default 12 with SGLang's warning from 0.5.11 on"),
  "R16.corpus": VersionRange.make("0.5.11", null, "the three external-corpus checks from 0.5.11 on"),
  "R16.overlap": VersionRange.make("0.5.3", "0.5.13", "overlap and mixed chunk off for NGRAM 0.5.3–0.5.13"),
  "R16.page-size": VersionRange.make("0.5.3", null, "ValueError in the NGRAM branch from 0.5.3 on"),
  "R16.dp-attention": VersionRange.make("0.5.3", null, "ValueError in the NGRAM branch from 0.5.3 on"),
  "R18.flex-attention": VersionRange.make("0.5.3", null, "assert the same from 0.5.3 on"),
  "R18.pd-decode-radix": VersionRange.make(
    "0.5.11",
    null,
    "ValueError from 0.5.11 (when the flag appeared) on"
  ),
  R36: VersionRange.make(
    "0.4.7",
    "0.5.15",
    "assert on tp × pp 0.4.7–0.5.15 (tp only before; main-2026-07-20 skips it for elastic EP scale-out joins)"
  ),
  "R36.multi-node-dp": VersionRange.make("0.4.2", null, "assert the same from 0.4.2 on"),
  "R36.gpu-ids": VersionRange.make("0.4.4", null, "both asserts from 0.4.4 (--gpu-id-step) on"),
  "R31.chunked-prefill": VersionRange.make(
    "0.5.3",
    null,
    "assert with the PD-decode exception from 0.5.3 on"
  ),
  "R18.mixed-chunk": VersionRange.make("0.4.10", null, "assert the same from 0.4.10 on"),
  "R18.pp": VersionRange.make("0.5.11", null, "assert naming speculative decoding from 0.5.11 on"),
  "R18.pp-mixed": VersionRange.make(
    "0.4.7",
    "0.5.10",
    "the assert also names mixed chunked prefill 0.4.7–0.5.10 (executed: the differential record)"
  ),
  "R37.dp-size-assert": VersionRange.make(
    "0.4.5",
    "0.5.1",
    "`assert self.dp_size > 1` under dp attention 0.4.5–0.5.1; from 0.5.2 dp size 1 turns it off (R37.dp-size-1)"
  ),
  "S8.served-model-name": VersionRange.make("0.5.11", null, "assert the same from 0.5.11 on"),
  "R18.lora": VersionRange.make("0.5.6", null, "ValueError the same from 0.5.6 on"),
  "R35.priority": VersionRange.make("0.5.3", null, "assert the same from 0.5.3 on"),
  "R35.swa-ratio": VersionRange.make("0.5.7", "0.5.14", "ValueError the same 0.5.7–0.5.14"),
  "R35.tokenizer-workers": VersionRange.make("0.5.2", null, "assert the same from 0.5.2 on"),
  "R37.heads": VersionRange.make(
    "0.5.6",
    null,
    "the divide() assert (distributed/utils.py) words it so from 0.5.6 on"
  ),
  "R37.gdn-heads": VersionRange.make(
    "0.5.6",
    null,
    "the divide() assert (distributed/utils.py) from 0.5.6 on"
  ),
  R28: VersionRange.make("0.5.10", "0.5.15", "assert in layers/attention 0.5.10–0.5.15")
}

/** The verified range of a rule by its id; a rule without one is a bug in this table. */
export const rangeOf = (id: string): VersionRange.VersionRange => {
  const range = ranges[id]
  if (range === undefined) throw new Error(`no verified version range for rule ${id}`)
  return range
}

/** Every rule id with a range (the range test checks this list against `Rules.all`). */
export const rangedIds: ReadonlyArray<string> = Object.keys(ranges)
