/**
 * Log classifier throughput and memory on a large log.
 *
 * Generates a log on disk (a successful launch, then steady-state `Decode batch` lines, then a
 * rank crash at the end), and reads it twice with the same fixed-size chunks: once only
 * splitting lines (the baseline) and once feeding every line to the classifier. Prints MB/s
 * for both, their ratio, and memory. Targets (1 GiB): classifier >= 100 MB/s, RSS < 200 MB.
 *
 *   npx tsx bench/classify.ts [--size 1GiB|256MiB|64MB|<bytes>] [--chunk 64KiB] [--style sglang|vllm] [--check] [--tsx]
 *
 * `--style vllm` writes a vLLM V1 log instead: every line behind worker and level prefixes
 * (`(APIServer pid=1) INFO 05-10 12:00:00 [loggers.py:123] ...`, access lines), the slow path
 * of the classifier's normalization, ending in an EngineCore OOM.
 *
 * By default the measurement runs in a child under plain `node` (this file bundled with esbuild
 * first), because tsx's on-the-fly compiler alone holds ~90 MB of RSS that is not the
 * classifier's; the parent writes the log first, so the child's maxRSS is the reading's (writing
 * a 1 GiB vLLM-style log alone peaked at ~205 MB). `--tsx` measures in the tsx process instead. Memory is reported three ways: RSS
 * after loading (runtime + code), the classifier's own peak (RSS and heap growth over the read,
 * after a GC), and the process's absolute peak RSS (the target). `--check` exits 1 when a
 * target is missed. The temp files are always deleted.
 */
import { spawnSync } from "node:child_process"
import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { resourceUsage } from "node:process"
import { StringDecoder } from "node:string_decoder"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Classifier from "@mlops/serve/Classifier"
import * as SglangEngine from "@mlops/sglang/SglangEngine"
import * as L from "../packages/sglang/src/internal/lifecycleLines.js"

export interface Options {
  readonly size: number
  readonly chunk: number
  readonly check: boolean
  /** Measure in this process (tsx) instead of a plain-node child. */
  readonly tsx: boolean
  readonly style: "sglang" | "vllm"
}

export interface Result {
  readonly bytes: number
  readonly lines: number
  readonly baselineMBps: number
  readonly classifierMBps: number
  readonly ratio: number
  /** RSS once the modules are loaded, before anything else (runtime + code) */
  readonly loadedRssMB: number
  /** RSS right before the classifier pass (after a GC when `--expose-gc` is on) */
  readonly startRssMB: number
  /** Peak RSS sampled during either pass */
  readonly peakRssMB: number
  /** Growth of sampled RSS over the classifier pass: the classifier's own footprint */
  readonly classifierRssDeltaMB: number
  /** Growth of the JS heap over the classifier pass (retained state plus uncollected garbage) */
  readonly classifierHeapDeltaMB: number
  /** The process's peak RSS over its whole life (what the < 200 MB target is about) */
  readonly maxRssMB: number
  readonly failureTag: string | undefined
  readonly targetsMet: boolean
}

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3
}

export const parseSize = (text: string): number => {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim())
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined
  if (!m || unit === undefined) throw new Error(`bad size "${text}" (use e.g. 1GiB, 256MiB, 64MB)`)
  return Math.round(Number(m[1]) * unit)
}

const parseArgs = (argv: ReadonlyArray<string>): Options => {
  const value = (flag: string) => {
    const i = argv.indexOf(flag)
    return i === -1 ? undefined : argv[i + 1]
  }
  return {
    size: parseSize(value("--size") ?? "1GiB"),
    chunk: parseSize(value("--chunk") ?? "64KiB"),
    check: argv.includes("--check"),
    tsx: argv.includes("--tsx"),
    style: value("--style") === "vllm" ? "vllm" : "sglang"
  }
}

const two = (n: number) => String(n).padStart(2, "0")
const vllmTime = (t: number) => {
  const d = new Date(t)
  return `${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`
}

