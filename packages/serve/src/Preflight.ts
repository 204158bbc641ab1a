/**
 * Preflight: everything about the host that decides a launch before any GPU time is spent or
 * anything is written, probed concurrently: the engine as the runtime finds it (its version),
 * the model's config.json, and, where the server runs on the host itself (`Placement.onHost`),
 * its GPUs, the processes on them and the port holder; then the placement's own checks (a
 * scheduler's partition and GPUs) and whether the launch needs more hosts than it has. Every
 * problem is reported at once, always in the same order (engine, GPUs and hosts, port, model,
 * placement): one problem as itself, several as `HostNotReady`. Then the flags are decoded and
 * resolved for that engine version, model and GPUs.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import { isTransient } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import { Effect, Either } from "effect"
import * as ArgvErrors from "./ArgvErrors.js"
import type { Engine, Flags, FlagsRequest, Resolution } from "./Engine.js"
import { ModelNotFound } from "./Failures.js"
import * as GpuHolders from "./internal/launch/gpuHolders.js"
import * as OwnDeployment from "./internal/launch/ownDeployment.js"
import {
  type GpuHolder,
  HostNotReady,
  type HostProblem,
  NotEnoughGpus,
  NotEnoughHosts,
  PortUnavailable,
  type PreflightFacts
} from "./internal/launch/types.js"
import * as ModelTraits from "./ModelTraits.js"
import type { Placement } from "./Placement.js"
import type * as Placements from "./Placements.js"
import { type Located, noPaths, type Runtime } from "./Runtime.js"
import type * as Runtimes from "./Runtimes.js"
import * as Secrets from "./Secrets.js"

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
  readonly located: Located
}

/** Connection trouble a check met (the step is tried again), rather than a problem it found. */
const isConnectionTrouble = (error: { readonly _tag: string }): boolean =>
  isTransient(error) || error._tag === "CommandTimeout" || error._tag === "ChannelOpenFailed"

/** A problem preflight found: the host's, a runtime's or a placement's (their own tagged errors). */
type Problem = HostProblem | Runtimes.RuntimeError | Placements.PlacementError

/** A probe's value, or undefined with its problem recorded; connection trouble fails. */
const settle = <A, E extends Problem>(
  either: Either.Either<A, E>,
  problems: Array<Problem>
): Effect.Effect<A | undefined, E> => {
  if (Either.isRight(either)) return Effect.succeed(either.right)
  const error = either.left
  if (isConnectionTrouble(error)) return Effect.fail(error)
  problems.push(error)
  return Effect.succeed(undefined)
}

/** What to do about GPUs of this launch that other processes hold memory on. */
export type BusyGpuPolicy = "refuse" | "report" | "ignore"

/** The environment without the values whose names say secret (a flag dump needs `PYTHONPATH`, not a token). */
const withoutSecrets = (env: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(env).filter(([name]) => !Secrets.isSecretEnvName(name)))

/**
 * What an engine's `flags` reads an install's flags with: its version and fingerprint (as the
 * runtime located it) and a way to run its own parser (the runtime's command).
 *
 * @category flags
 */
export const flagsRequest = (
  conn: Connection,
  o: {
    readonly runtime: Runtime<Runtimes.RuntimeError>
    readonly located: Located
    readonly env: Readonly<Record<string, string>>
    readonly flagsFromHost: boolean
  }
): FlagsRequest => ({
  host: conn.host.alias,
  located: o.located,
  python: (code, timeout) =>
    conn.exec(
      o.runtime.command(o.located, {
        target: { code },
        shown: [],
        secrets: [],
        env: withoutSecrets(o.env),
        gpus: false,
        paths: noPaths
      }),
      { timeout }
    ),
  fromHost: o.flagsFromHost
})

/**
 * The flags of the engine as a runtime located it: shipped, cached, or read from its own parser
 * (run with the runtime's command); `flagsFromHost` reads the parser even for a shipped release.
 *
 * @category flags
 */
export const flagsOf = (
  conn: Connection,
  o: {
    readonly engine: Engine
    readonly runtime: Runtime<Runtimes.RuntimeError>
    readonly located: Located
    readonly env: Readonly<Record<string, string>>
    readonly flagsFromHost: boolean
  }
) => o.engine.flags(flagsRequest(conn, o))

