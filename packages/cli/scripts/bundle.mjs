// Bundles the mlops CLI into dist/mlops.mjs: one self-contained ESM program, every dependency
// included (nothing is resolved from node_modules at start), minified (less for node to
// compile on each start), with code that is not needed on every run in chunks loaded on first
// use (dist/chunks/: ssh2 and its crypto load on the first connect). Only ssh2's optional
// native add-ons stay outside (ssh2 falls back to pure JS without them).
//
//   node scripts/bundle.mjs [OUTDIR]    (default: the package's dist/)
//
// Chunk names carry a content hash and older ones are left in place: an mlops that is running
// while another one rebuilds still finds the chunks it loads later.
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
const dist = path.resolve(process.argv[2] ?? path.join(cli, "dist"))
await build({
  entryPoints: { mlops: path.join(cli, "src", "bin.ts") },
  outdir: dist,
  outExtension: { ".js": ".mjs" },
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  splitting: true,
  minify: true,
  platform: "node",
  format: "esm",
  target: "node20",
  sourcemap: true,
  external: ["cpu-features", "*.node"],
  // CommonJS dependencies (ssh2) expect require/__dirname, which ES modules do not have
  banner: {
    js: [
      'import { createRequire as __mlopsRequire } from "node:module";',
      'import { fileURLToPath as __mlopsPath } from "node:url";',
      'import { dirname as __mlopsDir } from "node:path";',
      "const require = __mlopsRequire(import.meta.url);",
      "const __filename = __mlopsPath(import.meta.url);",
      "const __dirname = __mlopsDir(__filename);"
    ].join(" ")
  },
  logLevel: "warning"
})
