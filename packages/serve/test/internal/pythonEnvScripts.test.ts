/**
 * The discovery script run by a real `/bin/sh` with a real Python, in a throwaway home: each
 * place it looks in, in order, and the two ways a version is read (package metadata, or a
 * source checkout's `version.py` without importing anything).
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DISCOVER, PROBE } from "../../src/internal/pythonEnvScripts.js"

const realPython = fs.existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3"

/**
 * A fake environment: `<prefix>/bin/python` running the real Python with `site` on its path
 * after PYTHONPATH, where a venv's site-packages is.
 */
const env = (prefix: string, site?: string) => {
  fs.mkdirSync(path.join(prefix, "bin"), { recursive: true })
  const extra = site === undefined ? "" : `PYTHONPATH=\${PYTHONPATH:+$PYTHONPATH:}${site} `
  fs.writeFileSync(path.join(prefix, "bin", "python"), `#!/bin/sh\n${extra}exec ${realPython} "$@"\n`, {
    mode: 0o755
  })
  return path.join(prefix, "bin", "python")
}

/** A site directory with an installed `sglang` (its dist-info says `version`). */
const installed = (site: string, version: string) => {
  fs.mkdirSync(path.join(site, "sglang"), { recursive: true })
  fs.writeFileSync(path.join(site, "sglang", "__init__.py"), "raise SystemExit('imported!')\n")
  const info = path.join(site, `sglang-${version}.dist-info`)
  fs.mkdirSync(info, { recursive: true })
  fs.writeFileSync(path.join(info, "METADATA"), `Metadata-Version: 2.1\nName: sglang\nVersion: ${version}\n`)
  return site
}

/** A source checkout (`<repo>/python/sglang`, no dist-info) at `version`. */
const checkout = (repo: string, version: string) => {
  const pkg = path.join(repo, "python", "sglang")
  fs.mkdirSync(pkg, { recursive: true })
  // importing it would fail: discovery must read version.py, never import the package
  fs.writeFileSync(path.join(pkg, "__init__.py"), "raise SystemExit('imported!')\n")
  fs.writeFileSync(path.join(pkg, "version.py"), `__version__ = "${version}"\n`)
  return path.join(repo, "python")
}

interface Line {
  readonly kind: string
  readonly how: string
  readonly path: string
  readonly probe?: {
    readonly found: boolean
    readonly packageVersion: string | null
    readonly versionSource: string | null
  }
}

const discover = (
  home: string,
  o: {
    readonly mode?: "discover" | "configured"
    readonly configured?: string
    readonly env?: Record<string, string>
    readonly path?: string
  } = {}
) => {
  const ran = spawnSync(
    "/bin/sh",
    ["-c", DISCOVER, "mlops-python", PROBE, "sglang", o.mode ?? "discover", o.configured ?? "", "sglang"],
    {
      encoding: "utf8",
      env: { HOME: home, PATH: o.path ?? "/usr/bin:/bin", ...o.env }
    }
  )
  const lines: Array<Line> = ran.stdout
    .trim()
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const [kind = "", how = "", p = "", rest] = l.split("\t")
      return { kind, how, path: p, ...(kind === "env" ? { probe: JSON.parse(rest ?? "{}") } : {}) }
    })
  return {
    status: ran.status,
    lines,
    chosen: lines.at(-1)?.probe?.versionSource != null ? lines.at(-1) : undefined
  }
}

const tempHome = () => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-discover-"))

