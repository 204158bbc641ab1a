// The packages as another project gets them: `npm run pack`'s tarballs installed into a fresh
// project outside the monorepo (dependencies from the npm registry), a TypeScript program
// there typechecked with plain tsc (library checks on) and run with plain node; and the CLI
// tarball installed globally into a prefix, its `mlops` run from that prefix's bin.
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "..", "..", "..", "..")
const fixture = path.join(here, "..", "fixtures", "fresh-project")
const version = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).version as string
/**
 * A child process run to its end without blocking the test worker (npm install takes minutes
 * on a loaded machine; a synchronous call would starve vitest's own messages).
 */
const run = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv; readonly timeout?: number } = {}
) =>
  new Promise<{ readonly status: number | null; readonly stdout: string; readonly stderr: string }>(
    (resolve) => {
      execFile(
        file,
        [...args],
        { encoding: "utf8", timeout: 400_000, maxBuffer: 64 << 20, ...options },
        (error, stdout, stderr) =>
          resolve({
            status: error === null ? 0 : typeof error.code === "number" ? error.code : null,
            stdout,
            stderr
          })
      )
    }
  )

const succeed = async (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string } = {}
) => {
  const ran = await run(file, args, options)
  assert.strictEqual(ran.status, 0, `${file} ${args.join(" ")}: ${ran.stderr}`)
  return ran
}

const npm = (cwd: string, ...args: Array<string>) =>
  succeed("npm", [...args, "--no-audit", "--no-fund", "--prefer-offline"], { cwd })

describe("published packages", () => {
  it("a fresh project installs the tarballs, typechecks with tsc and runs with node; mlops installs globally", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-fresh-"))
    try {
      const packed = path.join(dir, "tarballs")
      await succeed("node", [path.join(root, "scripts", "pack.mjs"), packed])
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
      await npm(project, "install")
      // nothing of the monorepo is reachable from there
      assert.isFalse(fs.existsSync(path.join(project, "node_modules", "@mlops", "core", "src")))
      await succeed(path.join(project, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: project })
      const program = await run("node", ["dist/main.js"], {
        cwd: project,
        env: { ...process.env, MLOPS_HOME: path.join(dir, "home") },
        timeout: 120_000
      })
      assert.strictEqual(program.status, 0, program.stderr)
      assert.include(
        program.stdout,
        'handled MissingSchedulerStrategy fix {"--mamba-scheduler-strategy":"extra_buffer"}'
      )

      const prefix = path.join(dir, "global")
      await npm(dir, "install", "--global", "--prefix", prefix, tarball("cli"))
      const mlops = path.join(prefix, "bin", "mlops")
      const help = await run(mlops, ["--help"], { env: { ...process.env, NO_COLOR: "1" } })
      assert.strictEqual(help.status, 0, help.stderr)
      assert.include(help.stdout, "mlops <command>")
      const hosts = await run(mlops, ["hosts"], {
        env: { ...process.env, MLOPS_HOME: path.join(dir, "home"), MLOPS_SSH_CONFIG: "/dev/null" }
      })
      assert.strictEqual(hosts.status, 0, hosts.stderr)
      assert.include(hosts.stdout, "sim")
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 900_000)
})
