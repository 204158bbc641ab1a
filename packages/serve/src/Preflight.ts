/**
 * Preflight: everything about the host that decides a launch before any GPU time is spent,
 * probed concurrently (the Python environment with its SGLang version, GPUs and the
 * processes on them, the port holder, the model's config.json). Every host problem is
 * reported at once, always in the same order (Python environment, GPUs, port, model): one
 * problem as itself, several as `HostNotReady`. Then the flags are decoded and resolved for
 * that SGLang version, model and GPUs.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { CommandError, ConnectError, RemoteFileError } from "@mlops/core/Errors"
import * as Probes from "@mlops/core/Probes"
import { Effect, Either, Schema } from "effect"
import type { Engine, Flags, Resolution } from "./Engine.js"
import { ModelNotFound } from "./Failures.js"
import * as GpuHolders from "./internal/launch/gpuHolders.js"
import * as OwnDeployment from "./internal/launch/ownDeployment.js"
import {
  type GpuHolder,
  HostNotReady,
  HostProblem,
  NotEnoughGpus,
  PortUnavailable,
  type PreflightFacts,
  type PythonEnvUnusable
} from "./internal/launch/types.js"
import * as ModelTraits from "./ModelTraits.js"
import type { PythonChoice } from "./PythonEnv.js"
import * as PythonEnv from "./PythonEnv.js"

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
          action: `copy the checkpoint to ${modelPath} on ${conn.host.alias} or name the right model path`
        }
      })
    }
    return yield* ModelTraits.fromJson(decoder.decode(yield* conn.files.read(path)), path)
  })

export interface PreflightResult {
  readonly facts: PreflightFacts
  readonly resolved: Resolution
  readonly flags: Flags
  readonly python: PythonChoice
}

/** What a probe fails with: a host problem, or connection trouble (which fails the step, to be retried above). */
type ProbeError = HostProblem | CommandError | ConnectError

const isHostProblem = Schema.is(HostProblem)

/** A probe's value, or undefined with its host problem recorded; connection trouble fails. */
const settle = <A>(
  either: Either.Either<A, ProbeError>,
  problems: Array<HostProblem>
): Effect.Effect<A | undefined, CommandError | ConnectError> => {
  if (Either.isRight(either)) return Effect.succeed(either.right)
  const error = either.left
  if (!isHostProblem(error)) return Effect.fail(error)
  problems.push(error)
  return Effect.succeed(undefined)
}

/** What to do about GPUs of this launch that other processes hold memory on. */
export type BusyGpuPolicy = "refuse" | "report" | "ignore"

