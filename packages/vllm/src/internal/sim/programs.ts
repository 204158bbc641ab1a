/**
 * The `sim` host's vLLM environment (`/root/vllm-env`, its own, as people install vLLM apart
 * from SGLang): its `python` answers core's environment probe for `vllm` and runs `-m
 * vllm.entrypoints.cli.main serve ...`; its `vllm` entry point runs `vllm serve ...`.
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { FakeHost } from "@mlops/core/testing"
import * as ServerCommand from "@mlops/serve/ServerCommand"
import { pythonJson } from "@mlops/serve/SimHost"
import { Effect, Option, Schema } from "effect"
import { run } from "./server.js"

export const prefix = "/root/vllm-env"
export const pythonVersion = "3.12.11"
export const packageDir = `${prefix}/lib/python3.12/site-packages/vllm`

/** The releases the sim can install: those near the shipped snapshots. */
export const versions: ReadonlyArray<string> = ["0.11.0", "0.13.0", "0.21.0"]
export const defaultVersion = "0.13.0"

/** The package files of an install of `version`. */
export const files = (version: string = defaultVersion): Readonly<Record<string, string>> => ({
  [`${prefix}/bin/python`]: "#!simulated python\n",
  [`${prefix}/bin/vllm`]: "#!simulated vllm entry point\n",
  [`${packageDir}/__init__.py`]: `__version__ = "${version}"\n`,
  [`${packageDir}/engine/arg_utils.py`]: `# the simulated arg_utils.py of vLLM ${version}\n`
})

const installed = (ctx: FakeHost.ProgramContext): Effect.Effect<string | undefined> =>
  Effect.map(
    ctx.fs.readText(`${packageDir}/__init__.py`),
    (text) => /__version__ = "([^"]+)"/.exec(text ?? "")?.[1]
  )

const hex = (text: string): string => createHash("sha256").update(text).digest("hex")

const envProbe = (ctx: FakeHost.ProgramContext, pkg: string, hashFiles: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const version = pkg === "vllm" ? yield* installed(ctx) : undefined
    const fileHashes: Record<string, string> = {}
    if (version !== undefined)
      for (const file of hashFiles) {
        const text = yield* ctx.fs.readText(`${packageDir}/${file}`)
        if (text !== undefined) fileHashes[file] = hex(text)
      }
    yield* ctx.stdout.line(
      pythonJson({
        executable: `${prefix}/bin/python`,
        version: pythonVersion,
        found: version !== undefined,
        packageVersion: version ?? null,
        versionSource: version === undefined ? null : "metadata",
        location: version === undefined ? null : packageDir,
        fileHashes
      })
    )
    return 0
  })

const serve = (ctx: FakeHost.ProgramContext, words: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const version = yield* installed(ctx)
    if (version === undefined) {
      yield* ctx.stderr.line("ModuleNotFoundError: No module named 'vllm'")
      return 1
    }
    const [command, ...rest] = words
    if (command !== "serve") {
      yield* ctx.stderr.line(`vllm: the simulator runs only \`vllm serve\`, not ${command ?? "(nothing)"}`)
      return 2
    }
    return yield* run(ctx, rest, version)
  })

const Payload = Schema.parseJson(
  Schema.Struct({ argv: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })) })
)

/** mlops' prelude (`-c <prelude> <module> <shown words...>`): the real words come from its environment variable. */
const prelude = (ctx: FakeHost.ProgramContext, rest: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { [ServerCommand.secretsEnv]: payloadText, ...env } = ctx.env
    const payload = Schema.decodeUnknownOption(Payload)(payloadText ?? "{}")
    const [target, ...shown] = rest
    if (Option.isNone(payload) || target !== "vllm.entrypoints.cli.main") {
      yield* ctx.stderr.line(`${ctx.argv[0]}: can't run ${target ?? "(nothing)"} on the simulator`)
      return 2
    }
    const words = shown.map((word, index) => payload.value.argv?.[String(index)] ?? word)
    return yield* serve({ ...ctx, env }, words)
  })

export const python: FakeHost.Program = {
  match: (argv) => argv[0] === `${prefix}/bin/python` || argv[0] === `${prefix}/bin/python3`,
  run: (ctx) =>
    Effect.gen(function* () {
      const [, option, value, ...rest] = ctx.argv
      if (option === "-m" && value === "vllm.entrypoints.cli.main") return yield* serve(ctx, rest)
      if (option === "-c" && value?.includes(ServerCommand.preludeMarker)) return yield* prelude(ctx, rest)
      if (option === "-c" && value?.includes("importlib"))
        return yield* envProbe(ctx, rest[0] ?? "", rest.slice(1))
      yield* ctx.stderr.line(
        `${ctx.argv[0]}: can't run ${[option, value].filter(Boolean).join(" ")} on the simulator`
      )
      return 2
    })
}

export const vllm: FakeHost.Program = {
  match: (argv) => argv[0] === `${prefix}/bin/vllm` || argv[0] === "vllm",
  run: (ctx) => serve(ctx, ctx.argv.slice(1))
}
