#!/usr/bin/env node
// The `mlops` program as installed: runs the bundled CLI (mlops.cjs, next to this file) from
// V8's code cache when there is a valid one. Compiling the 2 MB bundle was a third of every
// start; with the cache V8 deserialises what it compiled last time instead. Node 20 has no
// compile cache for ES modules (module.enableCompileCache is Node 22), hence a CommonJS bundle
// run through vm.Script with `cachedData`.
//
// The cache lives in $XDG_CACHE_HOME/mlops (default ~/.cache/mlops; a 0700 directory, 0600
// files), keyed by the bundle's size and mtime and node's version; V8 itself rejects a cache
// that does not match the source, and a rejected or missing one is rewritten once the command
// has run (so it holds the functions that ran). Any trouble with the cache only costs speed.
// MLOPS_CODE_CACHE=0 turns it off.
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as vm from "node:vm"

const here = path.dirname(fileURLToPath(import.meta.url))
const bundle = path.join(here, "mlops.cjs")
const source = fs.readFileSync(bundle, "utf8").replace(/^#!.*/, "")
const wrapped = `(function (exports, require, module, __filename, __dirname) {${source}\n})`

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
    return path.join(root, "mlops", `cli-${build}-${process.version}-${process.arch}-${flags}.v8`)
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

const script = new vm.Script(wrapped, {
  filename: bundle,
  ...(cachedData === undefined ? {} : { cachedData }),
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER
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

const module = { exports: {} }
script.runInThisContext()(module.exports, createRequire(bundle), module, bundle, here)
