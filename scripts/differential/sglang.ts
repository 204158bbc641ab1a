/**
 * The differential test of record for SGLang's launch rules: each release's own argument handling
 * (`prepare_server_args`: argparse, `ServerArgs.__post_init__` and the checks it calls, run from
 * the release's public source with its heavy imports faked, `sglang_runner.py`) on the same few
 * hundred launch commands, its outcome per command recorded as data beside the tests; then the
 * offline check (`Check.offline`) held to those outcomes.
 *
 *   npx tsx scripts/differential/sglang.ts commands          # (re)generate commands.json (seeded)
 *   npx tsx scripts/differential/sglang.ts run [VERSION...]  # run releases, write outcomes/<v>.json
 *   npx tsx scripts/differential/sglang.ts report [--misses] # agreement per release, both parts
 *   npx tsx scripts/differential/sglang.ts show VERSION ID    # one command, both sides
 *
 * `run` needs the public histories fetched as bare git directories (the releases' commits are in
 * `packages/sglang/test/fixtures/versions/index.json`): MIRRORS (`owner+name=path,...`), default
 * `/work/.mirror/<owner>+<name>/repo`. No engine code is copied into the repository: a release's
 * tree is unpacked into a temporary directory, run and removed; only outcomes are kept.
 *
 * The device every release sees: SM86 (RTX A6000), 2 GPUs of 48 GiB, CUDA 12.4, driver 550.
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Either } from "effect"
import * as Check from "../../packages/sglang/src/Check.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "../..")
const data = path.join(root, "packages/sglang/test/differential")
const index = path.join(root, "packages/sglang/test/fixtures/versions/index.json")

/** The device of the record (the runner's own facts say the same). */
export const GPUS = { count: 2, computeCapability: "8.6", memoryGiB: 48 } as const

// ---- commands ---------------------------------------------------------------------------------

/** A seeded PRNG (mulberry32): the same commands on every machine. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const MODELS = ["qwen3.6-27b", "llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"] as const

/** Flags users pass, with the values they pass: each a list of alternatives (one is picked). */
const POOL: ReadonlyArray<ReadonlyArray<ReadonlyArray<string>>> = [
  [
    ["--tp", "2"],
    ["--tp-size", "2"],
    ["--tp", "1"],
    ["--tensor-parallel-size", "2"]
  ],
  [
    ["--dp", "2"],
    ["--dp-size", "2"]
  ],
  [["--enable-dp-attention"]],
  [["--pp-size", "2"]],
  [
    ["--mem-fraction-static", "0.85"],
    ["--mem-fraction-static", "0.95"],
    ["--mem-fraction-static", "1.2"]
  ],
  [
    ["--chunked-prefill-size", "4096"],
    ["--chunked-prefill-size", "-1"],
    ["--chunked-prefill-size", "8192"]
  ],
  [
    ["--max-running-requests", "64"],
    ["--max-running-requests", "0"]
  ],
  [
    ["--context-length", "32768"],
    ["--context-length", "300000"]
  ],
  [["--disable-radix-cache"]],
  [["--disable-cuda-graph"]],
  [
    ["--cuda-graph-max-bs", "64"],
    ["--cuda-graph-max-bs", "256"]
  ],
  [["--enable-mixed-chunk"]],
  [["--enable-torch-compile"]],
  [
    ["--page-size", "64"],
    ["--page-size", "1"],
    ["--page-size", "16"]
  ],
  [
    ["--attention-backend", "flashinfer"],
    ["--attention-backend", "triton"],
    ["--attention-backend", "fa3"],
    ["--attention-backend", "torch_native"],
    ["--attention-backend", "trtllm_mha"],
    ["--attention-backend", "flashmla"]
  ],
  [
    ["--kv-cache-dtype", "fp8_e4m3"],
    ["--kv-cache-dtype", "auto"],
    ["--kv-cache-dtype", "fp8_e5m2"]
  ],
  [
    ["--quantization", "fp8"],
    ["--quantization", "awq"],
    ["--quantization", "w8a8_int8"]
  ],
  [
    ["--dtype", "bfloat16"],
    ["--dtype", "float16"],
    ["--dtype", "auto"]
  ],
  [
    ["--schedule-policy", "fcfs"],
    ["--schedule-policy", "lpm"],
    ["--schedule-policy", "random"]
  ],
  [
    ["--grammar-backend", "xgrammar"],
    ["--grammar-backend", "none"],
    ["--grammar-backend", "outlines"]
  ],
  [["--enable-hierarchical-cache"]],
  [["--trust-remote-code"]],
  [["--served-model-name", "served"]],
  [
    ["--host", "0.0.0.0"],
    ["--port", "30000"]
  ],
  [["--max-total-tokens", "65536"]],
  [["--stream-interval", "4"]],
  [
    ["--load-format", "dummy"],
    ["--load-format", "auto"]
  ],
  [
    ["--ep-size", "2"],
    ["--expert-parallel-size", "2"]
  ],
  [
    ["--moe-a2a-backend", "deepep"],
    ["--moe-runner-backend", "triton"]
  ],
  [["--enable-eplb"]],
  [["--random-seed", "42"]],
  [
    ["--tool-call-parser", "qwen25"],
    ["--reasoning-parser", "qwen3"],
    ["--reasoning-parser", "deepseek-r1"]
  ]
]

