/**
 * The engine refusing its arguments: argparse (the command line itself), the hybrid models'
 * radix-cache / buffer-strategy refusal, combinations this build does not support, values
 * SGLang's ServerArgs or vLLM's config/pydantic checks reject, and assertions. The exception
 * cases share `argumentFailureTag` with the offline rules, so both speak one vocabulary.
 * @internal
 */

import { saysUnsupported } from "../../../ArgumentFailure.js"
import * as F from "../../../Failures.js"
import {
  base,
  engineName,
  firstLine,
  flagsIn,
  inException,
  namedEngine,
  reasonOf,
  type Signature,
  type Subject,
  says,
  Tier
} from "../../../LogSignature.js"

/** The flag that sets a field (`tp_size` → `--tp-size`). */
const flagOf = (field: string): string => `--${field.replaceAll("_", "-")}`

const ARGPARSE =
  /(?:^|[\s"'`(（：:])(?:([\w./-]+(?: [\w-]+)?): )?error: ((?:unrecognized arguments|argument -|the following arguments are required|ambiguous option|invalid choice|expected one argument).*?)["'`）]?\s*$/

export const argparse: Signature = {
  id: "argparse",
  tag: "ArgparseError",
  tier: Tier.Root,
  variants: [
    {
      from: "argparse (SGLang)",
      text: "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2"
    },
    {
      from: "argparse (SGLang 0.5.x)",
      text: "sglang serve: error: argument --attention-backend: invalid choice: 'fa' (choose from 'triton', 'fa3', ...)"
    },
    {
      from: "argparse (vLLM)",
      text: "vllm serve: error: argument --dtype: invalid choice: 'torch.bfloat16' (choose from 'auto', 'bfloat16', 'float', 'float16', 'float32', 'half')"
    },
    { from: "argparse", text: "api_server.py: error: the following arguments are required: --model-path" }
  ],
  match: (s) => s.record === undefined && ARGPARSE.test(s.text),
  build: (s, ctx) => {
    const message = ARGPARSE.exec(s.text)![2]!
    const usage =
      ctx.usage !== undefined && ctx.usage.line < s.line && s.line - ctx.usage.line < 40
        ? ctx.usage
        : undefined
    const kind = message.includes("invalid choice")
      ? "invalid-choice"
      : message.startsWith("unrecognized arguments")
        ? "unrecognized"
        : message.includes("arguments are required")
          ? "required"
          : message.includes("invalid") && message.includes("value")
            ? "invalid-value"
            : "other"
    const flags = [...new Set(message.match(/--?[a-zA-Z][\w-]*/g) ?? [])].filter((f) => f.startsWith("--"))
    return new F.ArgparseError({
      ...base(
        s,
        message,
        kind === "unrecognized"
          ? {
              removeFlags: flags,
              action: `these flags do not exist in the installed ${engineName(ctx)} version`
            }
          : kind === "required"
            ? { action: `add ${flags.join(" ") || "the required arguments"}` }
            : { action: `correct ${flags.join(" ") || "the argument"}: ${message}` }
      ),
      ...(usage === undefined ? {} : { evidence: [usage, ...s.evidence] }),
      kind,
      flags,
      ...namedEngine(ctx.engine)
    })
  }
}

// a kernel this build (or this GPU) cannot have: Triton failing to compile it for the architecture,
// the engine's compiled ops without it
const KERNEL_UNAVAILABLE =
  /triton\.runtime\.errors\.PTXASError|triton\.compiler\.errors\.CompilationError|'_OpNamespace' '\w+' object has no attribute/

const QUANTIZATION =
  /Unknown quantization method|quantization method \S+ is not supported|Unsupported quantization/i

export const unsupported: Signature = {
  id: "unsupported-combination",
  tag: "UnsupportedConfig",
  tier: Tier.Root,
  variants: [
    { from: "SGLang 0.5.x", text: "ValueError: HiRadixCache only supports MHA, MLA, and NSA (DSA) models" },
    {
      from: "SGLang 0.5.11",
      text: "ValueError: trtllm_mha backend only supports topk = 1 for speculative decoding."
    },
    {
      from: "vLLM",
      text: "NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface."
    },
    {
      from: "vLLM 0.4-0.6",
      text: "ValueError: Unknown quantization method: gptq_v2. Must be one of ['aqlm', 'awq', ...]."
    }
  ],
  match: (s) =>
    says(QUANTIZATION)(s) ||
    says(KERNEL_UNAVAILABLE)(s) ||
    inException(
      (_, e) =>
        /NotImplementedError$/.test(e.type) ||
        (/(?:ValueError|AssertionError|RuntimeError|TypeError|Exception)$/.test(e.type) &&
          saysUnsupported(firstLine(e.message)))
    )(s),
  build: (s, ctx) =>
    new F.UnsupportedConfig({
      ...base(s, reasonOf(s), {
        action: `change one of the settings this ${ctx.engine === undefined ? "" : `${engineName(ctx)} `}build refuses together (see its message), or use a release that supports the combination`
      }),
      kind: "combination",
      flags: flagsIn(s.flat)
    })
}

const INVALID =
  /User-specified (?:context_length|max_model_len) \(\d+\) is greater than the derived|SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN|VLLM_ALLOW_LONG_MAX_MODEL_LEN|must be divisible by tensor parallel size|does not match the quantization method specified|invalid (?:tool call|reasoning) parser|\(cho(?:o)?se from |max_num_batched_tokens \(\d+\) (?:is smaller than|must be greater than or equal to)|data_parallel_size_local \(\d+\) must be|must be True to use EPLB|cannot be greater than the max_model_len|Chunked prefill must be enabled|must be divisible bydcp_size|world_size=\d+ must be divisible by nnodes|\bis (?:greater|larger) than (?:the )?(?:max_|maximum )\w*/i
const CONFIG_CODE = /(?:server_args|arg_utils|cli_args|config|configs?\/\w+|engine_args|serve)\.py$/
// pydantic's ValidationError is a wrapper: pydanticConfig reads the message it wraps
const ARGUMENT_TYPES = /(?:ValueError|TypeError|KeyError)$/

const inConfigCode = (s: Subject): boolean => {
  const frames = s.record?.frames ?? []
  return frames
    .slice(-4)
    .some((f) => CONFIG_CODE.test(f.file) || f.func === "__post_init__" || f.func === "check_server_args")
}

const invalidFix = (s: Subject, message: string): F.Fix | undefined =>
  speculativeNone(s, message)
    ? { flags: { "--speculative-eagle-topk": 1 } }
    : /SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN|User-specified context_length/.test(message)
      ? {
          action:
            "lower --context-length to the model's limit, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
        }
      : /VLLM_ALLOW_LONG_MAX_MODEL_LEN|max_model_len/.test(message)
        ? { action: "lower --max-model-len to the model's limit, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" }
        : undefined

// SGLang 0.5.11 compares an unset speculative_eagle_topk (None) with an int
const speculativeNone = (s: Subject, message: string): boolean =>
  /'>' not supported between instances of 'NoneType'/.test(message) &&
  (s.record?.frames.some((f) => f.func.includes("speculative")) ?? false)

const buildInvalid = (s: Subject): F.InvalidArgument => {
  const message = s.final === undefined ? s.text : `${s.final.type}: ${s.final.message}`
  return new F.InvalidArgument({
    ...base(s, reasonOf(s, INVALID), invalidFix(s, message)),
    flags: speculativeNone(s, message)
      ? ["--speculative-num-steps", "--speculative-eagle-topk"]
      : /context_length/.test(message)
        ? ["--context-length"]
        : flagsIn(message)
  })
}

/** The engines' own wordings for values they reject (tried early: they may mention CUDA or memory in passing). */
export const knownInvalidArgument: Signature = {
  id: "known-invalid-argument",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.4-0.5.x",
      text: "ValueError: User-specified context_length (200000) is greater than the derived context_length (131072). To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    },
    {
      from: "vLLM 0.4-0.6",
      text: "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3)."
    },
    {
      from: "vLLM 0.10+ (pydantic)",
      text: "Value error, User-specified max_model_len (131072) is greater than the derived max_model_len (max_position_embeddings=32768.0 ...). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
    },
    {
      from: "SGLang (wrappers)",
      text: "TypeError: sglang.srt.server_args.ServerArgs() got multiple values for keyword argument 'log_level'"
    },
    {
      from: "vLLM 0.9+",
      text: "ValueError: With `vllm serve`, you should provide the model as a positional argument or in a config file instead of via the `--model` option."
    }
  ],
  match: says(INVALID),
  build: buildInvalid
}

// vLLM's config dataclasses report through pydantic: `1 validation error for ModelConfig` then
// `Value error, <message>`; the message is tried against every other signature first
const PYDANTIC = /\d+ validation errors? for \w+|Value error, /

export const pydanticConfig: Signature = {
  id: "config-validation-error",
  tag: "InvalidArgument",
  tier: Tier.Wrapped,
  variants: [
    {
      from: "vLLM 0.10+",
      text: "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n  Value error, max_num_batched_tokens (2048) must be greater than or equal to max_num_seqs (4096). [type=value_error]"
    }
  ],
  // the wrapped message must read like an argument check; a JSON error inside is something else
  match: (s) => {
    // the message only: pydantic appends ` [type=value_error, input_value=<every argument>]`
    const inner = /Value error, ([^\n]*)/.exec(s.flat)?.[1]?.split(" [type=")[0]
    return (
      says(PYDANTIC)(s) &&
      (inner === undefined ||
        VALIDATION.test(inner) ||
        INVALID.test(inner) ||
        flagsIn(inner).length > 0 ||
        /--|\bmax_|\bmin_|_size\b|_len\b/.test(inner))
    )
  },
  build: buildInvalid
}

// the stable words of an argument check: a value "must be greater than", "should be positive", ...
const VALIDATION =
  /\b(?:must|should|cannot|can only|must not|needs? to) (?:be|encode|have|match|contain|divide)\b|\bexpected\b.{0,80}\bto be\b|\bis not divisible by\b|\b(?:is|are) (?:greater|larger|smaller|less) than\b|\bout of (?:the )?range\b|\bexceeds? (?:the )?(?:max|limit)|\binvalid value\b|\bnot aligned with\b|\bcaused by too (?:large|small)\b/i

/** A ValueError/TypeError from the engine's argument or config code, or about its flags. */
export const invalidArgument: Signature = {
  id: "invalid-argument",
  tag: "InvalidArgument",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.5.11",
      text: "  File \"/usr/lib/python3/dist-packages/sglang/srt/server_args.py\", line 3531, in _handle_speculative_decoding\n    if self.speculative_eagle_topk > 1:\nTypeError: '>' not supported between instances of 'NoneType' and 'int'"
    },
    {
      from: "vLLM 0.4",
      text: "ValueError: Quantization method specified in the model config (bitsandbytes) does not match the quantization method specified in the `quantization` argument (marlin)."
    }
  ],
  match: inException(
    (subject, e) =>
      ARGUMENT_TYPES.test(e.type) &&
      (inConfigCode(subject) ||
        flagsIn(e.message).length > 0 ||
        (/ValueError$/.test(e.type) && VALIDATION.test(firstLine(e.message))) ||
        /ServerArgs|server_args|EngineArgs|engine_args/.test(e.message))
  ),
  build: buildInvalid
}

