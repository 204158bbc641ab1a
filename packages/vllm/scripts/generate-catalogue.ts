/**
 * Generate vLLM's flag catalogues from the parser dumps in the reference
 * (`shared/reference/vllm/flags/vllm-serve-flags-main-<date>-<commit>.json`, argparse actions
 * of `vllm serve`): the newest dump in full, every older one as what it drops and adds or
 * redefines relative to the next newer one.
 *
 * Usage (from packages/vllm): npm run generate [-- --reference <dir holding the dumps>]
 *
 * The dumps record `_optional_type` for every `X | None` field without saying what X is; the
 * table `innerOfOptional` below names it (from the field's type hint in vllm/config/*.py). A
 * dump flag of that type missing from the table fails the run, so a new dump cannot slip an
 * unknown type in silently.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import {
  type Arity,
  type Conversion,
  type FlagRecord,
  rebuild,
  type SnapshotDelta,
  type SnapshotInfo
} from "../src/internal/catalogue/snapshot.js"
import { parsePythonLiteral } from "../src/internal/pythonLiteral.js"

const here = dirname(fileURLToPath(import.meta.url))
const outDir = resolve(here, "../src/internal/catalogue")

/** The release each dump is closest to, as the reference states it. */
const nearRelease: Readonly<Record<string, string>> = {
  "4778b426": "0.11",
  e087fbc3: "0.13",
  "9aaf83ef": "0.21"
}

/** What `optional_type(X)` wraps, per dest (int, float, JSON config; the rest are text). */
const innerOfOptional: Readonly<Record<string, Conversion>> = {
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
const textualOptional = new Set([
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

interface DumpAction {
  readonly flags: ReadonlyArray<string>
  readonly dest: string
  readonly default: string
  readonly choices: ReadonlyArray<string> | null
  readonly type: string | null
  readonly nargs: number | string | null
  readonly action: string
  readonly group: string
}

const referenceDir = (): string => {
  const at = process.argv.indexOf("--reference")
  if (at !== -1) return resolve(process.argv[at + 1]!)
  let dir = here
  while (dir !== dirname(dir)) {
    const candidate = join(dir, "shared/reference/vllm/flags")
    if (existsSync(candidate)) return candidate
    dir = dirname(dir)
  }
  throw new Error("no shared/reference/vllm/flags above this checkout: pass --reference <dir>")
}

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

const conversionOf = (a: DumpAction): Conversion => {
  switch (a.type) {
    case null:
      return a.action === "_StoreAction" ? "text" : "truth"
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
    case "_optional_type": {
      const inner = innerOfOptional[a.dest]
      if (inner !== undefined) return inner
      if (textualOptional.has(a.dest)) return "text"
      throw new Error(`${a.flags[0]}: optional_type of an unknown inner type; add ${a.dest} to the table`)
    }
    default:
      throw new Error(`${a.flags[0]}: unknown converter ${a.type}`)
  }
}

const choiceOf = (conversion: Conversion, text: string): string | number | null =>
  text === "None" ? null : conversion === "int" ? Number(text) : text

const recordOf = (a: DumpAction): FlagRecord => {
  const arity = arityOf(a)
  const conversion = conversionOf(a)
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

const infoOf = (file: string): SnapshotInfo => {
  const m = /^vllm-serve-flags-main-(\d{4}-\d{2}-\d{2})-([0-9a-f]+)\.json$/.exec(file)
  if (m === null) throw new Error(`unexpected dump name ${file}`)
  const near = nearRelease[m[2]!]
  if (near === undefined) throw new Error(`${file}: add its nearest release to nearRelease`)
  return { name: `main-${m[1]}`, commit: m[2]!, date: m[1]!, near }
}

const same = (a: FlagRecord, b: FlagRecord) => JSON.stringify(a) === JSON.stringify(b)

/** The delta that rebuilds `target` from `base`, checked to rebuild it exactly. */
const deltaOf = (info: SnapshotInfo, base: ReadonlyArray<FlagRecord>, target: ReadonlyArray<FlagRecord>) => {
  const inBase = new Map(base.map((r) => [r.flag, r]))
  const inTarget = new Set(target.map((r) => r.flag))
  const putFlags = new Set(
    target.filter((r) => !same(inBase.get(r.flag) ?? ({} as FlagRecord), r)).map((r) => r.flag)
  )
  for (;;) {
    const delta: SnapshotDelta = {
      ...info,
      dropped: base.filter((r) => !inTarget.has(r.flag)).map((r) => r.flag),
      put: target.flatMap((record, i) =>
        putFlags.has(record.flag) ? [{ after: i === 0 ? null : target[i - 1]!.flag, record }] : []
      )
    }
    const rebuilt = rebuild(base, delta)
    const firstOff = target.findIndex((r, i) => rebuilt[i] === undefined || !same(r, rebuilt[i]!))
    if (firstOff === -1 && rebuilt.length === target.length) return delta
    putFlags.add(target[firstOff === -1 ? target.length - 1 : firstOff]!.flag)
  }
}

const header = (what: string) =>
  `/**\n * ${what}\n * Generated by packages/vllm/scripts/generate-catalogue.ts from the reference parser dumps; do not edit.\n */\n`

const write = (file: string, text: string) => {
  writeFileSync(join(outDir, file), text)
}

const dir = referenceDir()
const dumps = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({
    info: infoOf(file),
    records: (JSON.parse(readFileSync(join(dir, file), "utf8")) as ReadonlyArray<DumpAction>).map(recordOf)
  }))
const newest = dumps.at(-1)!
write(
  "full.ts",
  header(
    `vLLM serve flags at ${newest.info.name} (${newest.records.length}, commit ${newest.info.commit}, near ${newest.info.near}).`
  ) +
    `import type { FlagRecord, SnapshotInfo } from "./snapshot.js"\n\n` +
    `export const info: SnapshotInfo = ${JSON.stringify(newest.info)}\n\n` +
    `export const flags: ReadonlyArray<FlagRecord> = ${JSON.stringify(newest.records)}\n`
)
// each older snapshot as its difference from the next newer one (a chain, so a flag removed
// long ago is not listed again in every older file)
const older = dumps.slice(0, -1).map(({ info, records }, i) => ({
  info,
  delta: deltaOf(info, dumps[i + 1]!.records, records)
}))
for (const { info, delta } of older) {
  write(
    `${info.name.replaceAll("-", "_")}.ts`,
    header(
      `vLLM serve flags at ${info.name} (commit ${info.commit}, near ${info.near}): the next newer snapshot without ${delta.dropped.length} flags, with ${delta.put.length} added or redefined.`
    ) +
      `import type { SnapshotDelta } from "./snapshot.js"\n\n` +
      `export const delta: SnapshotDelta = ${JSON.stringify(delta)}\n`
  )
}
write(
  "index.ts",
  header("Every shipped vLLM snapshot, oldest first.") +
    `import * as full from "./full.js"\n` +
    older
      .map(
        ({ info }) =>
          `import { delta as ${info.name.replaceAll("-", "_")} } from "./${info.name.replaceAll("-", "_")}.js"\n`
      )
      .join("") +
    `\nexport const base = full\nexport const deltas = [${older.map(({ info }) => info.name.replaceAll("-", "_")).join(", ")}] as const\n`
)
execFileSync("npx", ["biome", "format", "--write", outDir], { stdio: "inherit" })
for (const { info, records } of dumps)
  console.log(`${info.name} (near ${info.near}): ${records.length} flags`)