/** Speculative decoding, as users write it (the rules' thickest part). */
const SPECULATIVE: ReadonlyArray<ReadonlyArray<string>> = [
  ["--speculative-algorithm", "NEXTN"],
  ["--speculative-algorithm", "EAGLE"],
  ["--speculative-algorithm", "EAGLE3"],
  ["--speculative-algorithm", "MTP"],
  ["--speculative-algorithm", "nextn"],
  ["--speculative-algorithm", "NGRAM"],
  ["--speculative-algorithm", "STANDALONE"]
]
const SPEC_DETAILS: ReadonlyArray<ReadonlyArray<ReadonlyArray<string>>> = [
  [
    ["--speculative-num-steps", "1"],
    ["--speculative-num-steps", "3"]
  ],
  [
    ["--speculative-eagle-topk", "1"],
    ["--speculative-eagle-topk", "4"]
  ],
  [
    ["--speculative-num-draft-tokens", "1"],
    ["--speculative-num-draft-tokens", "2"],
    ["--speculative-num-draft-tokens", "4"]
  ],
  [["--speculative-draft-model-path", "{draft}"]],
  [
    ["--mamba-scheduler-strategy", "extra_buffer"],
    ["--mamba-scheduler-strategy", "no_buffer"]
  ]
]

export interface Command {
  readonly id: string
  readonly model: (typeof MODELS)[number]
  /** `{model}` and `{draft}` stand for the model directories. */
  readonly argv: ReadonlyArray<string>
  readonly part: "development" | "held-out"
}

/**
 * Commands written for checks the seeded ones reach rarely (found by a second reading of the
 * rules): kept apart (`t` ids), all development.
 */
const TARGETED: ReadonlyArray<Pick<Command, "model" | "argv">> = [
  { model: "deepseek-v3", argv: ["--enable-eplb", "--tp", "2", "--moe-a2a-backend", "deepep"] },
  { model: "qwen3-30b-a3b", argv: ["--enable-eplb", "--tp", "2", "--ep-size", "2"] },
  { model: "deepseek-v3", argv: ["--quantization", "awq"] },
  { model: "deepseek-v3", argv: ["--quantization", "fp8"] },
  {
    model: "llama-3.1-8b",
    argv: [
      "--speculative-algorithm",
      "EAGLE",
      "--speculative-num-steps",
      "3",
      "--page-size",
      "16",
      "--speculative-draft-model-path",
      "{draft}"
    ]
  },
  { model: "llama-3.1-8b", argv: ["--enable-dp-attention", "--tp", "1"] },
  { model: "llama-3.1-8b", argv: ["--enable-dp-attention", "--tp", "2", "--dp", "2"] },
  {
    model: "llama-3.1-8b",
    argv: [
      "--attention-backend",
      "trtllm_mha",
      "--prefill-attention-backend",
      "flashinfer",
      "--decode-attention-backend",
      "flashinfer"
    ]
  },
  { model: "llama-3.1-8b", argv: ["--speculative-algorithm", "NGRAM", "--page-size", "64"] },
  { model: "qwen3.6-27b", argv: ["--mamba-scheduler-strategy", "no_buffer", "--disable-overlap-schedule"] },
  { model: "qwen3.6-27b", argv: ["--speculative-algorithm", "mtp"] }
]

