/**
 * One deployment across several hosts (`LaunchRequest.hosts`): the argv is the whole
 * deployment's, each host runs one rank of it with the rank flags the engine writes
 * (`Engine.ranks`: node count, node rank, rendezvous), so the ranks are identical by
 * construction.
 *
 * Steps: connect to every host → the hosts checked against each other (`MultiNodePreflight`:
 * installs, model, GPUs per node, the rendezvous port tried from the hosts themselves, clocks)
 * → each host's own preflight with its rank's argv (engine, GPUs, model; the HTTP port on rank
 * 0's), every problem of every host at once → the rules resolved once, on rank 0's → every rank
 * spawned → every rank followed at once through the classifier: rank 0 to ready (as on one
 * host), the others until then; the first rank that dies or stalls ends the deployment: every
 * rank stopped, GPU memory confirmed free on every host, and `RankFailed` names the rank, its
 * host and its own failure. A failure that is only a consequence of another rank's (a
 * distributed error) gives way to a root cause another rank reports within a second.
 *
 * Auto-fix applies a rank's fix to the deployment's flags and starts every rank again; the
 * host's own argument check runs on rank 0's host. From an image, each host prepares its own
 * (pulls it when its policy says so) and the cross-node check holds every rank to one image id.
 * Placements that run the server off the host are not given hosts: a scheduler's job spans
 * its nodes itself (a Slurm job's `--nodes`, one allocation), launched from its login node.
 *
 * @internal
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import { Clock, Duration, Effect, Either, Fiber, Queue, Ref } from "effect"
import { applyFix } from "../../AutoFix.js"
import * as Deployment from "../../Deployment.js"
import { type LaunchFailure, renderFix } from "../../Failures.js"
import * as MultiNodePreflight from "../../MultiNodePreflight.js"
import type * as Placement from "../../Placement.js"
import * as Placements from "../../Placements.js"
import * as Preflight from "../../Preflight.js"
import * as Readiness from "../../Readiness.js"
import * as Runtimes from "../../Runtimes.js"
import * as Secrets from "../../Secrets.js"
import * as ServerCommand from "../../ServerCommand.js"
import * as Stop from "../../Stop.js"
import * as Workload from "../../Workload.js"
import { boundedCleanup } from "../cleanup.js"
import type { TimeToReady } from "../deploymentFiles.js"
import * as Existing from "./existing.js"
import * as Identity from "./identity.js"
import * as Monitor from "./monitor.js"
import * as RemoteCheck from "./remoteCheck.js"
import * as Session from "./session.js"
import * as Spawn from "./spawn.js"
import {
  DeploymentExists,
  InvalidHosts,
  type LaunchProgress,
  type LaunchRequest,
  LaunchTimedOut,
  NotHealthy,
  RankFailed
} from "./types.js"

/** Where rendezvous ports are looked for on rank 0's host when none is given (torch's default first). */
const RENDEZVOUS_PORTS = { from: 29500, count: 100 }

/** How long a consequence (a distributed error) waits for another rank's root cause. */
const ROOT_CAUSE_WINDOW = Duration.seconds(1)

/** Failures that are usually another rank's consequence (a peer gone, a collective broken). */
const consequence = (failure: LaunchFailure): boolean =>
  failure._tag === "DistributedError" || failure._tag === "StartupStalled"

/** The hosts as given: at least two, none twice, rank 0's the request's `host`. */
const validHosts = (request: LaunchRequest, hosts: ReadonlyArray<string>) => {
  const fail = (reason: string, fix: string) => Effect.fail(new InvalidHosts({ hosts, reason, fix }))
  const twice = hosts.find((h, i) => hosts.indexOf(h) !== i)
  if (twice !== undefined)
    return fail(`${twice} is given twice`, "give each host once: one rank runs on each")
  if (hosts[0] !== request.host)
    return fail(
      `rank 0's host is ${hosts[0]} but the launch's host is ${request.host}`,
      `put ${request.host} first in --hosts, or leave --host out`
    )
  return Effect.void
}