/** Probe the host and resolve the flags. */
export const run = Effect.fn("Launch.preflight")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    /** Choosing (and probing) the Python environment. */
    readonly python: Effect.Effect<
      PythonChoice,
      PythonEnvUnusable | CommandError | ConnectError | RemoteFileError
    >
    readonly argv: ReadonlyArray<string>
    readonly env: Readonly<Record<string, string>>
    readonly port: number
    readonly modelPath: string
    /** Fail when the port is taken (a launch); a flags-only check skips it. Default true. */
    readonly checkPort?: boolean
    /** GPUs other processes hold memory on: refused (a launch; default), reported (allowed), or not looked at (a flags-only check). */
    readonly busyGpus?: BusyGpuPolicy
    /** Read the flags from the host's own parser even for a shipped release. Default false. */
    readonly flagsFromHost?: boolean
    /**
     * Whether the server runs on this host (default true). False for a batch job submitted
     * from a login node: its GPUs and port are on a compute node the scheduler picks, so they
     * are not probed here (the placement checks the GPUs against the cluster).
     */
    readonly serverOnHost?: boolean
  }
) {
  const host = conn.host.alias
  const engine = o.engine
  const onHost = o.serverOnHost !== false
  const policy = onHost ? (o.busyGpus ?? "refuse") : "ignore"
  const outcomes = yield* Effect.all(
    [
      Effect.either(o.python),
      Effect.either(onHost ? Probes.gpus(conn) : Effect.succeed([])),
      Effect.either(policy === "ignore" ? Effect.succeed([]) : Probes.gpuProcesses(conn)),
      Effect.either(
        o.checkPort === false || !onHost ? Effect.succeed(undefined) : Probes.portHolder(conn, o.port)
      ),
      Effect.either(readModelConfig(conn, o.modelPath))
    ],
    { concurrency: "unbounded" }
  )
  // in the fixed order: Python environment, GPUs, port, model
  const pythonProblems: Array<HostProblem> = []
  const gpuProblems: Array<HostProblem> = []
  const portProblems: Array<HostProblem> = []
  const modelProblems: Array<HostProblem> = []
  const python = yield* settle(outcomes[0], pythonProblems)
  const gpus = yield* settle(outcomes[1], gpuProblems)
  const apps = yield* settle(outcomes[2], gpuProblems)
  const holder = yield* settle(outcomes[3], portProblems)
  const traits = yield* settle(outcomes[4], modelProblems)

  // the flags of that install: shipped with mlops, or read from the host's own parser
  const found =
    python === undefined
      ? undefined
      : yield* Effect.either(
          engine.flags({
            conn,
            interpreter: python.interpreter,
            env: PythonEnv.asProbed(python),
            fromHost: o.flagsFromHost === true
          })
        )
  const match = found === undefined ? undefined : yield* settle(found, pythonProblems)
  const flags = match ?? engine.latestFlags
  // flags that do not parse are a usage error, reported before anything about the host
  const decoded = yield* flags.decode(o.argv)
  const plan = engine.gpusOf(decoded.args)

  let busyGpus: ReadonlyArray<GpuHolder> = []
  if (gpus !== undefined && onHost) {
    const needed = plan.total
    if (needed > gpus.length * Math.max(1, plan.nodes)) {
      gpuProblems.push(
        new NotEnoughGpus({
          host,
          needed,
          available: gpus.length,
          gpus: gpus.map((g) => `${g.index}: ${g.name}`),
          fix: `use ${plan.fewer(Math.max(1, gpus.length))} (or a host with ${needed} GPUs)`
        })
      )
    } else if (policy !== "ignore" && apps !== undefined) {
      const used = GpuHolders.gpusUsed(gpus, plan, o.env)
      const busy = yield* GpuHolders.find(conn, used, apps)
      if (busy !== undefined && policy === "refuse") {
        gpuProblems.push(GpuHolders.refusal(host, busy, gpus.length, used.length, engine.displayName, plan))
      } else if (busy !== undefined) busyGpus = busy.holders
    }
  }
  if (holder !== undefined) {
    const ours = holder.pid === undefined ? undefined : yield* OwnDeployment.deploymentOf(conn, holder.pid)
    const another = `pass another --port (e.g. --port ${o.port + 1})`
    portProblems.push(
      new PortUnavailable({
        host,
        port: o.port,
        ...(holder.pid === undefined ? {} : { pid: holder.pid }),
        ...(holder.command === undefined ? {} : { command: holder.command }),
        ...(ours === undefined ? {} : { deployment: ours }),
        fix:
          ours === undefined
            ? `stop that process or ${another}`
            : `stop ${ours} (mlops stop --host ${host} --name ${ours}) or ${another}`
      })
    )
  }
  const problems = [...pythonProblems, ...gpuProblems, ...portProblems, ...modelProblems]
  if (problems.length === 1) return yield* Effect.fail(problems[0]!)
  if (problems.length > 1) return yield* new HostNotReady({ host, problems })
  // no problem left means every probe answered
  if (python === undefined || gpus === undefined || match === undefined) {
    return yield* Effect.dieMessage("preflight: a probe gave neither a value nor a problem")
  }
  // off the host, the GPUs are unknown here: the hardware rules are skipped
  const first = onHost ? gpus[0] : undefined
  const resolved = yield* engine.resolve({
    decoded,
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
    version: python.engineVersion
  })
  const facts: PreflightFacts = {
    python: python.interpreter,
    pythonVersion: python.pythonVersion,
    engine: engine.name,
    engineVersion: python.engineVersion,
    gpus,
    port: o.port,
    model: { path: o.modelPath, architecture: traits?.architecture },
    busyGpus,
    flags: { version: match.version, source: match.source },
    rulesVerified: resolved.verified,
    warnings: match.warning === null ? [] : [match.warning]
  }
  return { facts, resolved, flags: match, python } satisfies PreflightResult
})
