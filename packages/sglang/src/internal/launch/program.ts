/**
 * The launch program: connect, preflight, idempotence, spawn, follow, readiness, auto-fix.
 * Written as one Effect that reports progress into a mailbox; `launchStream` exposes the
 * mailbox as the `Stream` callers consume.
 *
 * @internal
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as RemotePath from "@mlops/core/RemotePath"
import * as RemoteProcess from "@mlops/core/RemoteProcess"
import * as Tunnel from "@mlops/core/Tunnel"
import { Clock, Duration, Effect, Either, Mailbox, Stream } from "effect"
import * as Argv from "../../Argv.js"
import * as Catalogue from "../../Catalogue.js"
import * as Deployment from "../../Deployment.js"
import type { LaunchFailure } from "../../Failures.js"
import type { LaunchRulesViolated } from "../../Resolve.js"
import type { ServerArgs } from "../../ServerArgs.js"
import { defaultName, modelPathOf, portOf } from "./argvFacts.js"
import { applyFix, violationFix } from "./autofix.js"
import * as Existing from "./existing.js"
import * as Monitor from "./monitor.js"
import * as Preflight from "./preflight.js"
import * as Readiness from "./readiness.js"
import { InvalidDeploymentName, type LaunchError, type LaunchProgress, type LaunchRequest } from "./types.js"

const run = (request: LaunchRequest, emit: (p: LaunchProgress) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const t0 = yield* Clock.currentTimeMillis
    // one cap for the whole launch, every attempt included
    const overallMs = Duration.toMillis(Duration.decode(request.overallTimeout ?? "30 minutes"))
    const deadline = t0 + overallMs
    const since = Effect.map(Clock.currentTimeMillis, (now) => now - t0)
    const pool = yield* ConnectionPool
    const conn = yield* pool.get(request.host)
    const host = conn.host.alias
    const env = request.env ?? {}
    const name = request.name ?? defaultName(request.argv)
    if (!Deployment.isValidName(name)) {
      return yield* new InvalidDeploymentName({ name, fix: "use 1-64 letters, digits, '.', '_' or '-'" })
    }
    const python = request.python ?? conn.host.python ?? "~/ml-env"
    const interpreter = Probes.interpreterOf(python)
    const port = portOf(request.argv)
    yield* emit({ _tag: "Connected", host, name, elapsedMs: yield* since })

    // 8) an existing deployment of this name: same args + healthy → return it
    const running = yield* Existing.check(conn, { request, name, port, env, emit })
    if (running !== undefined) return running

    let argv = request.argv
    let effective: ServerArgs | null = null
    let adjustments: ReadonlyArray<string> = []
    let sglangVersion: string | null = null
    let catalogue = Catalogue.latest
    let fixesLeft = Math.max(0, request.autoFix ?? 0)

    // 2-3) preflight + resolve (violations can be auto-fixed without spending an attempt)
    const preflight = Effect.gen(function* () {
      for (;;) {
        const result = yield* Effect.either(
          Preflight.run(conn, {
            python,
            argv,
            env,
            port,
            modelPath: modelPathOf(argv),
            flagsFromHost: request.flagsFromHost === true
          })
        )
        if (Either.isRight(result)) return result.right
        const error = result.left
        if (error._tag === "LaunchRulesViolated" && fixesLeft > 0) {
          const next = error.fixedArgv ?? fixViolations(error, argv, catalogue)
          if (next !== undefined) {
            fixesLeft--
            yield* emit({ _tag: "AttemptFailed", attempt: 0, failure: error, nextArgv: next })
            argv = next
            continue
          }
        }
        return yield* error
      }
    })
    if (request.preflight !== false) {
      const result = yield* preflight
      catalogue = result.catalogue
      effective = result.resolved.effective
      adjustments = result.resolved.logLines
      sglangVersion = result.facts.sglangVersion
      yield* emit({ _tag: "Preflight", facts: result.facts, elapsedMs: yield* since })
      yield* emit({
        _tag: "Resolved",
        effective: result.resolved.effective,
        adjustments,
        commandLine: Argv.formatCommandLine(argv),
        rulesVerified: result.facts.rulesVerified
      })
      // the host's own validation: when asked, and by default where our rules are unverified
      if (request.remoteCheck ?? !result.facts.rulesVerified) {
        yield* Preflight.remoteCheck(conn, interpreter, argv, env)
        yield* emit({
          _tag: "RemoteChecked",
          elapsedMs: yield* since,
          reason: request.remoteCheck === true ? "requested" : "rules-unverified"
        })
      }
    }

    // 4-7) spawn, follow, check readiness; on failure stop the group, keep the log, maybe fix
    for (let attempt = 1; ; attempt++) {
      const createdAt = yield* Clock.currentTimeMillis
      const runDir = yield* Deployment.writeLaunchFiles(conn, name, {
        argv: { argv, requestedArgv: request.argv },
        resolved: { effective: effective as Record<string, unknown> | null, adjustments },
        meta: {
          name,
          port,
          sglangVersion,
          python,
          env,
          createdAt,
          mlopsVersion: Deployment.mlopsVersion,
          attempt
        }
      })
      const logPath = `${runDir}/log`
      // each spawn starts a fresh log (the previous one is kept as log.1) and clears `exit`
      const fromOffset = 0
      // the interpreter is a path mlops was given: `~/` is the remote home
      const command = RemoteCommand.make(
        [RemotePath.make(interpreter), "-m", "sglang.launch_server", ...argv],
        {
          env
        }
      )
      const proc = yield* RemoteProcess.spawnDetached(conn, command, { runDir, logPath })
      yield* emit({
        _tag: "Spawned",
        attempt,
        pid: proc.pid,
        pgid: proc.pgid,
        runDir,
        logPath,
        commandLine: Argv.formatCommandLine(argv, { program: [interpreter, "-m", "sglang.launch_server"] })
      })
      // follow → ready line → HTTP checks; an interrupt anywhere here leaves the server running
      // unless stopOnInterrupt
      const outcome = yield* Effect.gen(function* () {
        const followed = yield* Monitor.follow(conn, proc, {
          name,
          fromOffset,
          startedAt: createdAt,
          stallTimeout: Duration.decode(request.stallTimeout ?? "5 minutes"),
          deadline,
          overallMs,
          emit: (event, elapsedMs) => emit({ _tag: "Log", event, elapsedMs })
        })
        if (followed._tag === "Ready") {
          yield* Readiness.check(conn, {
            name,
            port,
            startedAt: createdAt,
            report: (endpoint, status, elapsedMs) =>
              emit({ _tag: "HealthChecked", endpoint, status, elapsedMs })
          }).pipe(Effect.tapError(() => Effect.ignore(RemoteProcess.stop(conn, proc))))
        }
        return followed
      }).pipe(
        // the overall cap: the server is still starting, stop it like a stall
        Effect.tapErrorTag("LaunchTimedOut", () =>
          Effect.ignore(RemoteProcess.stop(conn, proc, { grace: "5 seconds" }))
        ),
        Effect.onInterrupt(() =>
          request.stopOnInterrupt === true ? Effect.ignore(RemoteProcess.stop(conn, proc)) : Effect.void
        )
      )
      if (outcome._tag === "Ready") {
        const readyAt = yield* Clock.currentTimeMillis
        yield* Deployment.writeReady(conn, name, { readyAt, phases: outcome.phases })
        const deployment: Deployment.Deployment = {
          host,
          name,
          pid: proc.pid,
          pgid: proc.pgid,
          port,
          url: `http://127.0.0.1:${port}`,
          sglangVersion,
          args: effective,
          argv,
          env,
          phases: outcome.phases,
          startedAt: createdAt,
          readyAt,
          runDir,
          logPath
        }
        return deployment
      }
      // Nothing may stay running; the log stays for diagnose/logs. After a crash follow has
      // already killed what was left; a stalled server still runs: TERM, then KILL.
      if (!outcome.exited) yield* Effect.ignore(RemoteProcess.stop(conn, proc, { grace: "5 seconds" }))
      const next = fixesLeft > 0 ? applyFix(argv, outcome.failure.fix, catalogue) : undefined
      yield* emit({ _tag: "AttemptFailed", attempt, failure: outcome.failure, nextArgv: next })
      if (next === undefined) return yield* outcome.failure
      fixesLeft--
      argv = next
    }
  })

const fixViolations = (
  error: LaunchRulesViolated,
  argv: ReadonlyArray<string>,
  catalogue: Catalogue.Catalogue
): ReadonlyArray<string> | undefined => {
  let next: ReadonlyArray<string> | undefined = argv
  for (const violation of error.violations) {
    const patched: ReadonlyArray<string> | undefined = applyFix(
      next,
      violationFix(violation, catalogue),
      catalogue
    )
    if (patched !== undefined) next = patched
  }
  return next === argv ? undefined : next
}

/** The launch as a stream of progress events ending with `Launched`. */
export const launchStream = (
  request: LaunchRequest
): Stream.Stream<LaunchProgress, LaunchError, ConnectionPool> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const mailbox = yield* Mailbox.make<LaunchProgress, LaunchError>()
      const emit = (p: LaunchProgress) => Effect.asVoid(mailbox.offer(p))
      const program = Effect.gen(function* () {
        const deployment = yield* run(request, emit)
        if (request.tunnel !== true) {
          yield* emit({ _tag: "Launched", deployment })
          return
        }
        // keep the tunnel open until the consumer stops reading
        const pool = yield* ConnectionPool
        const conn = yield* pool.get(request.host)
        const listener = yield* Tunnel.listen(conn, deployment.port)
        yield* emit({ _tag: "Launched", deployment: { ...deployment, url: listener.url } })
        return yield* Effect.never
      }).pipe(Effect.scoped)
      yield* program.pipe(
        Effect.exit,
        Effect.flatMap((exit) => mailbox.done(exit)),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )

export type { LaunchFailure }
export { defaultName }