/** Probe the host, check the placement and resolve the flags. */
export const run = Effect.fn("Launch.preflight")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    readonly runtime: Runtime<Runtimes.RuntimeError>
    /** Locating the engine (or the one already located). */
    readonly located: Effect.Effect<Located, Runtimes.RuntimeError>
    readonly placement: Placement<Placements.PlacementError>
    /** The deployment. */
    readonly name: string
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
    /** The hosts of the launch (its ranks across several): the argv's node count must not exceed it. Default 1. */
    readonly hosts?: number
  }
) {
  const host = conn.host.alias
  const engine = o.engine
  // the host's GPUs and port are the server's only when it runs on the host itself
  const onHost = o.placement.onHost
  const checkPort = onHost && o.checkPort !== false
  const policy = onHost ? (o.busyGpus ?? "refuse") : "ignore"
  const outcomes = yield* Effect.all(
    [
      Effect.either(o.located),
      Effect.either(onHost ? Probes.gpus(conn) : Effect.succeed([])),
      Effect.either(policy === "ignore" ? Effect.succeed([]) : Probes.gpuProcesses(conn)),
      Effect.either(checkPort ? Probes.portHolder(conn, o.port) : Effect.succeed(undefined)),
      Effect.either(readModelConfig(conn, o.modelPath))
    ],
    { concurrency: "unbounded" }
  )
  // in the fixed order: engine, GPUs and hosts, port, model, placement
  const engineProblems: Array<Problem> = []
  const gpuProblems: Array<Problem> = []
  const portProblems: Array<Problem> = []
  const modelProblems: Array<Problem> = []
  const placementProblems: Array<Problem> = []
  const located = yield* settle(outcomes[0], engineProblems)
  const gpus = yield* settle(outcomes[1], gpuProblems)
  const apps = yield* settle(outcomes[2], gpuProblems)
  const holder = yield* settle(outcomes[3], portProblems)
  const traits = yield* settle(outcomes[4], modelProblems)

  // the flags of that install: shipped with mlops, or read from its own parser
  const found =
    located === undefined
      ? undefined
      : yield* Effect.either(
          flagsOf(conn, {
            engine,
            runtime: o.runtime,
            located,
            env: o.env,
            flagsFromHost: o.flagsFromHost === true
          })
        )
  const match = found === undefined ? undefined : yield* settle(found, engineProblems)
  // the runtime's own checks (an image's CUDA against the driver, GPUs reachable through its tool)
  const ready =
    located === undefined
      ? undefined
      : yield* settle(yield* Effect.either(o.runtime.preflight(conn, located)), engineProblems)
  const flags = match ?? engine.latestFlags
  // flags that do not parse are a usage error, reported before anything about the host; when
  // another release's flags stood in, the error says why
  const decoded = yield* flags
    .decode(o.argv)
    .pipe(
      Effect.mapError((error) => (flags.warning === null ? error : ArgvErrors.noted(error, flags.warning)))
    )
  const plan = engine.gpusOf(decoded.args)

  // one host serves one rank: a multi-node command needs as many hosts as nodes
  const hosts = o.hosts ?? 1
  if (plan.nodes > hosts) {
    gpuProblems.push(
      new NotEnoughHosts({
        host,
        nodes: plan.nodes,
        hosts,
        fix: !onHost
          ? `ask the scheduler for ${plan.nodes} nodes (--nodes ${plan.nodes}; mlops writes --nnodes and each rank's flags), or drop --nnodes`
          : hosts === 1
            ? `run it on one node: ${plan.fewer(gpus === undefined || gpus.length === 0 ? plan.perNode : Math.min(plan.total, gpus.length))} without --nnodes, or give every node's host: mlops launch --hosts ${host},<other host>… (mlops writes --nnodes and each rank's flags)`
            : `give ${plan.nodes} hosts to --hosts, or drop --nnodes (mlops writes it from the hosts)`
      })
    )
  }
  let busyGpus: ReadonlyArray<GpuHolder> = []
  if (gpus !== undefined && onHost && plan.nodes <= hosts) {
    // across several hosts each runs its share
    const needed = plan.nodes > 1 ? plan.perNode : plan.total
    if (needed > gpus.length) {
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
  // the placement's own checks (a scheduler's partition, GPUs and time limit)
  // (not for a command this launch cannot run anyway: a one-node request of every node's GPUs
  // would only add a second, misleading problem)
  const placed = yield* Effect.either(
    plan.nodes > hosts
      ? Effect.succeed({ summary: undefined })
      : o.placement.preflight(conn, { name: o.name, gpus: plan, port: o.port })
  )
  if (Either.isLeft(placed)) {
    if (isConnectionTrouble(placed.left)) return yield* Effect.fail(placed.left)
    placementProblems.push(placed.left)
  }
  const problems: Array<Problem> = [
    ...engineProblems,
    ...gpuProblems,
    ...portProblems,
    ...modelProblems,
    ...placementProblems
  ]
  if (problems.length === 1) return yield* Effect.fail(problems[0]!)
  if (problems.length > 1) return yield* new HostNotReady({ host, problems })
  // no problem left means every probe answered
  if (
    located === undefined ||
    gpus === undefined ||
    match === undefined ||
    ready === undefined ||
    Either.isLeft(placed)
  ) {
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
    version: located.engineVersion
  })
  const facts: PreflightFacts = {
    python: located.interpreter,
    pythonVersion: located.pythonVersion,
    engine: engine.name,
    engineVersion: located.engineVersion,
    gpus: onHost ? gpus : undefined,
    port: o.port,
    portChecked: checkPort,
    placement: { description: o.placement.description, summary: placed.right.summary },
    runtime: { description: o.runtime.description, summary: ready.summary },
    model: { path: o.modelPath, architecture: traits?.architecture },
    busyGpus,
    flags: { version: match.version, source: match.source },
    rulesVerified: resolved.verified,
    warnings: [...ready.warnings, ...(match.warning === null ? [] : [match.warning])]
  }
  return { facts, resolved, flags: match, located } satisfies PreflightResult
})
