/** Real Slurm 22.05.8 client output captured from the test cluster (fixtures/slurm-22.05/capture.ts). */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export interface Captured {
  readonly argv: ReadonlyArray<string>
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

const captures: Record<string, Captured> = JSON.parse(
  fs.readFileSync(
    path.join(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/slurm-22.05/captured.json"),
    "utf8"
  )
).captures

/** The capture named `name` (as capture.ts names it). */
export const captured = (name: string): Captured => {
  const entry = captures[name]
  if (entry === undefined) throw new Error(`no capture "${name}"`)
  return entry
}
