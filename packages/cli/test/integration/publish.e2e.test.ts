// The packages as another project gets them: `npm run pack`'s tarballs installed into a fresh
// project outside the monorepo (dependencies from the npm registry), a TypeScript program
// there typechecked with plain tsc (library checks on) and run with plain node; and the CLI
// tarball installed globally into a prefix, its `mlops` run from that prefix's bin.
import { execFileSync, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "..", "..", "..", "..")
const fixture = path.join(here, "..", "fixtures", "fresh-project")
const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version as string
const npm = (cwd: string, ...args: Array<string>) =>
  execFileSync("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline"], {
    cwd,
    encoding: "utf8",
    timeout: 400_000
  })

describe("published packages", () => {
  it("a fresh project installs the tarballs, typechecks with tsc and runs with node; mlops installs globally", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-fresh-"))
    try {
      const packed = path.join(dir, "tarballs")
      execFileSync("node", [path.join(root, "scripts", "pack.mjs"), packed], {
        stdio: "pipe",
        timeout: 400_000
      })
      const tarball = (name: string) => path.join(packed, `mlops-${name}-${version}.tgz`)
      for (const name of ["core", "serve", "sglang", "vllm", "cli"])
        assert.isTrue(fs.existsSync(tarball(name)), name)

      const project = path.join(dir, "project")
      fs.mkdirSync(project)
      fs.copyFileSync(path.join(fixture, "main.ts"), path.join(project, "main.ts"))
      fs.copyFileSync(path.join(fixture, "tsconfig.json"), path.join(project, "tsconfig.json"))
      fs.writeFileSync(
        path.join(project, "package.json"),
        JSON.stringify({
          name: "fresh",
          private: true,
          type: "module",
          dependencies: {
            "@mlops/core": `file:${tarball("core")}`,
            "@mlops/serve": `file:${tarball("serve")}`,
            "@mlops/sglang": `file:${tarball("sglang")}`,
            effect: "3.22.4"
          },
          devDependencies: { typescript: "5.9.3", "@types/node": "20.19.43" }
        })
      )
      npm(project, "install")
      // nothing of the monorepo is reachable from there
      assert.isFalse(fs.existsSync(path.join(project, "node_modules", "@mlops", "core", "src")))
      execFileSync(path.join(project, "node_modules", ".bin", "tsc"), ["-p", "."], {
        cwd: project,
        encoding: "utf8"
      })
      const run = spawnSync("node", ["dist/main.js"], {
        cwd: project,
        encoding: "utf8",
        env: { ...process.env, MLOPS_HOME: path.join(dir, "home") },
        timeout: 120_000
      })
      assert.strictEqual(run.status, 0, run.stderr)
      assert.include(
        run.stdout,
        'handled MissingSchedulerStrategy fix {"--mamba-scheduler-strategy":"extra_buffer"}'
      )

      const prefix = path.join(dir, "global")
      npm(dir, "install", "--global", "--prefix", prefix, tarball("cli"))
      const mlops = path.join(prefix, "bin", "mlops")
      const help = spawnSync(mlops, ["--help"], { encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } })
      assert.strictEqual(help.status, 0, help.stderr)
      assert.include(help.stdout, "mlops <command>")
      const hosts = spawnSync(mlops, ["hosts"], {
        encoding: "utf8",
        env: { ...process.env, MLOPS_HOME: path.join(dir, "home"), MLOPS_SSH_CONFIG: "/dev/null" }
      })
      assert.strictEqual(hosts.status, 0, hosts.stderr)
      assert.include(hosts.stdout, "sim")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 900_000)
})
