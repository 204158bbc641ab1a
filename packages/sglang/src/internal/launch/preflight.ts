/**
 * Preflight: everything about the host that decides a launch before any GPU time is spent,
 * probed concurrently (one exec each: python env + SGLang version, GPUs, port holder; one
 * sftp read for the model's config.json). Then the flags are decoded and resolved for that
 * SGLang version, model and GPUs.
 *
 * @internal
 */
import type { Connection } from "@mlops/core/Connection"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemotePath from "@mlops/core/RemotePath"
import { Effect } from "effect"
import * as Argv from "../../Argv.js"
import type * as Catalogue from "../../Catalogue.js"
import * as Classifier from "../../Classifier.js"
import { ModelNotFound } from "../../Failures.js"
import * as HostFlags from "../../HostFlags.js"
import * as ModelTraits from "../../ModelTraits.js"
import * as Resolve from "../../Resolve.js"
import * as Rules from "../../Rules.js"
import { NotEnoughGpus, PortUnavailable, type PreflightFacts, PythonEnvUnusable } from "./types.js"

const decoder = new TextDecoder()

/** A local path (vs a Hugging Face repo id, which we cannot check from here). */
const isLocalPath = (path: string) => path.startsWith("/") || path.startsWith("~") || path.startsWith(".")

/** The model's config.json as traits, from the host (undefined for a Hugging Face repo id). */
export const readModelConfig = (conn: Connection, modelPath: string) =>
  Effect.gen(function* () {
    if (!isLocalPath(modelPath)) return undefined
    const path = `${modelPath.replace(/\/+$/, "")}/config.json`
    const stat = yield* conn.files.stat(path)
    if (stat === undefined) {
      return yield* new ModelNotFound({
        evidence: [],
        process: "preflight",
        phase: "starting",
        reason: `${path} does not exist on ${conn.host.alias}`,
        model: modelPath,
        fix: {
          action: `copy the checkpoint to ${modelPath} on ${conn.host.alias} or pass the right --model-path`
        }
      })
    }
    return yield* ModelTraits.fromJson(decoder.decode(yield* conn.files.read(path)), path)
  })

export interface PreflightResult {
  readonly facts: PreflightFacts
  readonly resolved: Resolve.Resolved
  readonly catalogue: Catalogue.Catalogue
}

/** Probe the host and resolve the flags. */
export const run = Effect.fn("Launch.preflight")(function* (
  conn: Connection,
  o: {
    readonly python: string
    readonly argv: ReadonlyArray<string>
    readonly env: Readonly<Record<string, string>>
    readonly port: number
    readonly modelPath: string
    /** Fail when the port is taken (a launch); a flags-only check skips it. Default true. */
    readonly checkPort?: boolean
    /** Read the flags from the host's own parser even for a shipped release. Default false. */
    readonly flagsFromHost?: boolean
  }
) {
  const host = conn.host.alias
  const [env, gpus, holder, traits] = yield* Effect.all(
    [
      Probes.python(conn, o.python, "sglang", { hashFiles: [HostFlags.fingerprintFile] }),
      Probes.gpus(conn),
      o.checkPort === false ? Effect.succeed(undefined) : Probes.portHolder(conn, o.port),
      readModelConfig(conn, o.modelPath)
    ],
    { concurrency: "unbounded" }
  )
  if (env.packageVersion === undefined) {
    return yield* new PythonEnvUnusable({
      host,
      python: env.executable,
      reason: "SGLang is not installed in this environment",
      fix: `install it (${env.executable} -m pip install "sglang[all]") or point --python at the environment that has it`
    })
  }
  const flags = yield* HostFlags.forHost(conn, {
    interpreter: Probes.interpreterOf(o.python),
    env,
    fromHost: o.flagsFromHost === true
  })
  const rules = Rules.forVersion(env.packageVersion)
  const decoded = yield* Argv.decodeArgv(o.argv, flags.catalogue)
  const needed = decoded.args.tp_size * decoded.args.pp_size
  if (needed > gpus.length * Math.max(1, decoded.args.nnodes)) {
    return yield* new NotEnoughGpus({
      host,
      needed,
      available: gpus.length,
      gpus: gpus.map((g) => `${g.index}: ${g.name}`),
      fix: `use --tp-size ${Math.max(1, gpus.length)} (or a host with ${needed} GPUs)`
    })
  }
  if (holder !== undefined) {
    return yield* new PortUnavailable({
      host,
      port: o.port,
      ...(holder.pid === undefined ? {} : { pid: holder.pid }),
      ...(holder.command === undefined ? {} : { command: holder.command }),
      fix: `stop that process or pass another --port (e.g. --port ${o.port + 1})`
    })
  }
  const first = gpus[0]
  const resolved = yield* Resolve.resolve(decoded.args, decoded.explicit, {
    traits,
    gpus:
      first === undefined
        ? undefined
        : {
            count: gpus.length,
            computeCapability: first.computeCapability ?? "8.0",
            memoryMiB: first.memoryTotalMiB
          },
    env: o.env,
    version: env.packageVersion
  })
  const facts: PreflightFacts = {
    python: env.executable,
    pythonVersion: env.version,
    sglangVersion: env.packageVersion,
    gpus,
    port: o.port,
    model: { path: o.modelPath, architecture: traits?.architecture },
    flags: { version: flags.catalogue.version, source: flags.source },
    rulesVerified: rules.verified,
    warnings: flags.warning === null ? [] : [flags.warning]
  }
  return { facts, resolved, catalogue: flags.catalogue } satisfies PreflightResult
})

/**
 * `--remote-check`: the host's own SGLang parses and validates the flags (no model load),
 * and its output goes through the classifier.
 */
const REMOTE_CHECK = [
  "import sys",
  "from sglang.srt.server_args import prepare_server_args",
  "prepare_server_args(sys.argv[1:])",
  "print('{\"ok\": true}')"
].join("\n")

export const remoteCheck = Effect.fn("Launch.remoteCheck")(function* (
  conn: Connection,
  interpreter: string,
  argv: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>
) {
  const command = RemoteCommand.make([RemotePath.make(interpreter), "-c", REMOTE_CHECK, ...argv], { env })
  const result = yield* conn.exec(command, {
    timeout: "60 seconds"
  })
  if (result.exitCode === 0) return
  const text = `${result.stdout}\n${result.stderr}`
  const failure = Classifier.classifyText(text, {
    exitCode: result.exitCode ?? undefined,
    signal: result.signal ?? undefined
  }).failure
  if (failure !== undefined) return yield* failure
})