/** A vLLM V1 start, ~`size` bytes of throughput and access lines, then an EngineCore OOM. */
const generateVllm = (path: string, size: number): number => {
  const fd = openSync(path, "w")
  const start = Date.UTC(2026, 4, 10, 12, 0, 0)
  let written = 0
  const put = (text: string) => {
    written += writeSync(fd, text)
  }
  try {
    put(
      [
        `(APIServer pid=1) INFO ${vllmTime(start)} [api_server.py:1351] vLLM API server version 0.13.0`,
        `(EngineCore_DP0 pid=2) INFO ${vllmTime(start)} [gpu_worker.py:376] Available KV cache memory: 61.20 GiB`,
        `(APIServer pid=1) INFO ${vllmTime(start)} [api_server.py:1500] Starting vLLM API server 0 on http://0.0.0.0:8000`,
        "(APIServer pid=1) INFO:     Application startup complete."
      ].join("\n") + "\n"
    )
    let second = 0
    while (written < size) {
      const t = vllmTime(start + 60_000 + second * 1000)
      const block: Array<string> = []
      for (let i = 0; i < 1000; i++) {
        block.push(
          i % 3 === 0
            ? `(APIServer pid=1) INFO ${t} [loggers.py:123] Engine 000: Avg prompt throughput: ${(i % 97) / 10} tokens/s, Avg generation throughput: ${40 + (i % 13)} tokens/s, Running: ${1 + (i % 8)} reqs, Waiting: 0 reqs, GPU KV cache usage: ${(i % 100) / 10}%, Prefix cache hit rate: 0.0%`
            : i % 3 === 1
              ? `(APIServer pid=1) INFO:     127.0.0.1:${50000 + (i % 9000)} - "POST /v1/chat/completions HTTP/1.1" 200 OK`
              : `(EngineCore_DP0 pid=2) DEBUG ${t} [core.py:${400 + (i % 50)}] EngineCore loop active, step ${second * 1000 + i}`
        )
      }
      put(block.join("\n") + "\n")
      second++
    }
    const t = vllmTime(start + 60_000 + second * 1000)
    const e = `(EngineCore_DP0 pid=2) ERROR ${t} [core.py:710]`
    put(
      [
        `${e} EngineCore encountered a fatal error.`,
        `${e} Traceback (most recent call last):`,
        `${e}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 701, in run_engine_core`,
        `${e}     engine_core.run_busy_loop()`,
        `${e} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 412.00 MiB is free.`,
        `(APIServer pid=1) ERROR ${t} [async_llm.py:480] AsyncLLM output_handler failed.`
      ].join("\n") + "\n"
    )
  } finally {
    closeSync(fd)
  }
  return written
}

/** Writes the log: launch, ~`size` bytes of decode lines, a TP1 OOM record and the launcher's note. */
const generate = (path: string, size: number): number => {
  const fd = openSync(path, "w")
  const start = Date.UTC(2026, 4, 10, 12, 0, 0)
  let written = 0
  const put = (text: string) => {
    written += writeSync(fd, text)
  }
  try {
    put(L.toText(L.successfulLaunch({ tpSize: 2, hybrid: true, mtp: true })))
    let minute = 0
    while (written < size) {
      // one ~200 KB block per simulated second, values varying so no two lines are equal
      const t = start + 60_000 + minute * 1000
      const block: Array<string> = []
      for (let i = 0; i < 1000; i++) {
        block.push(
          L.line(
            t,
            i % 2 === 0 ? "TP0" : "TP1",
            L.decodeBatch({
              running: 1 + (i % 48),
              tokens: 1000 + i,
              usage: (i % 100) / 100,
              throughput: 50 + (i % 997) / 10,
              accept: 2 + (i % 20) / 10
            })
          )
        )
      }
      put(block.join("\n") + "\n")
      minute++
    }
    const crash = start + 60_000 + minute * 1000
    put(
      L.toText([
        ...L.oomTraceback({
          epochMs: crash,
          process: "TP1",
          gpu: 1,
          triedGiB: 2,
          totalGiB: 79.19,
          freeMiB: 412
        }),
        L.line(crash + 50, "", L.sigquitFromChild())
      ])
    )
  } finally {
    closeSync(fd)
  }
  return written
}