const generate = (count: number): ReadonlyArray<Command> => {
  const next = random(20261203)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  const commands: Array<Command> = []
  const seen = new Set<string>()
  while (commands.length < count) {
    const model = pick(MODELS)
    const argv: Array<string> = ["--model-path", "{model}"]
    const groups = [...POOL]
    const flags = Math.floor(next() * 5)
    for (let i = 0; i < flags && groups.length > 0; i++) {
      const at = Math.floor(next() * groups.length)
      argv.push(...pick(groups[at]!))
      groups.splice(at, 1)
    }
    // half the commands decode speculatively, with some of its details
    if (next() < 0.5) {
      argv.push(...pick(SPECULATIVE))
      for (const details of SPEC_DETAILS) if (next() < 0.45) argv.push(...pick(details))
    } else if (next() < 0.2)
      for (const details of SPEC_DETAILS.slice(0, 3)) if (next() < 0.3) argv.push(...pick(details))
    const key = `${model} ${argv.join(" ")}`
    if (seen.has(key)) continue
    seen.add(key)
    const n = commands.length + 1
    // a fifth held out, by the seeded stream, never tuned on
    commands.push({
      id: `c${String(n).padStart(3, "0")}`,
      model,
      argv,
      part: next() < 0.2 ? "held-out" : "development"
    })
  }
  for (const [i, targeted] of TARGETED.entries())
    commands.push({
      id: `t${String(i + 1).padStart(2, "0")}`,
      model: targeted.model,
      argv: ["--model-path", "{model}", ...targeted.argv],
      part: "development"
    })
  return commands
}

// ---- running a release ----------------------------------------------------------------------

interface Release {
  readonly version: string
  readonly commit: string
  readonly repo: string
}

/** A release's outcome on one command. */
export type Outcome =
  | { readonly outcome: "accepted"; readonly values?: Readonly<Record<string, unknown>> }
  | { readonly outcome: "error"; readonly type: string; readonly message: string }

const mirrorOf = (repo: string): string => {
  const given = (process.env.MIRRORS ?? "")
    .split(",")
    .map((entry) => entry.split("="))
    .find(([name]) => name === repo.replace("/", "+"))?.[1]
  return given ?? `/work/.mirror/${repo.replace("/", "+")}/repo`
}

const materialize = (dir: string, commands: ReadonlyArray<Command>) => {
  const models = path.join(dir, "models")
  for (const model of MODELS) {
    fs.mkdirSync(path.join(models, model), { recursive: true })
    fs.copyFileSync(path.join(data, "models", `${model}.json`), path.join(models, model, "config.json"))
  }
  return commands.map((command) => ({
    id: command.id,
    argv: command.argv.map((word) =>
      word
        .replace("{model}", path.join(models, command.model))
        .replace("{draft}", path.join(models, "llama-3.1-8b"))
    )
  }))
}

