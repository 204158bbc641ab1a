#!/usr/bin/env node
// The `mlops` program as installed: runs the bundled CLI (program.cjs, next to this file) from
// V8's code cache when there is a valid one. Compiling the 2 MB bundle was a third of every
// start; with the cache V8 deserialises what it compiled last time instead. Node 20 has no
// compile cache for ES modules (module.enableCompileCache is Node 22), hence a CommonJS bundle
// run through vm.Script with `cachedData`.
//
// The cache lives in $XDG_CACHE_HOME/mlops (default ~/.cache/mlops; a 0700 directory, 0600
// files), keyed by the bundle's size and mtime, node's version and flags, and the subcommand;
// V8 itself rejects a cache that does not match the source, and a rejected or missing one is
// rewritten once the command has run (so it holds the functions that ran). Any trouble with the
// cache only costs speed. MLOPS_CODE_CACHE=0 turns it off. CommonJS itself: node starts a
// CommonJS entry point without setting up its ES module loader, a few percent of a start.
const fs = require("node:fs")
const { createRequire } = require("node:module")
const os = require("node:os")
const path = require("node:path")
const vm = require("node:vm")

const bundle = path.join(__dirname, "program.cjs")
// the bundle is one function expression, CommonJS's module wrapper (see scripts/bundle.mjs)
const source = fs.readFileSync(bundle, "utf8")

/** A short, stable hash of a string (FNV-1a, 32 bits), for a file name. */
const fnv1a = (text) => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193)
  return (hash >>> 0).toString(16)
}

const cacheFile = (() => {
  if (process.env.MLOPS_CODE_CACHE === "0") return undefined
  try {
    const stat = fs.statSync(bundle)
    const root = process.env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache")
    // V8 rejects a cache made under other V8 flags: each set of node options has its own
    const flags = fnv1a(`${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`)
    const build = `${stat.size}-${Math.trunc(stat.mtimeMs)}`
    // V8 caches what ran: each subcommand keeps its own (`hosts` compiles other code than `check`)
    const word = process.argv[2] ?? ""
    const command = /^[a-z][a-z-]{0,19}$/.test(word) ? word : "-"
    return path.join(root, "mlops", `cli-${build}-${process.version}-${process.arch}-${flags}-${command}.v8`)
  } catch {
    return undefined
  }
})()

let cachedData
if (cacheFile !== undefined) {
  try {
    cachedData = fs.readFileSync(cacheFile)
  } catch {
    cachedData = undefined
  }
}

const script = new vm.Script(source, {
  filename: bundle,
  ...(cachedData === undefined ? {} : { cachedData })
})

if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected)) {
  process.once("exit", () => {
    try {
      fs.mkdirSync(path.dirname(cacheFile), { recursive: true, mode: 0o700 })
      // written aside and renamed: a concurrent mlops never reads half a cache
      const partial = `${cacheFile}.${process.pid}`
      fs.writeFileSync(partial, script.createCachedData(), { mode: 0o600 })
      fs.renameSync(partial, cacheFile)
      // the caches of other builds are of no use any more (other node options' are kept)
      const build = path.basename(cacheFile).split("-").slice(0, 3).join("-")
      for (const entry of fs.readdirSync(path.dirname(cacheFile))) {
        if (/^cli-.*\.v8$/.test(entry) && !entry.startsWith(`${build}-`))
          fs.rmSync(path.join(path.dirname(cacheFile), entry), { force: true })
      }
    } catch {
      // a cache that cannot be written only costs the next start its speed
    }
  })
}

const program = { exports: {} }
script.runInThisContext()(program.exports, createRequire(bundle), program, bundle, __dirname)