/** A free port on the host from `from` up (what `ss` shows listening). */
const freePort = (conn: Parameters<typeof Probes.portHolder>[0]) =>
  Effect.gen(function* () {
    for (let port = RENDEZVOUS_PORTS.from; port < RENDEZVOUS_PORTS.from + RENDEZVOUS_PORTS.count; port++) {
      if ((yield* Probes.portHolder(conn, port)) === undefined) return port
    }
    return RENDEZVOUS_PORTS.from
  })

/**
 * The hosts' answers to one step: one host's failure as it is, several as `CrossNodeProblems`
 * naming each host (every problem at once).
 */
const oneOrAll = <A, E extends { readonly _tag: string; readonly message: string }>(
  hosts: ReadonlyArray<string>,
  answers: ReadonlyArray<Either.Either<A, E>>
): Effect.Effect<void, E | MultiNodePreflight.CrossNodeProblems> => {
  const refused = answers.flatMap((a, rank) => (Either.isLeft(a) ? [{ rank, error: a.left }] : []))
  if (refused.length === 1) return Effect.fail(refused[0]!.error)
  if (refused.length === 0) return Effect.void
  return Effect.fail(
    new MultiNodePreflight.CrossNodeProblems({
      hosts,
      problems: refused.map(({ rank, error }) => ({
        kind: error._tag,
        host: hosts[rank]!,
        text: error.message,
        fix: "fix" in error && typeof error.fix === "string" ? error.fix : "see the problem above"
      }))
    })
  )
}

type Outcome = { readonly rank: number; readonly outcome: Monitor.Outcome<Placements.PlacementError> }

