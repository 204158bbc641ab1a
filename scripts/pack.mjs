// `npm run pack`: a publishable tarball per workspace package under packages/, into
// dist-pack/ (or the directory given as the first argument). Generic over the workspaces: a new
// package needs nothing here.
//
// In the repository a package's `exports` point at its TypeScript sources (tests and tsx run
// them directly). A published package must point at JavaScript with declarations, so each is
// staged: the compiled `dist/src` (from `tsc -b`, .js + .d.ts + maps) as `dist/`, and a
// package.json whose `exports` map `./src/X.ts` to `{ types: ./dist/X.d.ts, default:
// ./dist/X.js }`, `private` dropped, and every version (its own and its @mlops dependencies)
// the root's one version. A package with a `bin` whose bundle script exists
// (`scripts/bundle.mjs`, the CLI) ships that self-contained bundle as its command instead, and
// needs no runtime dependencies. Then `npm pack` in the staging directory.
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const out = path.resolve(process.argv[2] ?? path.join(root, "dist-pack"))
const rootPkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"))
const version = rootPkg.version
if (typeof version !== "string")
  throw new Error("the root package.json needs the one version of all packages")

execFileSync(path.join(root, "node_modules", ".bin", "tsc"), ["-b"], { cwd: root, stdio: "inherit" })
fs.mkdirSync(out, { recursive: true })

const toBuilt = (target) =>
  target === null
    ? null
    : {
        types: target.replace(/^\.\/src\//, "./dist/").replace(/\.ts$/, ".d.ts"),
        default: target.replace(/^\.\/src\//, "./dist/").replace(/\.ts$/, ".js")
      }

const pinned = (deps = {}) =>
  Object.fromEntries(
    Object.entries(deps).map(([name, range]) => [name, name.startsWith("@mlops/") ? version : range])
  )

const tarballs = []
for (const workspace of rootPkg.workspaces.filter((w) => w.startsWith("packages/"))) {
  const dir = path.join(root, workspace)
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"))
  const stage = fs.mkdtempSync(path.join(out, ".stage-"))
  const bundler = path.join(dir, "scripts", "bundle.mjs")
  const isCommand = pkg.bin !== undefined && fs.existsSync(bundler)
  const staged = {
    name: pkg.name,
    version,
    description: pkg.description,
    license: rootPkg.license ?? "UNLICENSED",
    type: "module",
    engines: rootPkg.engines
  }
  if (isCommand) {
    const built = path.join(stage, "build")
    execFileSync("node", [bundler, built], { stdio: "inherit" })
    fs.mkdirSync(path.join(stage, "dist"))
    // the program without its source map, and the launcher that runs it from V8's code cache
    const program = fs
      .readFileSync(path.join(built, "program.cjs"), "utf8")
      .replace(/\n\/\/# sourceMappingURL=.*$/, "")
    fs.writeFileSync(path.join(stage, "dist", "program.cjs"), `${program}\n`)
    fs.copyFileSync(path.join(built, "mlops.cjs"), path.join(stage, "dist", "mlops.cjs"))
    fs.chmodSync(path.join(stage, "dist", "mlops.cjs"), 0o755)
    fs.rmSync(built, { recursive: true, force: true })
    staged.bin = Object.fromEntries(Object.keys(pkg.bin).map((name) => [name, "./dist/mlops.cjs"]))
  } else {
    fs.cpSync(path.join(dir, "dist", "src"), path.join(stage, "dist"), { recursive: true })
    staged.exports = Object.fromEntries(
      Object.entries(pkg.exports).map(([key, target]) => [key, toBuilt(target)])
    )
    staged.dependencies = pinned(pkg.dependencies)
  }
  for (const file of ["README.md", "CHANGELOG.md"]) {
    const own = path.join(dir, file)
    const shared = path.join(root, file)
    if (fs.existsSync(own)) fs.copyFileSync(own, path.join(stage, file))
    else if (fs.existsSync(shared)) fs.copyFileSync(shared, path.join(stage, file))
  }
  fs.writeFileSync(path.join(stage, "package.json"), `${JSON.stringify(staged, null, 2)}\n`)
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", out], {
    cwd: stage,
    encoding: "utf8"
  }).trim()
  fs.rmSync(stage, { recursive: true, force: true })
  const file = path.join(out, name.split("\n").at(-1))
  tarballs.push({ name: pkg.name, file, bytes: fs.statSync(file).size })
}
for (const t of tarballs)
  console.log(`${t.name.padEnd(16)} ${(t.bytes / 1024).toFixed(0).padStart(6)} KiB  ${t.file}`)
