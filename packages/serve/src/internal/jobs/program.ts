/**
 * The job program: connect, name, sync, record, start behind the host's waiter, follow to the
 * exit. Written as one Effect reporting into a mailbox, like the launch; `runStream` exposes it.
 *
 * Decided here: a job's argv may hold no secret value (`--token X`): the command line is seen by
 * `ps` and kept in the record, so such a request is refused with the fix of passing it in the
 * environment (`--env`), whose values travel outside any command line and are never recorded.
 *
 * @internal
 */
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import type { Connection, ExitStatus } from "@mlops/core/Connection"
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import { RemoteFileError } from "@mlops/core/Errors"
import * as Probes from "@mlops/core/Probes"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import * as Sync from "@mlops/core/Sync"
import { Array as Arr, Clock, Duration, Effect, Exit, Fiber, Mailbox, Stream } from "effect"
import * as Classifier from "../../Classifier.js"
import * as Deployment from "../../Deployment.js"
import type { GpuPlan } from "../../Engine.js"
import type { Job, JobEvent, JobRequest, JobState } from "../../Job.js"
import { GpusUnavailable, InvalidJob, JobExists, JobFailed, JobNotFound } from "../../JobErrors.js"
import * as Placements from "../../Placements.js"
import * as PythonEnvRuntime from "../../PythonEnvRuntime.js"
import * as Runtimes from "../../Runtimes.js"
import * as Secrets from "../../Secrets.js"
import * as ServerCommand from "../../ServerCommand.js"
import * as Workload from "../../Workload.js"
import { boundedCleanup } from "../cleanup.js"
import * as Monitor from "../launch/monitor.js"
import * as Session from "../launch/session.js"
import { specOf } from "../seams.js"
import * as Record from "./record.js"
import { REFUSED_STATUS, WAITER } from "./scripts.js"

/** What running a job fails with. */
export type JobError = Effect.Effect.Error<ReturnType<typeof run>>

const decoder = new TextDecoder()

/** A 15-digit epoch: tickets sort by arrival as text. */
const ticketName = (at: number, name: string) => `${String(at).padStart(15, "0")}-${name}`

/** The GPUs' plan a placement is given: `count` on one node. */
const planOf = (count: number): GpuPlan => ({
  total: count,
  nodes: 1,
  perNode: count,
  first: 0,
  step: 1,
  elsewhere: "--gpu-ids 0,1",
  fewer: (n) => `--gpus ${n}`
})

/** `0,1` → [0, 1]. */
const idsOf = (text: string | undefined): ReadonlyArray<number> =>
  (text ?? "")
    .split(",")
    .map((id) => id.trim())
    .filter((id) => /^\d+$/.test(id))
    .map(Number)

