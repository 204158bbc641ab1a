/**
 * `mlops status [--host H]`: the deployments (and jobs) on one host, or on every known host. A host that
 * cannot be reached is an error on stderr with its exit code (6 for SSH trouble), never an
 * empty list: with `--host` the command fails; across every host the reachable ones are still
 * shown and the exit code says that some were not.
 */
import { Hosts } from "@mlops/core/Hosts"
import * as Job from "@mlops/serve/Job"
import * as Status from "@mlops/serve/Status"
import { Console, Effect, Option } from "effect"
import { CommandExit } from "../commands/shared.js"
import type { Parsed } from "../commands/status.js"
import * as Engines from "../Engines.js"
import * as ExitCodes from "../ExitCodes.js"
import * as RenderFailure from "../render/failure.js"
import { duration, red, TerminalStyle, table } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

const health = (s: Status.DeploymentStatus) =>
  s.healthy === undefined
    ? "-"
    : !s.healthy
      ? "unhealthy"
      : s.generating === false
        ? "not generating"
        : "healthy"

/** Running, stopped, how it ended, or that nothing runs it (yet); with its placement's word on it. */
const stateOf = (d: Status.DeploymentStatus): string => {
  if (d.problem !== undefined) return `unknown (${d.problem._tag})`
  const ended = d.alive
    ? "running"
    : d.stopped !== undefined
      ? `stopped (${d.stopped})`
      : d.starting
        ? "starting"
        : d.server === undefined
          ? "not started"
          : (d.exit ?? "not running")
  return d.state === undefined || d.server === undefined ? ended : `${ended} (${d.server.label}: ${d.state})`
}

/** Across several hosts: each rank's host and state (`node-b running`). */
const ranksOf = (d: Status.DeploymentStatus): string =>
  d.ranks
    .map(
      (r) =>
        `${r.rank}:${r.host} ${r.problem !== undefined ? "unknown" : r.alive ? "running" : r.stopped !== undefined ? "stopped" : (r.exit ?? "not running")}`
    )
    .join(", ")

const rowsOf = (deployments: ReadonlyArray<Status.DeploymentStatus>) =>
  deployments.map((d) => [
    d.ranks.length > 1 ? `${d.host} (ranks ${ranksOf(d)})` : d.host,
    d.name,
    d.engineVersion === null ? d.engine : `${d.engine} ${d.engineVersion}`,
    stateOf(d),
    d.phase,
    health(d),
    d.server?.label ?? "-",
    d.port === undefined ? "-" : String(d.port),
    d.uptimeMs === undefined ? "-" : duration(d.uptimeMs),
    d.gpuMemoryMiB === undefined ? "-" : `${d.gpuMemoryMiB} MiB`,
    d.failure === undefined ? "" : d.failure._tag
  ])

/** One row per job: queued behind whom, its GPUs, how long, how it ended. */
const jobRows = (jobs: ReadonlyArray<Job.Job>) =>
  jobs.map((job) => [
    job.host,
    job.name,
    job.state === "queued" && job.queuedBehind !== undefined
      ? `queued (behind ${job.queuedBehind.replace(/^\d+-/, "")})`
      : job.state,
    job.gpus.length === 0 ? "-" : job.gpus.join(","),
    job.elapsedMs === undefined ? "-" : duration(job.elapsedMs),
    Status.exitText(job.exit) ?? "-",
    job.server?.label ?? "-",
    job.argv.join(" ").slice(0, 60)
  ])

export const status = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const host = Option.getOrUndefined(parsed.host)
    const result =
      host === undefined
        ? yield* handle(
            parsed.json,
            {},
            Effect.flatMap(Engines.registry, (engines) => Status.ofHosts(engines))
          )
        : {
            deployments: yield* handle(
              parsed.json,
              { host },
              Effect.flatMap(Engines.registry, (engines) => Status.ofHost(host, engines))
            ),
            unreachable: [] as ReadonlyArray<Status.HostUnreachable>
          }
    // every user's servers the host's placement can list (a cluster's login node: its queue's
    // mlops jobs; best effort: the deployments above are the answer, a placement that does
    // not answer is said on stderr)
    const others =
      host === undefined
        ? undefined
        : yield* Status.neighbours(host).pipe(
            Effect.catchAll((error) =>
              Effect.as(
                Console.error(`${red(style, "!")} other servers on ${host} not listed: ${messageOf(error)}`),
                undefined
              )
            )
          )
    // the host's jobs (`mlops run`), beside its deployments
    // (across every host: each reachable one's, a host whose jobs cannot be read is skipped: its
    // deployments above already said what is wrong with it)
    const jobs =
      host !== undefined
        ? yield* handle(parsed.json, { host }, Job.list(host))
        : yield* Effect.flatMap(Hosts, (hosts) => hosts.list).pipe(
            Effect.flatMap((configs) =>
              Effect.forEach(
                configs
                  .map((config) => config.alias)
                  .filter((alias) => !result.unreachable.some((u) => u.host === alias)),
                (alias) => Job.list(alias).pipe(Effect.orElseSucceed(() => [] as ReadonlyArray<Job.Job>)),
                { concurrency: 8 }
              )
            ),
            Effect.map((lists) => lists.flat()),
            Effect.orElseSucceed(() => [] as ReadonlyArray<Job.Job>)
          )
    if (parsed.json) {
      yield* printJson({
        _tag: "Status",
        jobs,
        ...(others === undefined || others.records.length === 0
          ? {}
          : { others: { title: others.title, servers: others.records } }),
        deployments: result.deployments.map((d) => ({
          ...d,
          failure:
            d.failure === undefined ? null : RenderFailure.json(d.failure, { host: d.host, argv: d.argv })
        })),
        unreachable: result.unreachable
      })
    } else if (result.deployments.length === 0) {
      if (jobs.length === 0 || result.unreachable.length > 0)
        yield* Console.log(
          result.unreachable.length === 0 ? "no deployments" : "no deployments on the reachable hosts"
        )
    } else {
      yield* Console.log(
        table(
          [
            "HOST",
            "NAME",
            "ENGINE",
            "STATE",
            "PHASE",
            "HEALTH",
            "SERVER",
            "PORT",
            "UPTIME",
            "GPU MEM",
            "FAILURE"
          ],
          rowsOf(result.deployments)
        )
      )
    }
    // a deployment whose state could not be told: why, under the table (the others are listed)
    if (!parsed.json)
      for (const d of result.deployments)
        if (d.problem !== undefined)
          yield* Console.error(
            `${red(style, "!")} ${d.name} on ${d.host}: ${d.problem.message} [${d.problem._tag}]`
          )
    if (!parsed.json && jobs.length > 0) {
      if (result.deployments.length > 0) yield* Console.log("")
      yield* Console.log(
        table(["HOST", "JOB", "STATE", "GPUS", "ELAPSED", "EXIT", "SERVER", "COMMAND"], jobRows(jobs))
      )
    }
    if (!parsed.json && others !== undefined && others.rows.length > 0) {
      yield* Console.log(`\n${others.title}:`)
      yield* Console.log(table(others.columns, others.rows))
    }
    if (result.unreachable.length === 0) return
    for (const u of result.unreachable) {
      yield* Console.error(`${red(style, "✗")} ${u.host} unreachable: ${u.error} [${u._tag}]`)
    }
    const codes = result.unreachable.map((u) => ExitCodes.fromFailure(u))
    return yield* new CommandExit({ code: Math.max(...codes) })
  })
