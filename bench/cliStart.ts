/**
 * How long `mlops` takes to start, against `node -e 0` measured in the same run: `mlops --help`,
 * `mlops hosts` and `mlops check --model-config <file> -- <the story's command>` (exit 3), each
 * the built launcher and bundle (`packages/cli/dist/mlops.cjs`, what the installed command runs) with plain
 * node, interleaved, median of BENCH_RUNS (15). Goal: within 3x of `node -e 0`.
 *
 *   npx tsx bench/cliStart.ts
 */
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 15)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const bundle = path.join(root, "packages", "cli", "dist", "mlops.cjs")
const config = path.join(root, "packages", "cli", "test", "fixtures", "qwen3.6-27b.config.json")

execFileSync("node", [path.join(root, "packages", "cli", "scripts", "bundle.mjs")])
const home = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-cli-start-"))
const sshConfig = path.join(home, "ssh_config")
fs.writeFileSync(sshConfig, "Host gpu1\n  HostName 127.0.0.1\n")
const env = { ...process.env, NO_COLOR: "1", MLOPS_HOME: home, MLOPS_SSH_CONFIG: sshConfig }

const story = [
  "--model-path",
  "/root/models/Qwen3.6-27B",
  "--speculative-algorithm",
  "NEXTN",
  "--speculative-num-draft-tokens",
  "1",
  "--tp",
  "2"
]
const cases = [
  { label: "node -e 0", args: ["-e", "0"], exit: 0 },
  { label: "mlops --help", args: [bundle, "--help"], exit: 0 },
  { label: "mlops hosts", args: [bundle, "hosts"], exit: 0 },
  {
    label: "mlops check --model-config",
    args: [bundle, "check", "--model-config", config, "--gpus", "2", "--", ...story],
    exit: 3
  }
]

const times = cases.map(() => [] as Array<number>)
for (let run = 0; run < RUNS + 1; run++) {
  cases.forEach((c, i) => {
    const started = performance.now()
    const out = spawnSync("node", c.args, { env, encoding: "utf8", timeout: 60_000 })
    const elapsed = performance.now() - started
    if (out.status !== c.exit)
      throw new Error(`${c.label}: exit ${out.status}, expected ${c.exit}\n${out.stderr}`)
    if (run > 0) times[i]!.push(elapsed) // the first round warms the file cache
  })
}
const baseline = median(times[0]!)
console.log(`median of ${RUNS}, interleaved; goal: within 3x of node -e 0`)
cases.forEach((c, i) => {
  const m = median(times[i]!)
  console.log(`${c.label.padEnd(28)} ${m.toFixed(0).padStart(5)} ms  ${(m / baseline).toFixed(1)}x`)
})
fs.rmSync(home, { recursive: true, force: true })
