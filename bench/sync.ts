/**
 * `Sync.push` of a generated 10 000-file tree (100 directories of 100 files, 0.5-2 KiB each,
 * plus a .gitignore and files it ignores) to the test sshd on 127.0.0.1 (real OpenSSH, the
 * machine's /bin/sh and GNU tar), on one open connection (the default transport):
 *   true         one remote command (`true`): the round-trip baseline
 *   scan         the local walk alone (`Sync.scan`: readdir + lstat, no file opened)
 *   tar pipe     the floor for a first push: GNU tar's archive of the tree, made beforehand,
 *                extracted by one `tar -x` command (interleaved with `first`: the host's disk
 *                dominates both and varies from run to run)
 *   first        the first push to an empty target (every file in one archive)
 *   unchanged    a re-push of the unchanged tree: must be exactly 1 round trip
 *   one changed  a re-push after one file's content changed (2 round trips)
 * Medians of BENCH_RUNS (default 15; `first` and `tar pipe` BENCH_FIRST_RUNS (4), each to a fresh target), ratios against
 * `true` measured in the same run. Target: unchanged = 1 round trip, and unchanged / true
 * close to scan / true + 1 (the only remote cost is the one command).
 *
 *   npx tsx bench/sync.ts
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Effect } from "effect"
import { makeConnection } from "../packages/core/src/ConnectionPool.js"
import { make as cmd } from "../packages/core/src/RemoteCommand.js"
import * as Sync from "../packages/core/src/Sync.js"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 15)
const FIRST_RUNS = Number(process.env.BENCH_FIRST_RUNS ?? 4)
const DIRS = 100
const PER_DIR = 100

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = performance.now()
    const value = yield* effect
    return { ms: performance.now() - started, value }
  })

/** A deterministic tree: DIRS × PER_DIR files of 0.5-2 KiB, plus ignored ones. */
const generate = (root: string) => {
  let seed = 42
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31
    return seed
  }
  fs.writeFileSync(path.join(root, ".gitignore"), "__pycache__/\n*.pyc\n")
  let bytes = 0
  for (let d = 0; d < DIRS; d++) {
    const dir = path.join(root, `pkg${String(d).padStart(3, "0")}`)
    fs.mkdirSync(path.join(dir, "__pycache__"), { recursive: true })
    fs.writeFileSync(path.join(dir, "__pycache__", "ignored.pyc"), "x".repeat(4096))
    for (let f = 0; f < PER_DIR - (d === 0 ? 1 : 0); f++) {
      const size = 512 + (next() % 1536)
      const line = `value_${d}_${f} = ${next()}\n`
      const data = line.repeat(Math.ceil(size / line.length)).slice(0, size)
      fs.writeFileSync(path.join(dir, `mod${String(f).padStart(3, "0")}.py`), data)
      bytes += size
    }
  }
  return bytes
}

const fmt = (ms: number) => `${ms.toFixed(1).padStart(8)} ms`

