/**
 * `mlops status [--host H]`: the deployments on one host, or on every known host. A host that
 * cannot be reached is an error on stderr with its exit code (6 for SSH trouble), never an
 * empty list: with `--host` the command fails; across every host the reachable ones are still
 * shown and the exit code says that some were not.
 */
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
  s.healthy === undefined ? "-" : s.healthy ? "healthy" : "unhealthy"

const rowsOf = (deployments: ReadonlyArray<Status.DeploymentStatus>) =>
  deployments.map((d) => [
    d.host,
    d.name,
    d.engineVersion === null ? d.engine : `${d.engine} ${d.engineVersion}`,
    `${d.alive ? "running" : d.stopped !== undefined ? `stopped (${d.stopped})` : (d.exit ?? "not running")}${d.job === undefined ? "" : ` (Slurm job ${d.job.id}: ${d.job.state}${d.job.gpus === undefined ? "" : `, ${d.job.gpus} GPUs`})`}`,
    d.phase,
    health(d),
    // a batch job's processes are on its node: the job id stands for them
    d.job !== undefined || d.pid === undefined ? "-" : String(d.pid),
    d.port === undefined ? "-" : String(d.port),
    d.job?.elapsedSeconds !== undefined && d.alive
      ? duration(d.job.elapsedSeconds * 1000)
      : d.uptimeMs === undefined
        ? "-"
        : duration(d.uptimeMs),
    d.gpuMemoryMiB === undefined ? "-" : `${d.gpuMemoryMiB} MiB`,
    d.failure === undefined ? "" : d.failure._tag
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
    // a Slurm login node: the cluster's mlops jobs too, every user's (best effort: the
    // deployments above are the answer; a scheduler that does not answer is said on stderr)
    const jobs =
      host === undefined
        ? []
        : yield* Status.clusterJobs(host).pipe(
            Effect.catchAll((error) =>
              Effect.as(
                Console.error(`${red(style, "!")} Slurm jobs on ${host} not listed: ${messageOf(error)}`),
                [] as ReadonlyArray<Status.ClusterJob>
              )
            )
          )
    if (parsed.json) {
      yield* printJson({
        _tag: "Status",
        ...(jobs.length === 0 ? {} : { slurmJobs: jobs }),
        deployments: result.deployments.map((d) => ({
          ...d,
          failure:
            d.failure === undefined ? null : RenderFailure.json(d.failure, { host: d.host, argv: d.argv })
        })),
        unreachable: result.unreachable
      })
    } else if (result.deployments.length === 0) {
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
            "PID",
            "PORT",
            "UPTIME",
            "GPU MEM",
            "FAILURE"
          ],
          rowsOf(result.deployments)
        )
      )
    }
    if (!parsed.json && jobs.length > 0) {
      yield* Console.log(`\nSlurm jobs named ${"mlops-*"} on ${host} (every user's):`)
      yield* Console.log(
        table(
          ["JOB", "NAME", "USER", "STATE", "NODE", "GPUS", "ELAPSED"],
          jobs.map((j) => [
            j.id,
            j.name,
            j.user ?? "-",
            j.state,
            j.node ?? "-",
            j.gpus === undefined ? "-" : String(j.gpus),
            j.elapsedSeconds === undefined ? "-" : duration(j.elapsedSeconds * 1000)
          ])
        )
      )
    }
    if (result.unreachable.length === 0) return
    for (const u of result.unreachable) {
      yield* Console.error(`${red(style, "✗")} ${u.host} unreachable: ${u.error} [${u._tag}]`)
    }
    const codes = result.unreachable.map((u) => ExitCodes.fromFailure(u))
    return yield* new CommandExit({ code: Math.max(...codes) })
  })