/** Reads `path` in fixed chunks and calls `onLine` for every line; samples RSS once per chunk. */
const readLines = (
  path: string,
  chunk: number,
  onLine: (line: string) => void
): { lines: number; peakRss: number; peakHeap: number } => {
  const fd = openSync(path, "r")
  const buffer = Buffer.allocUnsafe(chunk)
  const decoder = new StringDecoder("utf8")
  let carry = ""
  let lines = 0
  let peakRss = process.memoryUsage.rss()
  let peakHeap = process.memoryUsage().heapUsed
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, chunk, null)
      if (n === 0) break
      const text = carry + decoder.write(n === chunk ? buffer : buffer.subarray(0, n))
      let from = 0
      for (;;) {
        const nl = text.indexOf("\n", from)
        if (nl === -1) break
        onLine(text.slice(from, nl))
        lines++
        from = nl + 1
      }
      carry = text.slice(from)
      const usage = process.memoryUsage()
      if (usage.rss > peakRss) peakRss = usage.rss
      if (usage.heapUsed > peakHeap) peakHeap = usage.heapUsed
    }
    const rest = carry + decoder.end()
    if (rest.length > 0) {
      onLine(rest)
      lines++
    }
  } finally {
    closeSync(fd)
  }
  return { lines, peakRss, peakHeap }
}

// Collect garbage when node runs with --expose-gc, so "before" figures hold only live memory.
const collect = () => (globalThis as { gc?: () => void }).gc?.()

/** The log to read, written in a directory of its own (removed by the caller). */
export interface Log {
  readonly dir: string
  readonly path: string
  readonly bytes: number
}