const runRelease = (release: Release, commands: ReadonlyArray<Command>): Record<string, Outcome> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `sglang-${release.version}-`))
  try {
    const tree = path.join(dir, "tree")
    fs.mkdirSync(tree)
    const archive = path.join(dir, "tree.tar")
    execFileSync("git", [
      "--git-dir",
      mirrorOf(release.repo),
      "archive",
      "-o",
      archive,
      release.commit,
      "python/sglang"
    ])
    execFileSync("tar", ["-xf", archive, "-C", tree])
    const concrete = materialize(dir, commands)
    const input = path.join(dir, "commands.jsonl")
    fs.writeFileSync(input, concrete.map((c) => JSON.stringify(c)).join("\n"))
    const result = spawnSync("python3", [path.join(here, "sglang_runner.py"), tree, input], {
      encoding: "utf8",
      maxBuffer: 256 * 2 ** 20,
      timeout: 30 * 60_000
    })
    const outcomes: Record<string, Outcome> = {}
    for (const line of result.stdout.split("\n")) {
      if (!line.startsWith("{")) continue
      const { id, ...rest } = JSON.parse(line) as { id: string } & Outcome
      // paths of this machine's temporary directory are not facts of the release
      outcomes[id] = JSON.parse(JSON.stringify(rest).replaceAll(dir, "<dir>")) as Outcome
    }
    if (Object.keys(outcomes).length !== commands.length)
      throw new Error(
        `${release.version}: ${Object.keys(outcomes).length} of ${commands.length} outcomes\n${result.stderr.slice(-3000)}`
      )
    return outcomes
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

// ---- agreement --------------------------------------------------------------------------------

export const readCommands = (): ReadonlyArray<Command> =>
  JSON.parse(fs.readFileSync(path.join(data, "commands.json"), "utf8")) as ReadonlyArray<Command>

export const readOutcomes = (version: string): Readonly<Record<string, Outcome>> | undefined => {
  const file = path.join(data, "outcomes", `${version}.json`)
  return fs.existsSync(file)
    ? (JSON.parse(fs.readFileSync(file, "utf8")) as Record<string, Outcome>)
    : undefined
}

/** What the offline check says of one command for `version`: accepted, or the tag it refused with. */
export const predict = (version: string, command: Command) =>
  Effect.runSync(
    Effect.either(
      Check.offline({
        argv: command.argv.map((word) =>
          word.replace("{model}", `/models/${command.model}`).replace("{draft}", "/models/draft")
        ),
        modelConfig: fs.readFileSync(path.join(data, "models", `${command.model}.json`), "utf8"),
        gpus: GPUS,
        version
      })
    )
  )

/** The kind of a refusal: argparse's (SystemExit, mlops' argv errors) or the exception's type. */
const kindOf = (error: {
  readonly _tag: string
  readonly violations?: ReadonlyArray<{ readonly errorType: string }>
}) => (error._tag === "LaunchRulesViolated" ? (error.violations?.[0]?.errorType ?? "?") : "SystemExit")

const report = (misses: boolean) => {
  const commands = readCommands()
  for (const release of releases()) {
    const outcomes = readOutcomes(release.version)
    if (outcomes === undefined) continue
    const parts = { development: [0, 0], "held-out": [0, 0] } as Record<Command["part"], [number, number]>
    // of the commands both refuse, how many mlops refuses the engine's way (its first problem's type)
    const kinds = [0, 0]
    const missed: Array<string> = []
    for (const command of commands) {
      const outcome = outcomes[command.id]
      if (outcome === undefined) continue
      const predicted = predict(release.version, command)
      const agree = Either.isRight(predicted) === (outcome.outcome === "accepted")
      parts[command.part][1]++
      if (agree) parts[command.part][0]++
      if (agree && Either.isLeft(predicted) && outcome.outcome === "error") {
        kinds[1]++
        if (kindOf(predicted.left) === outcome.type) kinds[0]++
      }
      if (!agree && command.part === "development")
        missed.push(
          `  ${command.id} ${command.model} ${command.argv.slice(2).join(" ")}\n    engine: ${outcome.outcome === "accepted" ? "accepted" : `${outcome.type}: ${outcome.message.slice(0, 160)}`}\n    mlops:  ${Either.isRight(predicted) ? "accepted" : `${predicted.left._tag}: ${predicted.left.message.slice(0, 160)}`}`
        )
    }
    const pct = ([a, n]: ReadonlyArray<number>) =>
      `${((100 * (a ?? 0)) / Math.max(1, n ?? 0)).toFixed(1)}% (${a}/${n})`
    console.log(
      `${release.version.padEnd(16)} development ${pct(parts.development)}  held-out ${pct(parts["held-out"])}  refused the engine's way ${pct(kinds)}`
    )
    if (misses) for (const miss of missed) console.log(miss)
  }
}

/** One command on one release, both sides in full. */
const show = (version: string, id: string) => {
  const command = readCommands().find((c) => c.id === id)
  if (command === undefined) return console.error(`no command ${id}`)
  console.log(`${command.id} ${command.model} ${command.argv.join(" ")}`)
  console.log(`engine: ${JSON.stringify(readOutcomes(version)?.[id])}`)
  const predicted = predict(version, command)
  console.log(`mlops:  ${Either.isRight(predicted) ? "accepted" : predicted.left.message}`)
}

const releases = (): ReadonlyArray<Release> =>
  (JSON.parse(fs.readFileSync(index, "utf8")) as ReadonlyArray<Release>).map(({ version, commit, repo }) => ({
    version,
    commit,
    repo
  }))

const main = () => {
  const [mode, ...rest] = process.argv.slice(2)
  if (mode === "commands") {
    fs.mkdirSync(data, { recursive: true })
    const commands = generate(400)
    fs.writeFileSync(
      path.join(data, "commands.json"),
      `[\n${commands.map((c) => JSON.stringify(c)).join(",\n")}\n]\n`
    )
    console.log(
      `${commands.length} commands (${commands.filter((c) => c.part === "held-out").length} held out)`
    )
  } else if (mode === "run") {
    const commands = readCommands()
    const wanted = releases().filter((r) => rest.length === 0 || rest.includes(r.version))
    fs.mkdirSync(path.join(data, "outcomes"), { recursive: true })
    for (const release of wanted) {
      const started = Date.now()
      const outcomes = runRelease(release, commands)
      const lines = Object.entries(outcomes).map(([id, o]) => `${JSON.stringify(id)}: ${JSON.stringify(o)}`)
      fs.writeFileSync(path.join(data, "outcomes", `${release.version}.json`), `{\n${lines.join(",\n")}\n}\n`)
      const accepted = Object.values(outcomes).filter((o) => o.outcome === "accepted").length
      console.log(
        `${release.version}: ${accepted}/${commands.length} accepted (${((Date.now() - started) / 1000).toFixed(0)} s)`
      )
    }
  } else if (mode === "report") report(rest.includes("--misses"))
  else if (mode === "show" && rest.length === 2) show(rest[0]!, rest[1]!)
  else console.error("usage: sglang.ts commands | run [VERSION...] | report [--misses] | show VERSION ID")
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main()
