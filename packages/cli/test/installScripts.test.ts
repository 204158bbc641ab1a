// A clean `npm ci`: every dependency with an install script is allowed or denied by name in the
// root package.json's `allowScripts` (npm's own review list is empty), so npm prints no
// "install scripts not yet covered" warning. `.ci/run` also fails on any `npm warn` line.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

describe("npm install scripts", () => {
  it("npm's review list is empty: each install script is allowed or denied by name", () => {
    const ran = spawnSync("npm", ["install-scripts", "ls"], { cwd: root, encoding: "utf8", timeout: 60_000 })
    assert.strictEqual(ran.status, 0, ran.stderr)
    assert.include(ran.stdout, "No packages with unreviewed install scripts.", ran.stdout)
  })

  it("the CLI's bundler (esbuild) and ssh2's crypto binding may run theirs; no blanket approval", () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
      allowScripts?: Record<string, boolean>
    }
    const allowed = Object.entries(manifest.allowScripts ?? {}).flatMap(([name, ok]) => (ok ? [name] : []))
    assert.deepStrictEqual(allowed.sort(), ["cpu-features", "esbuild", "ssh2"])
    const npmrc = path.join(root, ".npmrc")
    const settings = fs.existsSync(npmrc) ? fs.readFileSync(npmrc, "utf8") : ""
    assert.notMatch(settings, /dangerously-allow-all-scripts|ignore-scripts/)
  })
})