export const run = (request: LaunchRequest, emit: (p: LaunchProgress) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const hosts = request.hosts ?? [request.host]
    yield* validHosts(request, hosts)
    const t0 = yield* Clock.currentTimeMillis
    const overallMs = Duration.toMillis(Duration.decode(request.overallTimeout ?? "30 minutes"))
    const deadline = t0 + overallMs
    const since = Effect.map(Clock.currentTimeMillis, (now) => now - t0)
    const pool = yield* ConnectionPool
    const env = request.env ?? {}
    // every host must answer before anything else
    const conns = yield* Effect.forEach(hosts, (h) => pool.get(h), { concurrency: "unbounded" })
    const nodes = yield* Effect.forEach(conns, (conn) =>
      Effect.gen(function* () {
        const runtime = yield* Runtimes.resolve(conn.host, request.runtime)
        const placement = yield* Placements.resolve(conn.host, runtime.form, request.placement)
        return { conn, host: conn.host.alias, runtime, placement }
      })
    )
    const elsewhere = nodes.find((n) => !n.placement.onHost)
    if (elsewhere !== undefined) {
      return yield* new InvalidHosts({
        hosts,
        reason: `${elsewhere.host} places the server off the host (${elsewhere.placement.description}), and a rank per host needs each rank on its host`,
        fix: `give SSH hosts that run their ranks themselves (a plain host or a container on it); for a Slurm cluster, launch from its login node alone with --nodes ${hosts.length} (one job across ${hosts.length} nodes)`
      })
    }
    const head = nodes[0]!
    const candidates = Identity.candidates(request)
    const engine =
      candidates.length === 1
        ? candidates[0]!
        : (yield* head.runtime.locate(head.conn, { engines: candidates, env })).engine
    const { name, requested, secrets, digest, apiKey, port } = yield* Identity.identify(request, engine, env)
    yield* emit({ _tag: "Connected", host: head.host, name, elapsedMs: yield* since })

    const sessions = yield* Effect.forEach(nodes, (n, rank) =>
      Session.make({
        alias: n.host,
        deadline,
        startedAt: t0,
        onDisconnected: (reason, elapsedMs) =>
          emit({ _tag: "Disconnected", reason, elapsedMs, rank: { rank, host: n.host } }),
        onReconnected: (downMs, elapsedMs) =>
          emit({ _tag: "Reconnected", downMs, elapsedMs, rank: { rank, host: n.host } })
      })
    )

    // each host's runtime made usable first (its image pulled there): every problem of every host at once
    const prepared = yield* Effect.forEach(
      nodes,
      (n, rank) =>
        Effect.either(
          sessions[rank]!.run((conn) =>
            Effect.zipRight(
              n.runtime.prepare(conn, (step) =>
                Effect.flatMap(since, (elapsedMs) =>
                  emit({ _tag: "Preparing", ...step, elapsedMs, rank: { rank, host: n.host } })
                )
              ),
              n.runtime.current(conn)
            )
          )
        ),
      { concurrency: "unbounded" }
    )
    yield* oneOrAll(hosts, prepared)
    const installs = prepared.map((p) => (Either.isRight(p) ? p.right : undefined))

    // the same launch on the same hosts, every rank running: it is the result (as on one host)
    const recorded = yield* sessions[0]!.run((conn) => Deployment.read(conn, name))
    if (
      request.replace !== true &&
      recorded?.ranks !== undefined &&
      JSON.stringify(recorded.ranks.hosts) === JSON.stringify(hosts)
    ) {
      const running = yield* sessions[0]!.run((conn) =>
        Existing.check(conn, {
          engine,
          name,
          port,
          shown: requested,
          secrets,
          env,
          replace: false,
          placement: head.placement.spec,
          runtime: head.runtime.spec,
          install: installs[0],
          hosts,
          // said once every rank is seen running
          emit: (e) => (e._tag === "AlreadyRunning" ? Effect.void : emit(e))
        })
      )
      if (running !== undefined) {
        const ranksOf = recorded.ranks
        const down = yield* Effect.forEach(nodes.slice(1), (n, i) =>
          sessions[i + 1]!.run((conn) =>
            Effect.gen(function* () {
              // this deployment's rank there, not another of the same name
              const state = yield* Deployment.readRank(conn, name, ranksOf, i + 1)
              const placed =
                state === undefined ? undefined : (yield* Placements.ofDeployment(conn, state)).placed
              return placed !== undefined && (yield* placed.isAlive(conn))
                ? []
                : [`rank ${i + 1} on ${n.host}`]
            })
          )
        ).pipe(Effect.map((lists) => lists.flat()))
        if (down.length === 0) {
          yield* emit({ _tag: "AlreadyRunning", deployment: running.deployment })
          return running
        }
        return yield* new DeploymentExists({
          host: head.host,
          name,
          server: running.deployment.server.label,
          reason: `${down.join(", ")} ${down.length === 1 ? "is" : "are"} not running`,
          runningArgv: running.deployment.argv,
          fix: `pass replace (--replace) to start every rank again, or stop it (mlops stop --host ${head.host} --name ${name})`
        })
      }
    }

    // a deployment of this name running on any of the hosts: replaced when asked (every rank
    // of it, wherever its record says they run), else refused
    // every host asked at once, then each one that has it handled in rank order
    const running = yield* Effect.forEach(
      nodes,
      (_, i) =>
        sessions[i]!.run((conn) =>
          Effect.gen(function* () {
            const state = yield* Deployment.read(conn, name)
            if (state === undefined) return undefined
            const { placed } = yield* Placements.ofDeployment(conn, state)
            return placed !== undefined && (yield* placed.isAlive(conn)) ? { state, placed } : undefined
          })
        ),
      { concurrency: "unbounded" }
    )
    const replaced = new Set<string>()
    for (const [i, n] of nodes.entries()) {
      const found = running[i]
      // a rank of a deployment already replaced here
      if (found === undefined || replaced.has(n.host)) continue
      if (request.replace !== true) {
        return yield* new DeploymentExists({
          host: n.host,
          name,
          server: found.placed.server.label,
          reason: "a deployment of this name runs there",
          runningArgv: found.state.argv?.argv ?? [],
          fix: `stop it first (mlops stop --host ${n.host} --name ${name}) or pass --replace`
        })
      }
      const stopped = yield* Stop.stop(n.host, name).pipe(
        // gone meanwhile: nothing left to replace
        Effect.catchTag("DeploymentNotFound", () => Effect.succeed(undefined))
      )
      if (stopped === undefined) continue
      for (const r of stopped.ranks) replaced.add(r.host)
      yield* emit({
        _tag: "Replacing",
        name,
        server: stopped.ranks.map((r) => `${r.server.label} on ${r.host}`).join(", "),
        outcome: stopped.outcome
      })
    }

    // the hosts against each other, then each host with its own rank's command
    const rendezvousPort =
      request.rendezvousPort ??
      (yield* sessions[0]!
        .run(freePort)
        // no answer in time: torch's default, which the rendezvous probe then tries
        .pipe(
          Effect.timeoutTo({
            duration: "60 seconds",
            onTimeout: () => RENDEZVOUS_PORTS.from,
            onSuccess: (p) => p
          })
        ))
    const plannedWith = (argv: ReadonlyArray<string>, address: string) =>
      engine.ranks(argv, { nodes: hosts.length, head: address, port: rendezvousPort })
    const checked = yield* MultiNodePreflight.run({
      hosts,
      engines: [engine],
      argv: plannedWith(requested, "0.0.0.0")[0]!,
      env,
      rendezvousPort,
      ...(request.runtime === undefined ? {} : { runtime: request.runtime })
    })
    const rankArgv = plannedWith(requested, checked.headAddress)
    yield* emit({
      _tag: "RanksPlanned",
      hosts,
      rendezvous: { address: checked.headAddress, port: rendezvousPort },
      suggestions: checked.suggestions,
      elapsedMs: yield* since
    })
    const modelPath = engine.modelOf(requested) ?? "model"
    const paths = Identity.pathsOfEngine(engine)(requested)
    const preflights = yield* Effect.forEach(
      nodes,
      (n, rank) =>
        Effect.either(
          sessions[rank]!.run((conn) =>
            Preflight.run(conn, {
              engine,
              runtime: n.runtime,
              // found already by the cross-node check
              located: Effect.succeed(checked.installs[rank]!),
              placement: n.placement,
              name,
              argv: rankArgv[rank]!,
              env,
              port,
              modelPath,
              // only rank 0 serves HTTP
              checkPort: rank === 0,
              busyGpus: request.allowBusyGpus === true ? "report" : "refuse",
              flagsFromHost: request.flagsFromHost === true,
              hosts: hosts.length
            })
          )
        ),
      { concurrency: "unbounded" }
    )
    yield* oneOrAll(hosts, preflights)
    const results = preflights.flatMap((p) => (Either.isRight(p) ? [p.right] : []))
    const first = results[0]!
    yield* emit({ _tag: "Python", python: first.located, elapsedMs: yield* since })
    yield* emit({ _tag: "Preflight", facts: first.facts, elapsedMs: yield* since })
    yield* emit({
      _tag: "Resolved",
      effective: Secrets.redactFields(
        first.resolved.effective as Readonly<Record<string, unknown>>,
        first.flags
      ),
      adjustments: first.resolved.logLines,
      commandLine: ServerCommand.formatCommandLine(engine.command.shown, rankArgv[0]!),
      rulesVerified: first.facts.rulesVerified
    })

    // the host's own validation of rank 0's command: when asked, and by default where our rules are unverified
    const code = engine.remoteCheck
    if (code !== undefined && (request.remoteCheck ?? !first.facts.rulesVerified)) {
      yield* sessions[0]!.run((conn) =>
        RemoteCheck.run(conn, {
          engine,
          code,
          flags: first.flags,
          runtime: head.runtime,
          located: first.located,
          shown: rankArgv[0]!,
          secrets,
          env,
          paths
        })
      )
      yield* emit({
        _tag: "RemoteChecked",
        engine: engine.displayName,
        elapsedMs: yield* since,
        reason: request.remoteCheck === true ? "requested" : "rules-unverified"
      })
    }

    let argv = requested
    let ranksNow = rankArgv
    let fixesLeft = Math.max(0, request.autoFix ?? 0)
    for (let attempt = 1; ; attempt++) {
      // every rank started; one that cannot be leaves none running
      const createdAt = yield* Clock.currentTimeMillis
      const flags = first.flags
      const gpus = engine.gpusOf((yield* flags.decode(ranksNow[0]!)).args)
      const effective = Secrets.redactFields(
        first.resolved.effective as Readonly<Record<string, unknown>>,
        flags
      )
      const spawnRank = (rank: number) =>
        Effect.gen(function* () {
          const n = nodes[rank]!
          const located = results[rank]!.located
          const rankFlags = ranksNow[rank]!
          const spawned = yield* Spawn.start(sessions[rank]!, {
            name,
            files: {
              // the request as given (a relaunch of it is this deployment); the ranks file has the flags as started
              argv: { argv: rankFlags, requestedArgv: requested },
              resolved: { effective, adjustments: first.resolved.logLines },
              meta: {
                name,
                port,
                engine: engine.name,
                engineVersion: located.engineVersion,
                placement: n.placement.spec,
                runtime: n.runtime.spec,
                python: located.interpreter,
                ...(located.runtime === n.runtime.spec.kind && installs[rank] !== undefined
                  ? { install: located.installId }
                  : {}),
                envNames: Object.keys(env).sort(),
                secrets: digest,
                createdAt,
                mlopsVersion: Deployment.mlopsVersion,
                attempt
              },
              ranks: { hosts, rank, rendezvous: { address: checked.headAddress, port: rendezvousPort }, argv }
            },
            runnables: [
              n.runtime.runnable(located, {
                target: { module: engine.command.module, leading: engine.command.leading },
                shown: rankFlags,
                secrets,
                env,
                flags: results[rank]!.flags,
                gpus: true,
                paths
              })
            ],
            placement: n.placement,
            gpus,
            paths
          })
          yield* emit({
            _tag: "Spawned",
            rank: { rank, host: n.host },
            attempt,
            server: spawned.proc.server,
            runDir: spawned.proc.runDir,
            logPath: spawned.proc.logPath,
            commandLine: ServerCommand.formatCommandLine(engine.command.shown, rankFlags)
          })
          return spawned
        })
      // a fix may change the GPUs each host needs: the placements check them again
      if (attempt > 1) {
        yield* Effect.forEach(
          nodes,
          (n, rank) => sessions[rank]!.run((conn) => n.placement.preflight(conn, { name, gpus, port })),
          { concurrency: "unbounded", discard: true }
        )
      }
      // what has started so far: a partial set never becomes ready, so an interruption stops it
      const live: Array<{
        readonly rank: number
        readonly proc: Placement.Placed<Placements.PlacementError>
      }> = []
      const started = yield* Effect.forEach(
        nodes,
        (_, rank) =>
          Effect.either(
            spawnRank(rank).pipe(
              Effect.tap((spawned) => Effect.sync(() => live.push({ rank, proc: spawned.proc })))
            )
          ),
        { concurrency: "unbounded" }
      ).pipe(
        Effect.onInterrupt(() =>
          boundedCleanup(
            Effect.forEach(live, ({ rank, proc }) => stopRank(sessions[rank]!, proc, false), {
              concurrency: "unbounded",
              discard: true
            })
          )
        )
      )
      const procs = started.flatMap((s) => (Either.isRight(s) ? [s.right.proc] : []))
      const stopAll = (exited: ReadonlySet<number>) =>
        Effect.forEach(
          started,
          (s, rank) =>
            Either.isLeft(s)
              ? Effect.succeed(`rank ${rank} on ${hosts[rank]}: not started`)
              : stopRank(sessions[rank]!, s.right.proc, exited.has(rank)).pipe(
                  Effect.map((how) => `rank ${rank} on ${hosts[rank]}: ${how}`)
                ),
          { concurrency: "unbounded" }
        )
      for (const s of started) {
        if (Either.isLeft(s)) {
          yield* boundedCleanup(stopAll(new Set()))
          return yield* Effect.fail(s.left)
        }
      }
      const proc0 = procs[0]!

      // follow every rank at once: rank 0 to ready, the others until then
      const spawnedAt = yield* Clock.currentTimeMillis
      const reached = {
        portOpenMs: null as number | null,
        httpReadyMs: null as number | null,
        firstTokenMs: null as number | null
      }
      const sinceSpawn = Effect.map(Clock.currentTimeMillis, (now) => now - spawnedAt)
      const timeToReady = (): TimeToReady => ({ ...reached })
      let answersAt: string | undefined
      const readiness = Effect.flatMap(
        sessions[0]!.run((conn) => proc0.address(conn)),
        (address) => {
          answersAt = address
          return Readiness.check(sessions[0]!.http(port, address), {
            host: head.host,
            name,
            startedAt: createdAt,
            deadline,
            budget: Duration.decode(request.readinessTimeout ?? Readiness.defaultBudget),
            overallMs,
            apiKey,
            requests: engine.readiness(ranksNow[0]!),
            report: (endpoint, status, elapsedMs) =>
              Effect.gen(function* () {
                if (status === 200 && endpoint === "GET /health") {
                  reached.portOpenMs ??= yield* sinceSpawn
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
      )
      const stallTimeout = Duration.decode(request.stallTimeout ?? "5 minutes")
      const followRank = (proc: Placement.Placed<Placements.PlacementError>, rank: number) =>
        Monitor.follow(sessions[rank]!, proc, {
          workload: rank === 0 ? Workload.server(engine.logs, readiness) : Workload.rank(engine.logs),
          name,
          fromOffset: 0,
          startedAt: createdAt,
          // the other ranks are silent once loaded, while rank 0 warms up: only rank 0 can stall,
          // and only when no rank has made progress (rank 0 waits at a barrier while another loads)
          stallTimeout: rank === 0 ? stallTimeout : Duration.infinity,
          sharedProgress: progress,
          overallMs,
          emit: (event, elapsedMs) =>
            emit({ _tag: "Log", event, elapsedMs, rank: { rank, host: hosts[rank]! } }),
          onState: (state, elapsedMs) =>
            emit({
              _tag: "PlacementState",
              rank: { rank, host: hosts[rank]! },
              server: proc.server.label,
              state,
              elapsedMs
            })
        }).pipe(Effect.map((outcome): Outcome => ({ rank, outcome })))
      const progress = yield* Ref.make(createdAt)
      type Ended = Either.Either<Outcome, Effect.Effect.Error<ReturnType<typeof followRank>>>
      const ended = yield* Queue.unbounded<Ended>()
      const fibers = yield* Effect.forEach(procs, (proc, rank) =>
        followRank(proc, rank).pipe(
          Effect.either,
          Effect.flatMap((result) => Queue.offer(ended, result)),
          Effect.fork
        )
      )
      const interruptAll = Fiber.interruptAll(fibers)
      // rank 0 ready is the deployment ready only once every other rank is seen running (a host
      // that cannot be reached is waited for, within the launch's deadline): a rank that died
      // meanwhile reports its failure through its own follow
      const othersRunning = Effect.forEach(
        procs.slice(1),
        (proc, i) => sessions[i + 1]!.run((conn) => proc.isAlive(conn)),
        { concurrency: "unbounded" }
      ).pipe(
        Effect.map((alive) => alive.every((a) => a)),
        Effect.timeoutFail({
          duration: "2 minutes",
          onTimeout: () =>
            new LaunchTimedOut({
              host: hosts.slice(1).join(", "),
              name,
              timeoutMs: 120_000,
              phase: "ready",
              fix: "rank 0 is ready but the other ranks' hosts did not answer: check them (mlops status), then launch again"
            })
        })
      )
      const firstEnd = yield* Effect.gen(function* () {
        for (;;) {
          const next = yield* Queue.take(ended)
          if (Either.isLeft(next) || next.right.outcome._tag !== "Done") return next
          const running = yield* Effect.either(othersRunning)
          if (Either.isLeft(running)) {
            // the others cannot be told running: nothing stays up half-known
            yield* interruptAll
            yield* boundedCleanup(stopAll(new Set()))
            return yield* Effect.fail(running.left)
          }
          if (running.right) return next
          // rank 0 stays ready; wait for the dead rank's own verdict
        }
      }).pipe(
        Effect.onInterrupt(() =>
          Effect.zipRight(
            interruptAll,
            request.stopOnInterrupt === true ? Effect.ignore(boundedCleanup(stopAll(new Set()))) : Effect.void
          )
        )
      )
      if (Either.isRight(firstEnd) && firstEnd.right.outcome._tag === "Done") {
        yield* interruptAll
        const readyAt = yield* Clock.currentTimeMillis
        const phases = firstEnd.right.outcome.phases
        yield* sessions[0]!.run(
          (conn) => Deployment.writeReady(conn, name, { readyAt, phases, timeToReady: timeToReady() }),
          { retry: "write" }
        )
        const address = answersAt ?? (yield* sessions[0]!.run((conn) => proc0.address(conn)))
        const deployment: Deployment.Deployment = {
          host: head.host,
          hosts,
          name,
          server: proc0.server,
          port,
          url: `http://${address}:${port}`,
          engine: engine.name,
          engineVersion: first.located.engineVersion,
          args: effective,
          // the deployment's flags (each rank adds its own place to them)
          argv,
          envNames: Object.keys(env).sort(),
          phases,
          startedAt: createdAt,
          readyAt,
          timeToReady: timeToReady(),
          runDir: proc0.runDir,
          logPath: proc0.logPath
        }
        return { deployment, address }
      }
      // a rank failed: a consequence waits briefly for another rank's root cause
      // from here the deployment has failed: an interruption still stops every rank
      const failures: Array<Ended> = [firstEnd]
      const isConsequence = (e: Ended) =>
        Either.isRight(e) && e.right.outcome._tag === "Failed" && consequence(e.right.outcome.failure)
      if (isConsequence(firstEnd)) {
        // every other verdict within the window (with three hosts or more, several consequences may come first)
        yield* Effect.gen(function* () {
          const until = (yield* Clock.currentTimeMillis) + Duration.toMillis(ROOT_CAUSE_WINDOW)
          for (;;) {
            const left = until - (yield* Clock.currentTimeMillis)
            if (left <= 0) return
            const more = yield* Queue.take(ended).pipe(Effect.timeout(Duration.millis(left)), Effect.option)
            if (more._tag === "None") return
            failures.push(more.value)
          }
        }).pipe(
          Effect.onInterrupt(() =>
            Effect.zipRight(interruptAll, Effect.ignore(boundedCleanup(stopAll(new Set()))))
          )
        )
      }
      yield* interruptAll
      const failed = failures.filter((f) => Either.isRight(f) && f.right.outcome._tag === "Failed")
      const root = failed.find((f) => !isConsequence(f)) ?? failed[0] ?? firstEnd
      const exited = new Set(
        failures.flatMap((f) =>
          Either.isRight(f) && f.right.outcome._tag === "Failed" && f.right.outcome.exited
            ? [f.right.rank]
            : []
        )
      )
      const stopped = yield* boundedCleanup(stopAll(exited))
      if (Either.isLeft(root)) return yield* Effect.fail(root.left)
      const { rank, outcome } = root.right
      if (outcome._tag !== "Failed") return yield* Effect.dieMessage("a rank ended done without being rank 0")
      // auto-fix: the failure's fix applied to the deployment's flags, every rank started again
      const next = fixesLeft > 0 ? applyFix(argv, outcome.failure.fix, flags) : undefined
      yield* emit({
        _tag: "AttemptFailed",
        attempt,
        rank: { rank, host: hosts[rank]! },
        failure: outcome.reported,
        nextArgv: next
      })
      if (next !== undefined) {
        fixesLeft--
        argv = next
        ranksNow = plannedWith(argv, checked.headAddress)
        continue
      }
      return yield* new RankFailed({
        name,
        rank,
        host: hosts[rank]!,
        hosts,
        failure: outcome.failure,
        stopped,
        fix:
          outcome.failure.fix === undefined
            ? `read rank ${rank}'s log: mlops logs --host ${hosts[0]} --name ${name} --rank ${rank}`
            : renderFix(outcome.failure.fix)
      })
    }
  })

/** Stop one rank: KILL what is left of one that exited, TERM (then KILL) one still running; its GPUs confirmed free. */
const stopRank = (
  session: Session.Session,
  proc: Placement.Placed<Placements.PlacementError>,
  exited: boolean
) =>
  session
    .run(
      (conn) =>
        Effect.gen(function* () {
          // the stop happens whether or not its GPUs can be watched
          const release = yield* Effect.either(proc.gpuRelease(conn))
          const how = exited ? yield* proc.kill(conn) : yield* proc.stop(conn, "5 seconds")
          if (Either.isLeft(release)) return `${how}, GPUs not confirmed (${release.left.message})`
          const held = yield* release.right.confirm("10 seconds")
          return held === undefined
            ? `${how}, GPUs free`
            : `${how}, but pid(s) ${held.pids.join(", ")} still hold ${held.usedMiB} MiB`
        }),
      { retry: "write" }
    )
    .pipe(
      Effect.timeout("60 seconds"),
      Effect.catchAll((error) => Effect.succeed(`could not be confirmed stopped (${error.message})`))
    )