/** The request's problems before anything is done. */
const validate = (request: JobRequest): InvalidJob | undefined => {
  if (request.gpus !== undefined && (!Number.isInteger(request.gpus) || request.gpus < 0))
    return new InvalidJob({
      reason: `--gpus ${request.gpus} is not a count`,
      fix: "give a whole number: --gpus 2"
    })
  if (request.gpuIds !== undefined) {
    if (request.gpus !== undefined && request.gpus !== request.gpuIds.length)
      return new InvalidJob({
        reason: `--gpus ${request.gpus} and --gpu-ids ${request.gpuIds.join(",")} disagree`,
        fix: "give one of them"
      })
    const bad = request.gpuIds.find((id) => !Number.isInteger(id) || id < 0)
    if (bad !== undefined || request.gpuIds.length === 0)
      return new InvalidJob({
        reason: `--gpu-ids ${request.gpuIds.join(",")} holds no GPU index`,
        fix: "name GPUs as nvidia-smi numbers them: --gpu-ids 0,1"
      })
    if (new Set(request.gpuIds).size !== request.gpuIds.length)
      return new InvalidJob({
        reason: `--gpu-ids ${request.gpuIds.join(",")} names a GPU twice`,
        fix: "name each GPU once"
      })
  }
  if (request.name !== undefined && !Record.isValidName(request.name))
    return new InvalidJob({
      reason: `invalid job name ${JSON.stringify(request.name)}`,
      fix: "use letters, digits, '.', '_' or '-' (at most 64, starting with a letter or digit)"
    })
  const badEnv = Object.keys(request.env ?? {}).find((name) => !RemoteCommand.isValidEnvName(name))
  if (badEnv !== undefined)
    return new InvalidJob({
      reason: `--env ${badEnv}: not a variable name`,
      fix: "name variables with letters, digits and '_' (not starting with a digit)"
    })
  // `env HF_TOKEN=… python …`, `sh -c 'WANDB_API_KEY=… python …'`: a secret-named assignment anywhere
  const assigned = request.argv
    .flatMap((word) =>
      [...word.matchAll(/(?:^|[\s;&|(])([A-Za-z_][A-Za-z0-9_]*)=(?!\s|$)/g)].map((m) => m[1]!)
    )
    .find((name) => Secrets.isSecretEnvName(name))
  if (assigned !== undefined)
    return new InvalidJob({
      reason: `the command line sets ${assigned}, whose value any user of the host could read (ps) and the record would keep`,
      fix: `pass it with --env ${assigned}=value instead (never on a command line)`
    })
  const secret = Secrets.split(request.argv).secrets[0]
  if (secret !== undefined)
    return new InvalidJob({
      reason: `the command line holds the value of ${secret.flag}, which any user of the host could read (ps) and the record would keep`,
      fix: `pass it in the environment instead: --env NAME=value, and read it there in the script`
    })
  return undefined
}

/** The state a job's record and its process show. */
const stateOf = (
  recorded: Record.Recorded,
  placed: boolean,
  alive: boolean,
  exit: ExitStatus | undefined
): JobState => {
  if (recorded.refused !== undefined && recorded.refused.length > 0) return "refused"
  if (recorded.stopped !== undefined) return "stopped"
  // no process recorded (yet): a start under way, or one cut before it began
  if (!placed) return "starting"
  if (alive) return recorded.queuedBehind !== undefined ? "queued" : "running"
  return exit?.exitCode === 0 ? "succeeded" : "failed"
}

/** A job's record, its placement and what runs it, as they are now. */
export const inspect = (conn: Connection, recorded: Record.Recorded) =>
  Effect.gen(function* () {
    const placement = yield* Placements.ofRecord(conn, specOf(recorded.job.placement))
    const placed = yield* placement.attach(conn, { runDir: recorded.runDir, logPath: recorded.logPath })
    // alive is one cheap probe; the full inspection (its exit status) only once it ended
    const alive = placed === undefined ? false : yield* placed.isAlive(conn)
    const inspection = placed === undefined || alive ? undefined : yield* placed.inspect(conn)
    const state = stateOf(recorded, placed !== undefined, alive, inspection?.exit)
    const now = yield* Clock.currentTimeMillis
    const ended =
      alive || placed === undefined ? undefined : yield* conn.files.stat(`${recorded.runDir}/exit`)
    const job: Job = {
      host: conn.host.alias,
      name: recorded.job.name,
      argv: recorded.job.argv,
      runDir: recorded.runDir,
      logPath: recorded.logPath,
      state,
      gpus: idsOf(recorded.gpus),
      createdAt: recorded.job.createdAt,
      queuedBehind: state === "queued" ? recorded.queuedBehind : undefined,
      exit: inspection?.exit,
      server: placed?.server,
      elapsedMs:
        state === "running" || state === "queued" || state === "starting"
          ? now - recorded.job.createdAt
          : ended === undefined
            ? undefined
            : Math.max(0, ended.mtimeMs - recorded.job.createdAt)
    }
    return { job, placement, placed }
  })

/** The most of a log's end that is read to classify an ended job. */
const CLASSIFY_BYTES = 4 * 1024 * 1024

/** A job as it is now and, when it failed, its failure classified from its log's last part. */
export const ended = (host: string, name: string) =>
  Effect.gen(function* () {
    const conn = yield* (yield* ConnectionPool).get(host)
    const recorded = yield* Record.read(conn, name)
    if (recorded === undefined)
      return yield* new JobNotFound({ host, name, known: yield* Record.names(conn) })
    const { job } = yield* inspect(conn, recorded)
    if (job.state !== "failed") return { job, failure: undefined }
    const size = (yield* conn.files.stat(recorded.logPath))?.size ?? 0
    const bytes = yield* conn.files.read(recorded.logPath, { offset: Math.max(0, size - CLASSIFY_BYTES) })
    const failure = Classifier.classifyText(decoder.decode(bytes), job.exit).failure
    return { job, failure }
  })

/** The first free default name: `train`, then `train-2`, `train-3`… */
const freeName = (taken: ReadonlyArray<string>, base: string) => {
  if (!taken.includes(base)) return base
  for (let n = 2; ; n++) if (!taken.includes(`${base}-${n}`)) return `${base}-${n}`
}

/** What `refused` says, for a person: who holds which GPU, or who is ahead in the queue. */
const holdersOf = (lines: ReadonlyArray<string>): ReadonlyArray<string> => {
  const claims = new Map<number, string>()
  for (const line of lines) {
    const [kind, name, ids] = line.split(" ")
    if (kind === "claim" && name !== undefined) for (const id of idsOf(ids)) claims.set(id, name)
  }
  return lines.flatMap((line) => {
    const [kind, a, b, c] = line.split(" ")
    if (kind === "behind" && a !== undefined) return [`queued behind ${a.replace(/^\d+-/, "")}`]
    if (kind !== "gpu" || a === undefined) return []
    const index = Number(a)
    const claimant = claims.get(index)
    if (claimant !== undefined) return [`GPU ${index}: job ${claimant}`]
    return Number(b) >= 2048 ? [`GPU ${index}: ${b} of ${c} MiB in use`] : []
  })
}

/** How long the steps before a job is submitted may take, dropped connections included. */
const SUBMIT_BUDGET_MS = 10 * 60_000

/** How long `follow: false` waits for the waiter's word (started, queued or refused). */
const DETACHED_WORD_MS = 30_000

/**
 * Take `name` on the host by creating its run directory (0700): `mkdir` fails when it exists, so
 * two runs never take one name. A default name moves on to the next number; an asked one is
 * `JobExists`, with what holds it.
 */
const reserve = (session: Session.Session, root: string, wanted: string, asked: boolean, host: string) =>
  Effect.gen(function* () {
    yield* session.run((conn) => conn.files.mkdir(root), { retry: "write" })
    // a deployment's name too: stop, logs and rm would find the deployment first
    const deployments = yield* session.run((conn) => Deployment.names(conn))
    if (asked && deployments.includes(wanted))
      return yield* new InvalidJob({
        reason: `a deployment is named ${wanted} on ${host}: stop, logs and rm would act on it, not on the job`,
        fix: "give the job another --name"
      })
    const taken = [...(yield* session.run((conn) => Record.names(conn))), ...deployments]
    for (let candidate = asked ? wanted : freeName(taken, wanted); ; ) {
      const made = yield* session.run(
        (conn) =>
          conn.exec(RemoteCommand.make(["mkdir", "-m", "700", `${root}/${candidate}`]), {
            timeout: "30 seconds"
          }),
        { retry: "never" }
      )
      if (made.exitCode === 0) return candidate
      // not there and not made (a read-only or full state directory): no name will do
      if (!/File exists/.test(made.stderr))
        return yield* new RemoteFileError({
          host,
          path: `${root}/${candidate}`,
          operation: "mkdir",
          notFound: false,
          reason: made.stderr.trim() || `mkdir exited ${made.exitCode}`,
          fix: `check that ${root} on ${host} is writable (stateDir in hosts.json moves it)`
        })
      if (!asked) {
        // taken meanwhile (another run of the same script): the next number
        taken.push(candidate)
        candidate = freeName(taken, wanted)
        continue
      }
      const existing = yield* session.run((conn) => Record.read(conn, candidate))
      const state =
        existing === undefined
          ? "recorded"
          : (yield* session.run((conn) => inspect(conn, existing))).job.state
      return yield* new JobExists({
        host,
        name: candidate,
        state,
        fix:
          state === "running" || state === "queued"
            ? `follow it (mlops logs --host ${host} --name ${candidate} -f), stop it, or give another --name`
            : `remove its record first (mlops rm --host ${host} --name ${candidate}) or give another --name`
      })
    }
  })

const run = (request: JobRequest, emit: (event: JobEvent) => Effect.Effect<void>) =>
  Effect.gen(function* () {
    const invalid = validate(request)
    if (invalid !== undefined) return yield* invalid
    const t0 = yield* Clock.currentTimeMillis
    const since = Effect.map(Clock.currentTimeMillis, (now) => now - t0)
    const pool = yield* ConnectionPool
    const first = yield* pool.get(request.host)
    const host = first.host.alias
    const outages = {
      onDisconnected: (reason: string, elapsedMs: number) =>
        emit({ _tag: "Disconnected", reason, elapsedMs }),
      onReconnected: (downMs: number, elapsedMs: number) => emit({ _tag: "Reconnected", downMs, elapsedMs })
    }
    // how it runs: the Python environment asked for (else the host's hosts.json `python`, else the
    // login PATH), or an image. A host's `image` is its servers' default, not its jobs': a
    // training script is more often the user's own environment's
    const runtime = yield* Runtimes.resolve(first.host, request.runtime ?? PythonEnvRuntime.spec())
    // the job's command is always one on the host (an image's container runs in its foreground)
    const placement = yield* Placements.resolve(first.host, "OnHost", request.placement)
    // an image pulled first, as long as that takes (a server image is 10-30 GB): nothing is written yet
    yield* runtime.prepare(first, (step) =>
      Effect.flatMap(since, (elapsedMs) => emit({ _tag: "Preparing", ...step, elapsedMs }))
    )
    // submitting is bounded (nothing runs yet); following a job that runs is not (see below)
    const submitFrom = yield* Clock.currentTimeMillis
    const session = yield* Session.make({
      alias: request.host,
      deadline: submitFrom + SUBMIT_BUDGET_MS,
      startedAt: t0,
      ...outages
    })
    const count = request.gpuIds?.length ?? request.gpus ?? 0
    // where the GPUs are the host's, a request it can never meet is refused before anything is written
    if (placement.onHost && count > 0) {
      const gpus = yield* session.run((conn) => Probes.gpus(conn))
      const indices = gpus.map((gpu) => gpu.index)
      const missing = (request.gpuIds ?? []).filter((id) => !indices.includes(id))
      if (missing.length > 0)
        return yield* new InvalidJob({
          reason: `--gpu-ids ${request.gpuIds?.join(",")}: ${host} has no GPU ${missing.join(",")} (nvidia-smi lists ${indices.join(",") || "none"})`,
          fix: "name GPUs as nvidia-smi numbers them on the host"
        })
      if (count > gpus.length)
        return yield* new InvalidJob({
          reason: `--gpus ${count}: ${host} has ${gpus.length} GPU(s)`,
          fix: `ask for at most ${gpus.length}, or run it where there are more`
        })
    }
    const root = yield* session.run((conn) => Record.hostRootOf(conn))
    const name = yield* reserve(
      session,
      root,
      request.name ?? Record.defaultName(request.argv),
      request.name !== undefined,
      host
    )
    yield* emit({ _tag: "Connected", host, name, elapsedMs: yield* since })
    const runDir = `${root}/${name}`
    const logPath = `${runDir}/log`
    const createdAt = yield* Clock.currentTimeMillis
    // a ticket only where the host's waiter queues the job; aside (`.new`) until the waiter runs
    const ticket = placement.onHost && count > 0 ? `${root}/.queue/${ticketName(createdAt, name)}` : undefined

    // from the name on, something is on the host: a failure or an interrupt before the job is
    // started removes it (when nothing was started), so the name is free and nobody waits behind it
    const proc = yield* Effect.gen(function* () {
      // the code first. It goes to the host's mirror of that local directory (so only what changed
      // since its last sync travels), then a snapshot of the mirror becomes the job's own `code/`
      // (a later sync never changes a running job's code)
      let synced: { readonly local: string; readonly files: number; readonly bytes: number } | null = null
      if (request.sync !== undefined) {
        const local = path.resolve(request.sync.local)
        const mirror = yield* session.run((conn) => Record.mirrorOf(conn, local))
        const pushed = yield* session.run(
          (conn) =>
            Sync.push(conn, {
              local,
              remote: mirror,
              ...(request.sync?.include === undefined ? {} : { include: request.sync.include })
            }),
          { retry: "write" }
        )
        yield* session.run((conn) => Record.snapshot(conn, mirror, `${runDir}/code`), { retry: "write" })
        synced = { local, files: pushed.files, bytes: pushed.totalBytes }
        yield* emit({
          _tag: "Synced",
          local,
          files: pushed.files,
          sent: pushed.sent,
          deleted: pushed.deleted,
          bytes: pushed.bytes,
          skipped: pushed.skipped.map((skip) => `${skip.path}: ${skip.reason}`),
          elapsedMs: yield* since
        })
      }
      const env = request.env ?? {}
      const program = yield* session.run((conn) =>
        runtime.job(conn, {
          name,
          argv: request.argv,
          env,
          runDir,
          cwd: synced === null ? undefined : `${runDir}/code`
        })
      )
      yield* session.run(
        (conn) =>
          Effect.gen(function* () {
            yield* Record.write(conn, runDir, {
              name,
              argv: request.argv,
              envNames: Object.keys(env).sort(),
              secrets: Secrets.digest(env, []),
              gpus: { count, ids: request.gpuIds ?? null, wait: request.wait === true },
              placement: placement.spec,
              runtime: runtime.spec,
              cwd: program.cwd,
              sync: synced,
              createdAt,
              mlopsVersion: "0.1.0"
            })
            // created empty and private: the waiter only rewrites them (see scripts.ts)
            yield* Effect.all(
              [
                conn.files.write(`${runDir}/gpus`, ""),
                conn.files.write(`${runDir}/queued`, ""),
                conn.files.write(`${runDir}/refused`, ""),
                conn.files.write(`${runDir}/stopped`, ""),
                ...(ticket === undefined
                  ? []
                  : [conn.files.write(`${runDir}/ticket`, ticket), conn.files.write(`${ticket}.new`, runDir)])
              ],
              { concurrency: "unbounded", discard: true }
            )
          }),
        { retry: "write" }
      )

      // where the host's GPUs are the job's, the waiter takes its place in the queue first and
      // sets CUDA_VISIBLE_DEVICES; then the runtime's command (the environment's, an image's)
      const gate = placement.onHost
        ? [
            "sh",
            "-c",
            WAITER,
            "mlops-job",
            root,
            runDir,
            String(count),
            request.gpuIds?.join(",") ?? "-",
            request.wait === true ? "wait" : "now"
          ]
        : []
      const command = RemoteCommand.make(Arr.prependAll(program.command.argv, gate), {
        env: program.command.env,
        ...(program.command.cwd === undefined ? {} : { cwd: program.command.cwd })
      })
      const shown = ServerCommand.formatCommandLine([], request.argv)
      // across a scheduler's nodes, the same command on each (torchrun meets its peers itself)
      const runnable = { _tag: "OnHost", command, shown } as const
      const proc = yield* placement.spawn(
        session.alias,
        [runnable, ...Array.from({ length: placement.nodes - 1 }, () => runnable)],
        {
          runDir,
          logPath,
          token: randomBytes(12).toString("hex"),
          name,
          gpus: planOf(count),
          paths: { model: undefined, caches: [] },
          reconnect: session.reconnect
        }
      )
      yield* emit({
        _tag: "Submitted",
        name,
        runDir,
        logPath,
        server: proc.server,
        commandLine: shown,
        runsIn: program.where,
        elapsedMs: yield* since
      })
      return proc
    }).pipe(
      Effect.onExit((exit) =>
        Exit.isSuccess(exit)
          ? Effect.void
          : boundedCleanup(
              Effect.ignore(
                Effect.gen(function* () {
                  const conn = yield* pool.get(request.host)
                  if ((yield* placement.attach(conn, { runDir, logPath })) !== undefined) return
                  yield* conn.exec(
                    RemoteCommand.make([
                      "rm",
                      "-rf",
                      "--",
                      runDir,
                      ...(ticket === undefined ? [] : [`${ticket}.new`])
                    ]),
                    { timeout: "30 seconds" }
                  )
                })
              )
            )
      )
    )

    // a job runs for as long as it runs: following it has no deadline of its own
    const following = yield* Session.make({
      alias: request.host,
      deadline: Number.POSITIVE_INFINITY,
      startedAt: t0,
      ...outages
    })
    const current = (conn: Connection) =>
      Effect.gen(function* () {
        const recorded = yield* Record.read(conn, name)
        if (recorded === undefined) return yield* new JobNotFound({ host, name, known: [] })
        return { ...(yield* inspect(conn, recorded)), recorded }
      })
    /** The waiter's word so far: its GPUs once it picked them, whom it waits behind. */
    const word = following.run((conn) =>
      Effect.all([
        conn.files.read(`${runDir}/queued`).pipe(Effect.map((b) => decoder.decode(b).trim())),
        conn.files.read(`${runDir}/gpus`).pipe(Effect.map((b) => decoder.decode(b).trim()))
      ])
    )
    /** A refusal the waiter recorded (the job exited without running anything): the record goes. */
    const refusal = (recorded: Record.Recorded, exit: ExitStatus | undefined) =>
      Effect.gen(function* () {
        const refused = recorded.refused ?? []
        if (exit?.exitCode !== REFUSED_STATUS || refused.length === 0) return undefined
        yield* Effect.ignore(
          following.run((conn) =>
            conn.exec(RemoteCommand.make(["rm", "-rf", "--", runDir]), { timeout: "30 seconds" })
          )
        )
        return new GpusUnavailable({
          host,
          name,
          wanted: request.gpuIds !== undefined ? `GPU ${request.gpuIds.join(",")}` : `${count} GPU(s)`,
          holders: holdersOf(refused),
          fix: `wait for them (--wait queues the job on ${host}), ask for fewer (--gpus), or stop what holds them`
        })
      })

    if (request.follow === false) {
      // the waiter's word first (started, queued or refused), so a refusal is never a success
      if (placement.onHost) {
        for (let waited = 0; waited < DETACHED_WORD_MS; waited += 250) {
          const [queued, gpus] = yield* word
          if (gpus !== "" || queued !== "" || count === 0) break
          const now = yield* following.run(current)
          if (now.job.state !== "running") {
            const refused = yield* refusal(now.recorded, now.job.exit)
            if (refused !== undefined) return yield* refused
            break
          }
          yield* Effect.sleep("250 millis")
        }
      }
      return (yield* following.run(current)).job
    }

    // the queue's word, as the waiter writes it: queued behind someone, then its GPUs
    let startedSaid = false
    const sayStarted = (gpus: string) =>
      Effect.suspend(() => {
        if (startedSaid) return Effect.void
        startedSaid = true
        return Effect.flatMap(since, (elapsedMs) => emit({ _tag: "Started", gpus: idsOf(gpus), elapsedMs }))
      })
    const queueWatch = yield* Effect.fork(
      Effect.gen(function* () {
        if (!placement.onHost) return
        let queuedSaid = false
        for (;;) {
          const [queued, gpus] = yield* word
          if (gpus !== "" || (count === 0 && queued === "")) return yield* sayStarted(gpus)
          if (queued !== "" && !queuedSaid) {
            queuedSaid = true
            yield* emit({ _tag: "Queued", behind: queued.replace(/^\d+-/, ""), elapsedMs: yield* since })
          }
          yield* Effect.sleep("500 millis")
        }
      }).pipe(Effect.ignore)
    )
    // the placement's default grace: an image's container is stopped within it (imageJobScripts.ts)
    const stopJob = Effect.ignore(following.run((conn) => proc.stop(conn), { retry: "write" }))
    const outcome = yield* Monitor.follow(following, proc, {
      workload: Workload.job(),
      name,
      fromOffset: 0,
      // the events' times count from the request, as every other event's
      startedAt: t0,
      stallTimeout:
        request.stallTimeout === undefined ? Duration.infinity : Duration.decode(request.stallTimeout),
      overallMs: Number.POSITIVE_INFINITY,
      emit: (event, elapsedMs) => emit({ _tag: "Log", event, elapsedMs }),
      onState: (state, elapsedMs) => emit({ _tag: "State", state, elapsedMs }),
      // the job prints only once the waiter has picked its GPUs: say where it runs before its first line
      onLine: (line, elapsedMs) =>
        Effect.zipRight(
          startedSaid || !placement.onHost
            ? Effect.void
            : Effect.flatMap(
                Effect.orElseSucceed(
                  Effect.provideService(word, ConnectionPool, pool),
                  () => ["", ""] as const
                ),
                ([queued, gpus]) =>
                  gpus !== "" || (count === 0 && queued === "") ? sayStarted(gpus) : Effect.void
              ),
          emit({ _tag: "Output", line, elapsedMs })
        )
    }).pipe(
      Effect.onInterrupt(() => (request.stopOnInterrupt === true ? boundedCleanup(stopJob) : Effect.void)),
      Effect.ensuring(Fiber.interrupt(queueWatch))
    )
    const now = yield* following.run(current)
    // a job that ran says where (a short one may end before the watch's next look)
    if (placement.onHost && now.recorded.gpus !== undefined && now.recorded.gpus !== "")
      yield* sayStarted(now.recorded.gpus)
    // it ended well, or someone stopped it (`mlops stop`, taken out of the queue): no failure
    if (outcome._tag === "Done" || now.job.state === "stopped") {
      yield* emit({ _tag: "Finished", job: now.job, elapsedMs: yield* since })
      return now.job
    }
    // a stall: it still runs, and is stopped like a launch's
    if (!outcome.exited) yield* stopJob
    const exit = now.job.exit
    const refused = yield* refusal(now.recorded, exit)
    if (refused !== undefined) return yield* refused
    return yield* new JobFailed({
      host,
      name,
      failure: outcome.failure,
      ...(exit?.exitCode === undefined || exit.exitCode === null ? {} : { exitCode: exit.exitCode }),
      ...(exit?.signal === undefined || exit.signal === null ? {} : { signal: exit.signal }),
      logPath
    })
  })

/** The job as a stream of events, ending with `Finished` (or `Submitted` when not following). */
export const runStream = (request: JobRequest): Stream.Stream<JobEvent, JobError, ConnectionPool> =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const mailbox = yield* Mailbox.make<JobEvent, JobError>({ capacity: 256, strategy: "suspend" })
      const emit = (event: JobEvent) => Effect.asVoid(mailbox.offer(event))
      yield* run(request, emit).pipe(
        Effect.exit,
        Effect.flatMap((exit) => mailbox.done(Exit.asVoid(exit))),
        Effect.forkScoped
      )
      return Mailbox.toStream(mailbox)
    })
  )