const bench = Effect.gen(function* () {
  const work = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-bench-sync-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const local = path.join(work, "src")
  fs.mkdirSync(local)
  const bytes = generate(local)
  const sshd = yield* Sshd.start()
  const conn = yield* makeConnection(sshd.hostConfig)
  yield* conn.exec(cmd(["true"]))

  const trueMs: Array<number> = []
  for (let i = 0; i < RUNS; i++) trueMs.push((yield* timed(conn.exec(cmd(["true"])))).ms)

  const scanMs: Array<number> = []
  let files = 0
  for (let i = 0; i < RUNS; i++) {
    const { ms, value } = yield* timed(Sync.scan(local))
    scanMs.push(ms)
    files = value.files
  }

  const archive = execFileSync("tar", ["-cf", "-", "--exclude=__pycache__", "-C", local, "."], {
    maxBuffer: 2 ** 30
  })
  const pipeMs: Array<number> = []
  const firstMs: Array<number> = []
  const firstTrips: Array<number> = []
  let remote = ""
  const pipe = (i: number) =>
    Effect.gen(function* () {
      const raw = path.join(work, `raw${i}`)
      fs.mkdirSync(raw)
      const { ms } = yield* timed(
        conn.exec(cmd(["tar", "-x", "-f", "-"], { cwd: raw }), { stdin: archive, timeout: "5 minutes" })
      )
      pipeMs.push(ms)
    })
  const first = (i: number) =>
    Effect.gen(function* () {
      remote = path.join(work, `dst${i}`, "code")
      const { ms, value } = yield* timed(Sync.push(conn, { local, remote }))
      firstMs.push(ms)
      firstTrips.push(value.roundTrips)
      if (value.sent !== files)
        return yield* Effect.fail(new Error(`first push sent ${value.sent} of ${files}`))
    })
  // alternating which goes first: the first write burst after a pause is often the slow one
  for (let i = 0; i < FIRST_RUNS; i++)
    yield* i % 2 === 0 ? Effect.zipRight(pipe(i), first(i)) : Effect.zipRight(first(i), pipe(i))

  const unchangedMs: Array<number> = []
  const unchangedTrips = new Set<number>()
  for (let i = 0; i < RUNS; i++) {
    const { ms, value } = yield* timed(Sync.push(conn, { local, remote }))
    unchangedMs.push(ms)
    unchangedTrips.add(value.roundTrips)
    if (!value.unchanged || value.sent !== 0) throw new Error("the unchanged re-push sent something")
  }

  const changedMs: Array<number> = []
  const changedTrips = new Set<number>()
  for (let i = 0; i < RUNS; i++) {
    const file = path.join(local, `pkg${String(i % DIRS).padStart(3, "0")}`, "mod001.py")
    fs.appendFileSync(file, `# edit ${i}\n`)
    const { ms, value } = yield* timed(Sync.push(conn, { local, remote }))
    changedMs.push(ms)
    changedTrips.add(value.roundTrips)
    if (value.sent !== 1) throw new Error(`one changed file: sent ${value.sent}`)
  }

  const base = median(trueMs)
  const row = (name: string, ms: number, trips: string) =>
    `  ${name.padEnd(12)} ${fmt(ms)}   ${(ms / base).toFixed(1).padStart(7)}x true   round trips ${trips}`
  console.log(
    `sync: ${files} files, ${(bytes / 2 ** 20).toFixed(1)} MiB, to the test sshd on 127.0.0.1 (medians; first of ${FIRST_RUNS}, others of ${RUNS})`
  )
  console.log(row("true", base, "1"))
  console.log(row("scan", median(scanMs), "0 (local only)"))
  console.log(row("tar pipe", median(pipeMs), "1"))
  console.log(row("first", median(firstMs), [...new Set(firstTrips)].join(",")))
  console.log(row("unchanged", median(unchangedMs), [...unchangedTrips].join(",")))
  console.log(row("one changed", median(changedMs), [...changedTrips].join(",")))
  const one = unchangedTrips.size === 1 && unchangedTrips.has(1)
  const samples = (xs: ReadonlyArray<number>) => xs.map((x) => x.toFixed(0)).join(", ")
  console.log(
    `  first push / tar pipe = ${(median(firstMs) / median(pipeMs)).toFixed(2)}x (medians), ${(Math.min(...firstMs) / Math.min(...pipeMs)).toFixed(2)}x (fastest); samples ms: first ${samples(firstMs)}; tar pipe ${samples(pipeMs)}`
  )
  console.log(
    `  unchanged re-push / one round trip = ${(median(unchangedMs) / base).toFixed(1)}x (of which the local walk ${(median(scanMs) / base).toFixed(1)}x); unchanged round trips = ${[...unchangedTrips].join(",")}: ${one ? "target met" : "target NOT met"}`
  )
  if (!one) return yield* Effect.fail(new Error("an unchanged re-push took more than one round trip"))
})

Effect.runPromise(Effect.scoped(bench).pipe(Effect.timeout("4 minutes"))).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