/** Writes the log of `options.style` and size. */
export const writeLog = (options: Options): Log => {
  const dir = mkdtempSync(join(tmpdir(), "mlops-bench-classify-"))
  const path = join(dir, "sglang.log")
  try {
    const bytes = options.style === "vllm" ? generateVllm(path, options.size) : generate(path, options.size)
    return { dir, path, bytes }
  } catch (error) {
    // a full disk: nothing left behind
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
}

/**
 * Reads `log` twice (baseline, classifier). Given no log, writes one first in this process (its
 * writing then counts in maxRSS: the plain-node child is given one its parent wrote).
 */
export const run = (options: Options, given?: Log): Result => {
  const loadedRssMB = process.memoryUsage.rss() / 1e6
  const log = given ?? writeLog(options)
  const { path, bytes } = log
  try {
    const mb = bytes / 1e6

    let checksum = 0
    collect()
    let t0 = performance.now()
    const base = readLines(path, options.chunk, (line) => {
      checksum += line.length
    })
    const baselineS = (performance.now() - t0) / 1000

    collect()
    const before = process.memoryUsage()
    // the log is SGLang's: its lifecycle lines are read as a launch reads them
    const classifier = Classifier.make([SglangEngine.engine.logs])
    let events = 0
    t0 = performance.now()
    const classified = readLines(path, options.chunk, (line) => {
      events += classifier.feed(line).length
    })
    const failure = classifier.finish({ exitCode: 137 })
    const classifierS = (performance.now() - t0) / 1000

    const baselineMBps = mb / baselineS
    const classifierMBps = mb / classifierS
    const peakRssMB = Math.max(base.peakRss, classified.peakRss) / 1e6
    const maxRssMB = (resourceUsage().maxRSS * 1024) / 1e6
    const targetsMet = classifierMBps >= 100 && maxRssMB < 200 && failure?._tag === "OOM"
    if (checksum < 0 || events < 0) throw new Error("unreachable")
    return {
      bytes,
      lines: classified.lines,
      baselineMBps,
      classifierMBps,
      ratio: classifierMBps / baselineMBps,
      loadedRssMB,
      startRssMB: before.rss / 1e6,
      peakRssMB,
      classifierRssDeltaMB: Math.max(0, classified.peakRss - before.rss) / 1e6,
      classifierHeapDeltaMB: Math.max(0, classified.peakHeap - before.heapUsed) / 1e6,
      maxRssMB,
      failureTag: failure?._tag,
      targetsMet
    }
  } finally {
    if (given === undefined) rmSync(log.dir, { recursive: true, force: true })
  }
}

const report = (options: Options, r: Result, runtime: string) => {
  const f = (n: number) => n.toFixed(1)
  console.log(
    `classify (${options.style} log): ${f(r.bytes / 1e6)} MB, ${r.lines} lines, chunk ${options.chunk} B, ${runtime}`
  )
  console.log(`  baseline (split lines only): ${f(r.baselineMBps)} MB/s`)
  console.log(
    `  classifier:                  ${f(r.classifierMBps)} MB/s  (ratio ${r.ratio.toFixed(2)} of baseline)`
  )
  console.log(`  RSS after loading (runtime + code):  ${f(r.loadedRssMB)} MB`)
  console.log(
    `  classifier's own growth over the read: RSS +${f(r.classifierRssDeltaMB)} MB (from ${f(r.startRssMB)} MB), heap +${f(r.classifierHeapDeltaMB)} MB`
  )
  console.log(`  peak RSS sampled: ${f(r.peakRssMB)} MB, maxRSS (process): ${f(r.maxRssMB)} MB`)
  console.log(`  verdict at end of log: ${r.failureTag ?? "none"} (expected OOM)`)
  console.log(`  targets (>= 100 MB/s, maxRSS < 200 MB, OOM found): ${r.targetsMet ? "met" : "MISSED"}`)
  if (options.check && !r.targetsMet) process.exitCode = 1
}

/**
 * Bundles this file (effect and the classifier included) so plain node can run it without tsx;
 * the log is written here first, so the child's maxRSS is its reading's alone.
 */
const runUnderPlainNode = async (argv: ReadonlyArray<string>): Promise<number> => {
  const { build } = await import("esbuild")
  const log = writeLog(parseArgs(argv))
  const dir = mkdtempSync(join(tmpdir(), "mlops-bench-classify-bundle-"))
  try {
    const bundle = join(dir, "classify.mjs")
    await build({
      entryPoints: [fileURLToPath(import.meta.url)],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: bundle,
      external: ["esbuild"],
      // the engines' sims reach core's SSH client, whose native addons are optional (ssh2 falls
      // back to JavaScript without them); the classifier never connects
      loader: { ".node": "empty" },
      logLevel: "warning"
    })
    const child = spawnSync(
      process.execPath,
      ["--expose-gc", bundle, ...argv, "--in-child", "--log", log.path, "--log-bytes", String(log.bytes)],
      { stdio: "inherit" }
    )
    return child.status ?? 1
  } finally {
    rmSync(dir, { recursive: true, force: true })
    rmSync(log.dir, { recursive: true, force: true })
  }
}

/** The log the parent wrote (`--log PATH --log-bytes N`), in the child. */
const givenLog = (argv: ReadonlyArray<string>): Log | undefined => {
  const at = argv.indexOf("--log")
  const bytesAt = argv.indexOf("--log-bytes")
  if (at === -1 || bytesAt === -1) return undefined
  const path = argv[at + 1]!
  return { dir: dirname(path), path, bytes: Number(argv[bytesAt + 1]) }
}

const main = async () => {
  const argv = process.argv.slice(2)
  const options = parseArgs(argv)
  if (argv.includes("--in-child"))
    return report(options, run(options, givenLog(argv)), "plain node (bundled)")
  if (options.tsx) return report(options, run(options), "in the tsx process")
  // both log styles unless one is asked for: SGLang's fast path and vLLM's prefixed lines
  const styles = argv.includes("--style") ? [argv] : [argv, [...argv, "--style", "vllm"]]
  let status = 0
  for (const args of styles) status = Math.max(status, await runUnderPlainNode(args))
  process.exitCode = status
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main()
