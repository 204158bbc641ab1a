/**
 * vLLM's flags read from the host, over a real sshd: a stand-in vLLM 0.26.0 (a version mlops ships
 * no snapshot for) whose `vllm serve` parser is built from a real parser dump with one flag added
 * and `--enforce-eager` removed (standin/vllm/entrypoints/openai/cli_args.py). `check --host`
 * types the flags by the host's own parser: the added flag is known, the removed one is an
 * `UnknownFlag` naming 0.26.0, and the second check reads the cached dump (the parser is not built
 * again).
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, layer } from "@effect/vitest"
import * as ConnectionPool from "@mlops/core/ConnectionPool"
import * as Hosts from "@mlops/core/Hosts"
import * as ServeCheck from "@mlops/serve/Check"
import { Context, Effect, Layer } from "effect"
import * as Sshd from "../../../core/test/support/Sshd.js"
import { VllmEngine } from "../../src/Engine.js"
import * as HostFlags from "../../src/HostFlags.js"
import * as Standin from "./standin/install.js"
import { alias } from "./support.js"

const VERSION = "0.26.0"

class Host extends Context.Tag("test/VllmHostFlags")<
  Host,
  { readonly standin: Standin.VllmStandin; readonly cacheDir: string }
>() {}

const TestLayer = Layer.unwrapScoped(
  Effect.gen(function* () {
    const standin = yield* Standin.install(alias, { version: VERSION, flags: Standin.laterReleaseFlags() })
    const sshd = yield* Sshd.start({ extraConfig: standin.sshdConfig })
    const cacheDir = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "mlops-vllm-flags-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    return ConnectionPool.layer().pipe(
      Layer.provideMerge(Hosts.layer({ sshConfig: sshd.sshConfigPath, mlopsHome: standin.mlopsHome })),
      Layer.merge(HostFlags.layerDirectory(cacheDir)),
      Layer.merge(Layer.succeed(Host, { standin, cacheDir }))
    )
  })
)

/** How many times the host's parser was built (the stand-in counts its builds). */
const builds = (standin: Standin.VllmStandin) => {
  const file = path.join(standin.venv, "standin-parser-builds")
  return fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "").length
    : 0
}

describe("vLLM flags read from the host (real sshd, stand-in vLLM 0.26.0)", () => {
  layer(TestLayer, { excludeTestServices: true, timeout: "120 seconds" })((it) => {
    it.effect(
      "an unshipped version: its own parser types the flags (a flag it added is known), then the cached dump does",
      () =>
        Effect.gen(function* () {
          const { standin, cacheDir } = yield* Host
          const argv = [standin.modelPath, "--standin-kv-budget", "3", "--max-model-len", "4096"]
          const first = yield* ServeCheck.host(VllmEngine, { host: alias, argv })
          assert.strictEqual(first.version, VERSION)
          assert.strictEqual(first.flags.source, "dumped")
          assert.strictEqual(first.flags.version, VERSION)
          assert.strictEqual(builds(standin), 1)
          // the dump is kept private, by install
          const [hostDir] = fs.readdirSync(cacheDir)
          assert.isDefined(hostDir)
          const [entry] = fs.readdirSync(path.join(cacheDir, hostDir!))
          assert.match(entry ?? "", /^0\.26\.0-[0-9a-f]{16}\.json$/)
          assert.strictEqual(fs.statSync(path.join(cacheDir, hostDir!, entry!)).mode & 0o777, 0o600)

          const second = yield* ServeCheck.host(VllmEngine, { host: alias, argv })
          assert.strictEqual(second.flags.source, "cached")
          assert.strictEqual(builds(standin), 1, "the parser is not built again")
        })
    )

    it.effect(
      "a flag this version removed is an UnknownFlag naming the version; values are typed by its converters",
      () =>
        Effect.gen(function* () {
          const { standin } = yield* Host
          const error = yield* Effect.flip(
            ServeCheck.host(VllmEngine, { host: alias, argv: [standin.modelPath, "--enforce-eager"] })
          )
          assert.strictEqual(error._tag, "UnknownFlag", JSON.stringify(error))
          assert.include(error.message, "--enforce-eager")
          assert.include(error.message, VERSION)
          // an optional int, as the install's own converter says (read from its closure): a word is refused
          const typed = yield* Effect.flip(
            ServeCheck.host(VllmEngine, { host: alias, argv: [standin.modelPath, "--max-cpu-loras", "many"] })
          )
          assert.strictEqual(typed._tag, "InvalidValue", JSON.stringify(typed))
          assert.include(typed.message, "--max-cpu-loras")
        })
    )
  })
})
