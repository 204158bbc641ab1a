// Bundles the mlops CLI into dist/: `program.cjs`, one self-contained CommonJS program with every
// dependency included (nothing is resolved from node_modules at start), minified, and
// `mlops.cjs`, the launcher that runs it from V8's code cache (scripts/launcher.cjs says why).
// Code that is not needed on every run is loaded on first use: each command's program (and with
// it the engines) is an `import()`, which esbuild turns into modules initialised when first
// imported, and ssh2 and its crypto are evaluated on the first connect.
//
// Our sources import Effect's modules from their packages' barrels (`import { Effect } from
// "effect"`, the house style). In a bundle with lazily initialised modules a barrel initialises
// every module it re-exports (all of Effect and fast-check, @effect/platform's HTTP and MsgPack)
// at start; `barrelImports` rewrites each such import to the module itself (`import * as Effect
// from "effect/Effect"`), the same bindings. Measured on `mlops check`: 440 → 396 ms, and
// `--help` 626 → 521 ms for Effect's barrel alone.
//
// Only ssh2's optional native add-ons stay outside (ssh2 falls back to pure JS without them).
//
//   node scripts/bundle.mjs [OUTDIR]    (default: the package's dist/)
//
// The launcher is written last: `bin/mlops` compares the sources with it to know the bundle is
// current.
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

/** The barrels rewritten, each with the directory of its modules. */
const barrels = new Map(
  ["effect", "@effect/platform", "@effect/cli"].map((name) => [
    name,
    path.dirname(fileURLToPath(import.meta.resolve(name)))
  ])
)

/** `import { A, type B, C as D } from "effect"` in our sources → one namespace import per module. */
const barrelImports = {
  name: "barrel-imports",
  setup(plugin) {
    plugin.onLoad({ filter: /[\\/]packages[\\/][^\\/]+[\\/]src[\\/].*\.ts$/ }, async (args) => {
      const source = await fs.promises.readFile(args.path, "utf8")
      const contents = source.replace(
        /^import\s+(type\s+)?\{([^}]*)\}\s+from\s+"(effect|@effect\/platform|@effect\/cli)"/gm,
        (_, allTypes, names, barrel) =>
          names
            .split(",")
            .map((name) => name.trim())
            .filter((name) => name !== "")
            .map((spec) => {
              const type = allTypes !== undefined || spec.startsWith("type ")
              const [module, local = module] = spec.replace(/^type\s+/, "").split(/\s+as\s+/)
              if (!fs.existsSync(path.join(barrels.get(barrel), `${module}.js`)))
                throw new Error(`${args.path}: "${module}" is not a module of ${barrel}`)
              return `import ${type ? "type " : ""}* as ${local} from "${barrel}/${module}"`
            })
            .join("; ")
      )
      // any other form (`export ... from "effect"`, a default import) would bring the barrel back
      const left = /^(?:import|export)\b[^;\n]*from\s+"(effect|@effect\/platform|@effect\/cli)"/m.exec(
        contents
      )
      if (left !== null)
        throw new Error(`${args.path}: rewrite this import of the ${left[1]} barrel: ${left[0]}`)
      return { contents, loader: "ts" }
    })
  }
}

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
  plugins: [barrelImports],
  logLevel: "warning"
})
// written aside and renamed: an mlops starting meanwhile never runs half a launcher
const launcher = path.join(dist, "mlops.cjs")
fs.copyFileSync(path.join(cli, "scripts", "launcher.cjs"), `${launcher}.partial`)
fs.chmodSync(`${launcher}.partial`, 0o755)
fs.renameSync(`${launcher}.partial`, launcher)
