// Bundles the mlops CLI into dist/: `program.cjs`, one self-contained CommonJS program with every
// dependency included (nothing is resolved from node_modules at start), minified, and
// `mlops.cjs`, the launcher that runs it from V8's code cache (scripts/launcher.cjs says why).
// Code that is not needed on every run is still loaded on first use: ssh2 and its crypto are
// evaluated on the first connect. Only ssh2's optional native add-ons stay outside (ssh2 falls
// back to pure JS without them).
//
//   node scripts/bundle.mjs [OUTDIR]    (default: the package's dist/)
//
// The launcher is written last: `bin/mlops` compares the sources with it to know the bundle is
// current.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.resolve(process.argv[2] ?? path.join(cli, "dist"))
await build({
  entryPoints: { program: path.join(cli, "src", "bin.ts") },
  outdir: dist,
  outExtension: { ".js": ".cjs" },
  bundle: true,
  minify: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: true,
  external: ["cpu-features", "*.node"],
  // the module wrapper the launcher calls: the file is then exactly what V8 compiles (no copy
  // of 2 MB of source per start), and the source map stays right
  banner: { js: "(function (exports, require, module, __filename, __dirname) {" },
  footer: { js: "})" },
  logLevel: "warning"
})
// written aside and renamed: an mlops starting meanwhile never runs half a launcher
const launcher = path.join(dist, "mlops.cjs")
fs.copyFileSync(path.join(cli, "scripts", "launcher.cjs"), `${launcher}.partial`)
fs.chmodSync(`${launcher}.partial`, 0o755)
fs.renameSync(`${launcher}.partial`, launcher)
