/**
 * The launch program: connect, idempotence, Python environment, preflight, spawn, follow,
 * readiness, auto-fix. Written as one Effect that reports progress into a mailbox;
 * `launchStream` exposes the mailbox as the `Stream` callers consume.
 *
 * Secrets: the request's argv is split once into the shown argv (`***` for secret values)
 * and its secrets. Everything the program emits, stores or fails with is built from the shown
 * argv; the real values are put back only into the server's command (`serverCommand`), and
 * environment values only ever travel in the command's environment.
 *
 * @internal
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as Tunnel from "@mlops/core/Tunnel"
import { Clock, Duration, Effect, Either, Fiber, Mailbox, Stream } from "effect"
import { applyFix, fixViolations } from "../../AutoFix.js"
import * as Deployment from "../../Deployment.js"
import type { Flags } from "../../Engine.js"
import type { LaunchFailure } from "../../Failures.js"
import * as Placement from "../../Placement.js"
import * as Placements from "../../Placements.js"
import * as Preflight from "../../Preflight.js"
import * as Readiness from "../../Readiness.js"
import type { Located } from "../../Runtime.js"
import * as Runtimes from "../../Runtimes.js"
import * as Secrets from "../../Secrets.js"
import * as ServerCommand from "../../ServerCommand.js"
import { LaunchRulesViolated } from "../../Violations.js"
import * as Workload from "../../Workload.js"
import { boundedCleanup } from "../cleanup.js"
import type { TimeToReady } from "../deploymentFiles.js"
import * as Existing from "./existing.js"
import * as Identity from "./identity.js"
import * as Monitor from "./monitor.js"
import * as MultiNode from "./multiNode.js"
import * as RemoteCheck from "./remoteCheck.js"
import * as Session from "./session.js"
import * as Spawn from "./spawn.js"
import { type LaunchError, type LaunchProgress, type LaunchRequest, NotHealthy } from "./types.js"

const run = (request: LaunchRequest, emit: (p: LaunchProgress) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const t0 = yield* Clock.currentTimeMillis
    // one cap for the whole launch, every attempt included
    const overallMs = Duration.toMillis(Duration.decode(request.overallTimeout ?? "30 minutes"))
    const deadline = t0 + overallMs
    const since = Effect.map(Clock.currentTimeMillis, (now) => now - t0)
    const pool = yield* ConnectionPool
    // the first connection must work: an unreachable host is reported at once
    const first = yield* pool.get(request.host)
    const host = first.host.alias
    const env = request.env ?? {}
    // where it runs and how the engine is found: chosen once, from the host's entry and the request
    const runtime = yield* Runtimes.resolve(first.host, request.runtime)
    const placement = yield* Placements.resolve(first.host, runtime.form, request.placement)
    const candidates = Identity.candidates(request)
    const session = yield* Session.make({
      alias: request.host,
      deadline,
      startedAt: t0,
      onDisconnected: (reason, elapsedMs) => emit({ _tag: "Disconnected", reason, elapsedMs }),
      onReconnected: (downMs, elapsedMs) => emit({ _tag: "Reconnected", downMs, elapsedMs })
    })
    // several engines: the first the runtime finds on the host (its choice is kept)
    const detected =
      candidates.length === 1
        ? { engine: candidates[0]!, located: undefined }
        : yield* session.run((conn) => runtime.locate(conn, { engines: candidates, env }))
    const engine = detected.engine
    const pathsOf = Identity.pathsOfEngine(engine)
    const { name, requested, secrets, digest, apiKey, port } = yield* Identity.identify(request, engine, env)
    yield* emit({ _tag: "Connected", host, name, elapsedMs: yield* since })
    // the runtime made usable first (an image pulled): what runs now is what a relaunch compares
    yield* session.run((conn) =>
      runtime.prepare(conn, (step) =>
        Effect.flatMap(since, (elapsedMs) => emit({ _tag: "Preparing", ...step, elapsedMs }))
      )
    )
    const install = yield* session.run((conn) => runtime.current(conn))

    // an existing deployment of this name: the same launch and healthy → return it
    const running = yield* session.run(
      (conn) =>
        Existing.check(conn, {
          engine,
          name,
          port,
          shown: requested,
          secrets,
          env,
          replace: request.replace === true,
          placement: placement.spec,
          runtime: runtime.spec,
          install,
          emit
        }),
      { retry: "write" }
    )
    if (running !== undefined) return running

    let argv = requested
    // the engine's own args record, seen by field from here on (what the files and events show)
    let effective: Readonly<Record<string, unknown>> | null = null
    let adjustments: ReadonlyArray<string> = []
    let flags: Flags = engine.latestFlags
    let fixesLeft = Math.max(0, request.autoFix ?? 0)
    const locate = (conn: Parameters<typeof runtime.locate>[0]) =>
      detected.located !== undefined
        ? Effect.succeed(detected.located)
        : Effect.map(runtime.locate(conn, { engines: [engine], env }), (found) => found.located)

    // a placement that spans nodes (a Slurm job across several) runs a rank on each: the engine
    // writes their flags, the head's address filled in where the job runs
    const ranksOf = (of: ReadonlyArray<string>) =>
      Placement.rankCommands(placement, engine.ranks, of, { name, port: request.rendezvousPort })

    // preflight + resolve (violations can be auto-fixed without spending an attempt); nothing is
    // written on the host before it passes
    const preflight = Effect.gen(function* () {
      for (;;) {
        const result = yield* Effect.either(
          session.run((conn) =>
            Preflight.run(conn, {
              engine,
              runtime,
              located: locate(conn),
              placement,
              name,
              argv: ranksOf(argv)[0],
              env,
              port,
              modelPath: engine.modelOf(argv) ?? "model",
              busyGpus: request.allowBusyGpus === true ? "report" : "refuse",
              flagsFromHost: request.flagsFromHost === true,
              hosts: placement.nodes
            })
          )
        )
        if (Either.isRight(result)) return result.right
        const error = result.left
        if (error instanceof LaunchRulesViolated && fixesLeft > 0) {
          const next = error.fixedArgv ?? fixViolations(error, argv, flags)
          if (next !== undefined) {
            fixesLeft--
            yield* emit({ _tag: "AttemptFailed", attempt: 0, failure: error, nextArgv: next })
            argv = next
            continue
          }
        }
        return yield* Effect.fail(error)
      }
    })
    let located: Located
    if (request.preflight !== false) {
      const result = yield* preflight
      located = result.located
      flags = result.flags
      effective = result.resolved.effective as Readonly<Record<string, unknown>>
      adjustments = result.resolved.logLines
      yield* emit({ _tag: "Python", python: located, elapsedMs: yield* since })
      yield* emit({ _tag: "Preflight", facts: result.facts, elapsedMs: yield* since })
      yield* emit({
        _tag: "Resolved",
        effective: Secrets.redactFields(effective, flags),
        adjustments,
        commandLine: ServerCommand.formatCommandLine(engine.command.shown, argv),
        rulesVerified: result.facts.rulesVerified
      })
      // the host's own validation: when asked, and by default where our rules are unverified
      const code = engine.remoteCheck
      if (code !== undefined && (request.remoteCheck ?? !result.facts.rulesVerified)) {
        yield* session.run((conn) =>
          RemoteCheck.run(conn, {
            engine,
            code,
            flags,
            runtime,
            located,
            shown: argv,
            secrets,
            env,
            paths: pathsOf(argv)
          })
        )
        yield* emit({
          _tag: "RemoteChecked",
          engine: engine.displayName,
          elapsedMs: yield* since,
          reason: request.remoteCheck === true ? "requested" : "rules-unverified"
        })
      }
    } else {
      // even unchecked, the engine has to be found to be started
      located = yield* session.run(locate)
      yield* emit({ _tag: "Python", python: located, elapsedMs: yield* since })
    }
    const engineVersion = located.engineVersion

    // spawn, follow, check readiness; on failure stop the server, keep the log, maybe fix
    for (let attempt = 1; ; attempt++) {
      const createdAt = yield* Clock.currentTimeMillis
      // the GPUs this attempt's flags need: a fix may change them, and then the placement checks
      // them again before anything is written (a scheduler's node must still fit them)
      const ranks = ranksOf(argv)
      const gpus = engine.gpusOf((yield* flags.decode(ranks[0])).args)
      if (attempt > 1 && request.preflight !== false) {
        yield* session.run((conn) => placement.preflight(conn, { name, gpus, port }))
      }
      const files = {
        argv: { argv: ranks[0], requestedArgv: requested },
        resolved: {
          effective: effective === null ? null : Secrets.redactFields(effective, flags),
          adjustments
        },
        meta: {
          name,
          port,
          engine: engine.name,
          engineVersion,
          placement: placement.spec,
          runtime: runtime.spec,
          python: located.interpreter,
          ...(located.runtime === runtime.spec.kind && install !== undefined
            ? { install: located.installId }
            : {}),
          envNames: Object.keys(env).sort(),
          secrets: digest,
          createdAt,
          mlopsVersion: Deployment.mlopsVersion,
          attempt
        }
      }
      const runnableOf = (shown: ReadonlyArray<string>) =>
        runtime.runnable(located, {
          target: { module: engine.command.module, leading: engine.command.leading },
          shown,
          secrets,
          env,
          flags,
          gpus: true,
          paths: pathsOf(argv)
        })
      const [rank0, ...others] = ranks
      const runnable = runnableOf(rank0)
      const spawned = yield* Spawn.start(session, {
        name,
        files,
        runnables: [runnable, ...others.map(runnableOf)],
        placement,
        gpus,
        paths: pathsOf(argv)
      })
      const proc = spawned.proc
      yield* emit({
        _tag: "Spawned",
        attempt,
        server: proc.server,
        runDir: proc.runDir,
        logPath: proc.logPath,
        commandLine: runnable.shown
      })
      // follow → ready line → HTTP checks; an interrupt anywhere here leaves the server running
      // unless stopOnInterrupt
      const stopServer = (grace?: Duration.DurationInput) =>
        Effect.ignore(session.run((conn) => proc.stop(conn, grace), { retry: "write" }))
      const readinessBudget = Duration.decode(request.readinessTimeout ?? Readiness.defaultBudget)
      // time to ready from the spawn, as sparkrun reports it: the port open, /health 200, a token
      const spawnedAt = yield* Clock.currentTimeMillis
      const reached = {
        portOpenMs: null as number | null,
        httpReadyMs: null as number | null,
        firstTokenMs: null as number | null
      }
      const sinceSpawn = Effect.map(Clock.currentTimeMillis, (now) => now - spawnedAt)
      const timeToReady = (): TimeToReady => ({ ...reached })
      // the server answers where its placement says, reached through the host (kept: the result's URL
      // and the tunnel use it)
      let answersAt: string | undefined
      let readinessFailed = false
      // from the spawn on: when the port is first seen listening on the host (a server placed
      // elsewhere, a scheduler's node, has none to look at); /health 200 and the token come from
      // readiness. A plain probe on the pool's connection: a failed one is not an outage here.
      // Spaced 250 ms doubling to 2 s: a model that loads for minutes costs one `ss` per 2 s.
      const pool = yield* ConnectionPool
      const portWatch = yield* Effect.fork(
        Effect.gen(function* () {
          if (!placement.onHost) return
          let pause = 250
          for (;;) {
            const holder = yield* Effect.either(
              Effect.flatMap(pool.get(host), (conn) => Probes.portHolder(conn, port)).pipe(
                Effect.timeout("10 seconds")
              )
            )
            if (holder._tag === "Right" && holder.right !== undefined) {
              reached.portOpenMs ??= yield* sinceSpawn
              return
            }
            yield* Effect.sleep(Duration.millis(pause))
            pause = Math.min(2000, pause * 2)
          }
        })
      )
      const readiness = Effect.flatMap(
        session.run((conn) => proc.address(conn)),
        (address) => {
          answersAt = address
          return Readiness.check(session.http(port, address), {
            host,
            name,
            startedAt: createdAt,
            deadline: session.deadline,
            budget: readinessBudget,
            overallMs,
            apiKey,
            requests: engine.readiness(argv),
            report: (endpoint, status, elapsedMs) =>
              Effect.gen(function* () {
                if (status === 200 && endpoint === "GET /health") {
                  // answering means listening (the watch's poll may not have seen it yet)
                  if (placement.onHost) reached.portOpenMs ??= yield* sinceSpawn
                  reached.httpReadyMs ??= yield* sinceSpawn
                }
                if (status === 200 && endpoint === Readiness.FIRST_TOKEN_ENDPOINT)
                  reached.firstTokenMs ??= yield* sinceSpawn
                yield* emit({ _tag: "HealthChecked", endpoint, status, elapsedMs })
              })
          }).pipe(
            Effect.mapError((error) =>
              error._tag === "NotHealthy" ? new NotHealthy({ ...error, timeToReady: timeToReady() }) : error
            )
          )
        }
      ).pipe(
        // the server is stopped once this failure has won (stopped here, its exit could win the race)
        Effect.tapError(() =>
          Effect.sync(() => {
            readinessFailed = true
          })
        )
      )
      const outcome = yield* Monitor.follow(session, proc, {
        workload: Workload.server(engine.logs, readiness),
        name,
        fromOffset: spawned.fromOffset,
        startedAt: createdAt,
        stallTimeout: Duration.decode(request.stallTimeout ?? "5 minutes"),
        overallMs,
        emit: (event, elapsedMs) => emit({ _tag: "Log", event, elapsedMs }),
        onState: (state, elapsedMs) =>
          emit({ _tag: "PlacementState", server: proc.server.label, state, elapsedMs })
      }).pipe(
        // the overall cap: the server is still starting, stop it like a stall
        Effect.tapErrorTag("LaunchTimedOut", () => stopServer("5 seconds")),
        Effect.tapError(() => (readinessFailed ? stopServer() : Effect.void)),
        Effect.onInterrupt(() =>
          request.stopOnInterrupt === true ? boundedCleanup(stopServer()) : Effect.void
        ),
        Effect.ensuring(Fiber.interrupt(portWatch))
      )
      if (outcome._tag === "Done") {
        const readyAt = yield* Clock.currentTimeMillis
        yield* session.run(
          (conn) =>
            Deployment.writeReady(conn, name, {
              readyAt,
              phases: outcome.phases,
              timeToReady: timeToReady()
            }),
          { retry: "write" }
        )
        const address = answersAt ?? (yield* session.run((conn) => proc.address(conn)))
        const deployment: Deployment.Deployment = {
          host,
          hosts: [host],
          name,
          server: proc.server,
          port,
          url: `http://${address}:${port}`,
          engine: engine.name,
          engineVersion,
          args: files.resolved.effective,
          argv,
          envNames: files.meta.envNames,
          phases: outcome.phases,
          startedAt: createdAt,
          readyAt,
          timeToReady: timeToReady(),
          runDir: proc.runDir,
          logPath: proc.logPath
        }
        return { deployment, address }
      }
      // Nothing may stay running; the log stays for diagnose/logs. After a crash follow has
      // already killed what was left; a stalled server still runs: TERM, then KILL.
      if (!outcome.exited) yield* stopServer("5 seconds")
      const next = fixesLeft > 0 ? applyFix(argv, outcome.failure.fix, flags) : undefined
      yield* emit({ _tag: "AttemptFailed", attempt, failure: outcome.reported, nextArgv: next })
      if (next === undefined) return yield* Effect.fail(outcome.reported)
      fixesLeft--
      argv = next
    }
  })

/** The launch as a stream of progress events ending with `Launched`. */
export const launchStream = (
  request: LaunchRequest
): Stream.Stream<LaunchProgress, LaunchError, ConnectionPool> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      // bounded: a consumer that stops reading holds the launch back instead of growing memory
      const mailbox = yield* Mailbox.make<LaunchProgress, LaunchError>({ capacity: 256, strategy: "suspend" })
      const emit = (p: LaunchProgress) => Effect.asVoid(mailbox.offer(p))
      const program = Effect.gen(function* () {
        // across several hosts: one rank on each
        const { deployment, address } = yield* request.hosts !== undefined && request.hosts.length > 1
          ? MultiNode.run(request, emit)
          : run(request, emit)
        if (request.tunnel !== true) {
          yield* emit({ _tag: "Launched", deployment })
          return
        }
        // keep the tunnel open until the consumer stops reading: to where its placement says the
        // server answers (its host's loopback, a compute node behind a login node)
        const pool = yield* ConnectionPool
        const conn = yield* pool.get(request.host)
        const listener = yield* Tunnel.listen(conn, deployment.port, address)
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