describe("Python environment discovery (real sh, real Python)", () => {
  it("nothing anywhere: every usual place is looked at, in order, and none is chosen", () => {
    const home = tempHome()
    const { status, lines, chosen } = discover(home)
    assert.strictEqual(status, 3)
    assert.isUndefined(chosen)
    assert.deepStrictEqual(
      lines.slice(0, 4).map((l) => [l.kind, l.path]),
      [
        ["none", `${home}/ml-env/bin/python`],
        ["none", `${home}/sglang-env/bin/python`],
        ["none", `${home}/.venv/bin/python`],
        ["none", `${home}/venv/bin/python`]
      ]
    )
    // python3 on PATH answered the probe, without SGLang
    assert.isTrue(lines.some((l) => l.how === "path" && l.probe?.found === false))
  })

  it("~/.venv with SGLang installed: chosen, version from its metadata, after ~/ml-env and ~/sglang-env were tried", () => {
    const home = tempHome()
    env(path.join(home, ".venv"), installed(path.join(home, "site"), "0.5.11"))
    const { status, lines, chosen } = discover(home)
    assert.strictEqual(status, 0)
    assert.deepStrictEqual(
      lines.map((l) => [l.kind, l.how]),
      [
        ["none", "home"],
        ["none", "home"],
        ["env", "home"]
      ]
    )
    assert.strictEqual(chosen?.path, `${home}/.venv/bin/python`)
    assert.strictEqual(chosen?.probe?.packageVersion, "0.5.11")
    assert.strictEqual(chosen?.probe?.versionSource, "metadata")
  })

  it("a source checkout on PYTHONPATH (no dist-info): version from version.py, the package never imported", () => {
    const home = tempHome()
    env(path.join(home, "ml-env"))
    const src = checkout(path.join(home, "src", "sglang"), "0.5.12.dev3")
    const { chosen } = discover(home, { env: { PYTHONPATH: src } })
    assert.strictEqual(chosen?.path, `${home}/ml-env/bin/python`)
    assert.strictEqual(chosen?.probe?.packageVersion, "0.5.12.dev3")
    assert.strictEqual(chosen?.probe?.versionSource, "version.py")
  })

  it("a checkout on PYTHONPATH wins over an older installed copy: the version of what Python imports", () => {
    const home = tempHome()
    env(path.join(home, "ml-env"), installed(path.join(home, "site"), "0.5.9"))
    const src = checkout(path.join(home, "src", "sglang"), "0.5.11")
    const { chosen } = discover(home, { env: { PYTHONPATH: src } })
    assert.strictEqual(chosen?.probe?.packageVersion, "0.5.11")
    assert.strictEqual(chosen?.probe?.versionSource, "version.py")
  })

  it("conda environments, then the interpreter of the `sglang` entry point on PATH", () => {
    const home = tempHome()
    env(path.join(home, "miniconda3", "envs", "serve"), installed(path.join(home, "conda-site"), "0.5.10"))
    const conda = discover(home)
    assert.strictEqual(conda.chosen?.how, "conda")
    assert.strictEqual(conda.chosen?.path, `${home}/miniconda3/envs/serve/bin/python`)

    const other = tempHome()
    const interpreter = env(path.join(other, "opt", "serving"), installed(path.join(other, "site"), "0.5.11"))
    const bin = path.join(other, "bin")
    fs.mkdirSync(bin)
    fs.writeFileSync(path.join(bin, "sglang"), `#!${interpreter}\nimport sys\n`, { mode: 0o755 })
    const entry = discover(other, { path: `${bin}:/usr/bin:/bin` })
    assert.strictEqual(entry.chosen?.how, "entry-point")
    assert.strictEqual(entry.chosen?.path, interpreter)
  })

  it("a configured prefix without SGLang is reported first, then the environment that has it", () => {
    const home = tempHome()
    env(path.join(home, "old-env"))
    env(path.join(home, "venv"), installed(path.join(home, "site"), "0.5.11"))
    const { lines, chosen } = discover(home, { mode: "configured", configured: "~/old-env" })
    assert.deepStrictEqual(lines[0] && [lines[0].kind, lines[0].how, lines[0].path], [
      "env",
      "configured",
      `${home}/old-env/bin/python`
    ])
    assert.isFalse(lines[0]?.probe?.found)
    assert.strictEqual(chosen?.path, `${home}/venv/bin/python`)
  })
})
