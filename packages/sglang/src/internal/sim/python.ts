/**
 * The sim host's Python (`~/ml-env/bin/python`): answers the discovery probe (serve's
 * `pythonEnvScripts`), mlops' flag dump and remote argument check (`-c` running `prepare_server_args`), and runs the
 * simulated `-m sglang.launch_server`, all for the release installed on the sim.
 *
 * @internal
 */
import type { FakeHost } from "@mlops/core/testing"
import * as ModelTraits from "@mlops/serve/ModelTraits"
import * as ServerCommand from "@mlops/serve/ServerCommand"
import * as Gpus from "@mlops/serve/SimGpus"
import { pythonJson } from "@mlops/serve/SimHost"
import { Effect, Either, Option, Schema } from "effect"
import * as Argv from "../../Argv.js"
import * as Resolve from "../../Resolve.js"
import { MARKER } from "../hostFlags/script.js"
import * as FlagDump from "./flagDump.js"
import * as Installed from "./installed.js"
import { prefix, pythonVersion, sglangDir } from "./paths.js"
import * as Server from "./server.js"
import * as Tracebacks from "./tracebacks.js"

export { prefix, pythonVersion } from "./paths.js"

const isPython = (argv: ReadonlyArray<string>): boolean => /(^|\/)python(3(\.\d+)?)?$/.test(argv[0] ?? "")

/** `python -c <argument check> <flags...>`: exit 0 with `{"ok": true}` or print SGLang's error. */
const remoteCheck = (ctx: FakeHost.ProgramContext, argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { version, catalogue } = yield* Installed.installed(ctx)
    const decoded = yield* Effect.either(Argv.decodeArgv(argv, catalogue))
    if (Either.isLeft(decoded)) {
      for (const line of Tracebacks.argparse(decoded.left)) yield* ctx.stderr.line(line)
      return 2
    }
    const { args, explicit } = decoded.right
    const configText = yield* ctx.fs.readText(`${args.model_path}/config.json`)
    if (configText === undefined) {
      for (const line of Tracebacks.modelNotFound(args.model_path)) yield* ctx.stderr.line(line)
      return 1
    }
    const traits = yield* Effect.orDie(ModelTraits.fromJson(configText))
    const resolved = yield* Effect.either(
      Resolve.resolve(args, explicit, {
        traits,
        gpus: Gpus.forRules,
        env: ctx.env,
        version
      })
    )
    if (Either.isLeft(resolved)) {
      // prepare_server_args runs ServerArgs only: check_server_args and model init come later
      const first = resolved.left.violations.find((v) => v.stage === "server-args")
      if (first === undefined) {
        yield* ctx.stdout.line(JSON.stringify({ ok: true }))
        return 0
      }
      for (const line of Tracebacks.violation(first, traits.architecture)) yield* ctx.stderr.line(line)
      return 1
    }
    yield* ctx.stdout.line(JSON.stringify({ ok: true }))
    return 0
  })

/** The discovery probe: interpreter version, where the package is and its version (from its metadata), fingerprints of its files. */
const envProbe = (ctx: FakeHost.ProgramContext, pkg: string, hashFiles: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { version } = yield* Installed.installed(ctx)
    const hashes: Record<string, string> = {}
    if (pkg === "sglang") {
      for (const file of hashFiles) {
        const text = yield* ctx.fs.readText(`${sglangDir}/${file}`)
        if (text !== undefined) hashes[file] = FlagDump.sha256Of(text)
      }
    }
    const found = pkg === "sglang"
    yield* ctx.stdout.line(
      pythonJson({
        executable: `${prefix}/bin/python`,
        version: pythonVersion,
        found,
        packageVersion: found ? version : null,
        versionSource: found ? "metadata" : null,
        location: found ? sglangDir : null,
        fileHashes: hashes
      })
    )
    return 0
  })

/** mlops' flag dump: the installed release's flags as argparse actions. */
const flagDump = (ctx: FakeHost.ProgramContext) =>
  Effect.gen(function* () {
    const { catalogue } = yield* Installed.installed(ctx)
    const source = (yield* ctx.fs.readText(`${sglangDir}/srt/server_args.py`)) ?? ""
    yield* ctx.stdout.line(FlagDump.dumpLine(catalogue, source))
    return 0
  })

/**
 * mlops' prelude (`-c <prelude> <target> <shown flags...>`), as Python runs it: the real values
 * come from the environment variable it removes, then the target runs with them.
 */
const prelude = (ctx: FakeHost.ProgramContext, rest: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const { [ServerCommand.secretsEnv]: payloadText, ...env } = ctx.env
    const payload = Schema.decodeUnknownOption(Payload)(payloadText ?? "{}")
    if (Option.isNone(payload)) {
      yield* ctx.stderr.line("json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)")
      return 1
    }
    const [target, ...shown] = rest
    const words = shown.map((word, index) => payload.value.argv?.[String(index)] ?? word)
    const inner: FakeHost.ProgramContext = { ...ctx, env }
    if (target === "sglang.launch_server") return yield* Server.run(inner, words)
    if (target === "-" && payload.value.code?.includes("prepare_server_args"))
      return yield* remoteCheck(inner, words)
    yield* ctx.stderr.line(`${ctx.argv[0]}: can't run ${target ?? "(nothing)"} on the simulator`)
    return 2
  })

const Payload = Schema.parseJson(
  Schema.Struct({
    argv: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
    hide: Schema.optional(Schema.Array(Schema.String)),
    code: Schema.optional(Schema.String)
  })
)

export const program: FakeHost.Program = {
  match: isPython,
  run: (ctx) =>
    Effect.gen(function* () {
      const [, option, value, ...rest] = ctx.argv
      if (option === "-m" && value === "sglang.launch_server") return yield* Server.run(ctx, rest)
      if (option === "-c" && value?.includes(ServerCommand.preludeMarker)) return yield* prelude(ctx, rest)
      if (option === "-c" && value !== undefined) {
        if (value.includes(MARKER)) return yield* flagDump(ctx)
        if (value.includes("prepare_server_args")) return yield* remoteCheck(ctx, rest)
        if (value.includes("importlib")) return yield* envProbe(ctx, rest[0] ?? "", rest.slice(1))
      }
      yield* ctx.stderr.line(
        `${ctx.argv[0]}: can't run ${[option, value].filter(Boolean).join(" ")} on the simulator`
      )
      return 2
    })
}
