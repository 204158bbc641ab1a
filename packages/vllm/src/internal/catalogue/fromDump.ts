/**
 * A `vllm serve` parser dump (argparse actions: option strings, dest, default as Python repr
 * text, choices, the converter's name, nargs, action class, group) as catalogue records. Used by
 * the catalogue generator on the reference dumps and by `HostFlags` on a host's own parser.
 *
 * A `X | None` field's converter is vLLM's `optional_type(X)`, whose name (`_optional_type`) does
 * not say what X is: a host dump names it (`inner`, read from the converter's closure); for the
 * reference dumps the tables below do (from the field's type hint in vllm/config/*.py).
 *
 * @internal
 */
import { Schema } from "effect"
import { parsePythonLiteral } from "../pythonLiteral.js"
import type { Arity, Conversion, FlagRecord } from "./snapshot.js"

/** One argparse action as a dump records it. */
export const DumpAction = Schema.Struct({
  flags: Schema.Array(Schema.String),
  dest: Schema.String,
  default: Schema.String,
  choices: Schema.NullOr(Schema.Array(Schema.String)),
  type: Schema.NullOr(Schema.String),
  nargs: Schema.NullOr(Schema.Union(Schema.Number, Schema.String)),
  action: Schema.String,
  group: Schema.String,
  /** What an `optional_type` converter wraps (`int`, `loads`…), when the dump could tell. */
  inner: Schema.optional(Schema.NullOr(Schema.String))
})
export type DumpAction = typeof DumpAction.Type

/** What `optional_type(X)` wraps, per dest (int, float, JSON config; the rest are text). */
export const innerOfOptional: Readonly<Record<string, Conversion>> = {
  distributed_timeout_seconds: "int",
  kv_cache_memory_bytes: "size",
  mamba_block_size: "int",
  max_cpu_loras: "int",
  max_cudagraph_capture_size: "int",
  max_log_len: "int",
  max_parallel_loading_workers: "int",
  num_gpu_blocks_override: "int",
  seed: "int",
  cudagraph_capture_sizes: "int",
  numa_bind_nodes: "int",
  kv_offloading_size: "float",
  video_pruning_rate: "float",
  rope_theta: "float",
  default_mm_loras: "json",
  ec_transfer_config: "json",
  kv_events_config: "json",
  kv_transfer_config: "json",
  mm_processor_kwargs: "json",
  override_pooler_config: "json",
  pooler_config: "json",
  quantization_config: "json",
  reasoning_config: "json",
  speculative_config: "json",
  weight_transfer_config: "json"
}
export const textualOptional = new Set([
  "all2all_backend",
  "allowed_media_domains",
  "api_key",
  "attention_backend",
  "chat_template",
  "code_revision",
  "collect_detailed_traces",
  "disable_access_log_for_endpoints",
  "distributed_executor_backend",
  "download_dir",
  "fingerprint_value",
  "hf_config_path",
  "host",
  "ignore_patterns",
  "io_processor_plugin",
  "kv_offloading_backend",
  "log_config_file",
  "logits_processor_pattern",
  "logits_processors",
  "lora_modules",
  "lora_target_modules",
  "mm_encoder_attn_backend",
  "mm_encoder_attn_dtype",
  "mm_encoder_fp8_scale_path",
  "mm_encoder_fp8_scale_save_path",
  "numa_bind_cpus",
  "otlp_traces_endpoint",
  "override_attention_dtype",
  "quantization",
  "revision",
  "root_path",
  "safetensors_load_strategy",
  "scheduler_cls",
  "served_model_name",
  "show_hidden_metrics_for_version",
  "spec_method",
  "spec_model",
  "ssl_ca_certs",
  "ssl_certfile",
  "ssl_ciphers",
  "ssl_keyfile",
  "task",
  "tokenizer_revision",
  "tool_call_parser",
  "tool_server",
  "uds"
])

const arityOf = (a: DumpAction): Arity => {
  switch (a.action) {
    case "_StoreTrueAction":
      return "switch"
    case "BooleanOptionalAction":
      return "toggle"
    case "_AppendAction":
      return "append"
    default:
      return a.nargs === "+" ? "many" : a.nargs === "?" ? "maybe" : "single"
  }
}

/** A converter's name as a conversion; undefined when it is not one vLLM's flags use. */
const conversionNamed = (type: string | null, action: string): Conversion | undefined => {
  switch (type) {
    case null:
      return action === "_StoreAction" ? "text" : "truth"
    case "int":
      return "int"
    case "float":
      return "float"
    case "bool":
      return "truth"
    case "human_readable_int":
    case "human_readable_int_or_auto":
      return "size"
    case "loads":
    case "parse_dataclass":
    case "_parse_type":
      return "json"
    case "union_dict_and_str":
      return "jsonOrText"
    case "str":
    case "<lambda>":
      return "text"
    default:
      return undefined
  }
}

const conversionOf = (a: DumpAction, strict: boolean): Conversion => {
  if (a.type === "_optional_type") {
    const inner =
      (a.inner == null ? undefined : conversionNamed(a.inner, "_StoreAction")) ??
      innerOfOptional[a.dest] ??
      (textualOptional.has(a.dest) ? "text" : undefined)
    if (inner !== undefined) return inner
    if (strict)
      throw new Error(`${a.flags[0]}: optional_type of an unknown inner type; add ${a.dest} to the table`)
    return "text"
  }
  const conversion = conversionNamed(a.type, a.action)
  if (conversion !== undefined) return conversion
  if (strict) throw new Error(`${a.flags[0]}: unknown converter ${a.type}`)
  // a converter newer than mlops: its values are taken as text (the host's own parser is the judge)
  return "text"
}

const choiceOf = (conversion: Conversion, text: string): string | number | null =>
  text === "None" ? null : conversion === "int" ? Number(text) : text

/** One action as a catalogue record; `strict`: an unknown converter is an error, not text. */
export const recordOf = (a: DumpAction, options: { readonly strict: boolean }): FlagRecord => {
  const arity = arityOf(a)
  const conversion = conversionOf(a, options.strict)
  const [flag, ...rest] = a.flags
  const negation = `--no-${flag!.slice(2)}`
  const parsed = parsePythonLiteral(a.default)
  return {
    flag: flag!,
    short: rest.filter((s) => s !== negation),
    dest: a.dest,
    arity,
    conversion,
    nullable: a.type === "_optional_type",
    default: parsed.ok ? parsed.value : a.default,
    choices: a.choices === null ? null : a.choices.map((c) => choiceOf(conversion, c)),
    group: a.group,
    ...(a.type === "human_readable_int_or_auto" ? { auto: true } : {})
  }
}