/** Flags an assert is about: fields named in its source, and flags in its message. */
const assertFlags = (source: string, message: string): Array<string> => {
  const fields = [
    ...source.matchAll(/(?:self\.|server_args\.|args\.)?\b([a-z]+(?:_[a-z0-9]+)+)\b(?!\s*\()/g)
  ].map((m) => flagOf(m[1]!))
  return [...new Set([...fields, ...flagsIn(message)])]
}

export const assertion: Signature = {
  id: "assertion",
  tag: "AssertionFailure",
  tier: Tier.Root,
  variants: [
    {
      from: "SGLang 0.5.11 server_args",
      text: '  File "/usr/lib/python3/dist-packages/sglang/srt/server_args.py", line 3500, in _handle_speculative_decoding\n    assert (\nAssertionError'
    },
    { from: "SGLang distributed/utils.py", text: "AssertionError: 16 is not divisible by 6" },
    {
      from: "vLLM linear.py",
      text: '  File "/usr/lib/python3/dist-packages/vllm/model_executor/layers/linear.py", line 1336, in weight_loader\n    assert param_data.shape == loaded_weight.shape\nAssertionError'
    }
  ],
  match: inException((_, e) => /(?:^|\.)AssertionError$/.test(e.type)),
  build: (s) => {
    const final = s.final!
    const last = s.record?.frames[s.record.frames.length - 1]
    const source = last
      ? last.source.join(" ").replace(/\s+/g, " ").replace(/\( /g, "(").replace(/ \)/g, ")")
      : ""
    const flags = assertFlags(source, final.message)
    // the only bare assert in _handle_speculative_decoding is the all-or-nothing triple (rules R12);
    // older Pythons show just its first source line, `assert (`
    const speculative =
      (source.includes("speculative_eagle_topk") && source.includes("speculative_num_draft_tokens")) ||
      (last?.func === "_handle_speculative_decoding" && final.message.trim() === "")
    if (speculative)
      for (const f of [
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
        "--speculative-num-steps"
      ])
        if (!flags.includes(f)) flags.push(f)
    if (/is not divisible by/.test(final.message) && !flags.includes("--tp-size")) flags.push("--tp-size")
    const what = speculative
      ? `bare assert \`${source || "assert (...)"}\`: --speculative-eagle-topk or --speculative-num-draft-tokens was given without --speculative-num-steps; SGLang wants all three or none`
      : final.message.trim() === ""
        ? `bare assert: ${source || "(source not shown)"}`
        : firstLine(final.message)
    return new F.AssertionFailure({
      ...base(
        s,
        `AssertionError (${what})`,
        speculative
          ? {
              flags: { "--speculative-num-steps": 1, "--speculative-eagle-topk": 1 },
              action:
                "give --speculative-num-steps and --speculative-eagle-topk together with --speculative-num-draft-tokens, or none of the three"
            }
          : undefined
      ),
      file: last?.file ?? "",
      line: last?.line ?? 0,
      function: last?.func ?? "",
      source,
      flags
    })
  }
}
