/**
 * `npm run bench`: runs every bench file in this directory, one after another (they measure
 * latency, so they must not compete for the CPU), each with a time limit.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const LIMIT_MS = 5 * 60_000

const only = process.argv.slice(2)
const files = fs
  .readdirSync(here)
  .filter((f) => f.endsWith(".ts") && f !== "run.ts" && !f.endsWith(".d.ts"))
  .filter((f) => only.length === 0 || only.some((name) => f.startsWith(name)))
  .sort()

let failed = 0
for (const file of files) {
  console.log(`\n== bench/${file}`)
  const tsx = path.join(here, "..", "node_modules", ".bin", "tsx")
  const result = spawnSync(tsx, [path.join(here, file)], { stdio: "inherit", timeout: LIMIT_MS })
  if (result.status !== 0) {
    failed++
    console.log(`bench/${file} failed (${result.error?.message ?? `exit ${result.status ?? result.signal}`})`)
  }
}
process.exit(failed === 0 ? 0 : 1)
