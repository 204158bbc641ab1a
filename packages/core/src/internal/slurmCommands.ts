/**
 * Running one Slurm client command on the login node (a `RemoteCommand` over its connection,
 * with a timeout), and turning the ways it fails that are not about the job
 * (no Slurm here, controller down, munge broken) into `SlurmUnavailable`.
 *
 * @internal
 */
import { type Duration, Effect, Either } from "effect"
import type { Connection, ExecResult } from "../Connection.js"
import type { CommandError } from "../Errors.js"
import * as RemoteCommand from "../RemoteCommand.js"
import { SlurmCommandFailed, SlurmOutputUnreadable, SlurmUnavailable } from "../SlurmErrors.js"

/** Queries answer in seconds; a busy controller can take longer, sbatch longest. */
export const QUERY_TIMEOUT: Duration.DurationInput = "30 seconds"
export const SUBMIT_TIMEOUT: Duration.DurationInput = "60 seconds"

export type Argv = readonly [string, ...Array<string>]

const CONTROLLER_DOWN =
  /Unable to contact slurm controller|Socket timed out on send\/recv|slurm_load_\w+ error: (?:Unable to contact|Connection refused)|Communication connection failure/i
const MUNGE =
  /Munge (?:encode|decode) failed|Invalid authentication credential|Zero Bytes were transmitted or received|Protocol authentication error/i
const NO_CONFIG =
  /Could not establish a configuration source|Unable to process configuration file|s_p_parse_file: cannot stat file/i

/** The line that says it, without the command's `sbatch: error: ` prefix. */
const lineOf = (text: string, pattern: RegExp) =>
  (
    text
      .split("\n")
      .map((line) => line.trim())
      .find((line) => pattern.test(line)) ?? "no output"
  ).replace(/^\w+: (?:error|fatal): /, "")

/** The failure when `result` says Slurm itself is unusable on `host`; undefined otherwise. */
export const unavailable = (host: string, argv: Argv, result: ExecResult): SlurmUnavailable | undefined => {
  const command = argv.join(" ")
  const make = (reason: string, fix: string) => new SlurmUnavailable({ host, command, reason, fix })
  if (result.exitCode === 127)
    return make(
      `${argv[0]} not found`,
      `run mlops against the cluster's login node, or put Slurm's bin directory on PATH for non-interactive shells on ${host}`
    )
  const stderr = result.stderr
  if (CONTROLLER_DOWN.test(stderr))
    return make(
      lineOf(stderr, CONTROLLER_DOWN),
      `the Slurm controller does not answer: check \`scontrol ping\` on ${host}`
    )
  if (MUNGE.test(stderr))
    return make(
      lineOf(stderr, MUNGE),
      `munge authentication failed: check that munged runs on ${host} (\`munge -n | unmunge\`)`
    )
  if (NO_CONFIG.test(stderr))
    return make(
      lineOf(stderr, NO_CONFIG),
      `Slurm's client finds no slurm.conf on ${host}: set SLURM_CONF or run mlops against a login node`
    )
  return undefined
}

/** Run `argv` on the connection's host; the result whatever its exit code, except when Slurm is unusable. */
export const run = (
  conn: Connection,
  argv: Argv,
  timeout: Duration.DurationInput = QUERY_TIMEOUT
): Effect.Effect<ExecResult, SlurmUnavailable | CommandError> =>
  Effect.flatMap(conn.exec(RemoteCommand.make(argv), { timeout }), (result) => {
    const down = unavailable(conn.host.alias, argv, result)
    return down === undefined ? Effect.succeed(result) : Effect.fail(down)
  })

/** The command's failure for an exit status the caller does not handle. */
export const failed = (host: string, argv: Argv, result: ExecResult): SlurmCommandFailed =>
  new SlurmCommandFailed({ host, command: argv.join(" "), exitCode: result.exitCode, stderr: result.stderr })

/** Run, require exit 0, and parse stdout. */
export const query = <A>(
  conn: Connection,
  argv: Argv,
  parse: (stdout: string) => Either.Either<A, string>
): Effect.Effect<A, SlurmUnavailable | SlurmCommandFailed | SlurmOutputUnreadable | CommandError> =>
  Effect.gen(function* () {
    const host = conn.host.alias
    const result = yield* run(conn, argv)
    if (result.exitCode !== 0) return yield* failed(host, argv, result)
    const parsed = parse(result.stdout)
    if (Either.isLeft(parsed))
      return yield* new SlurmOutputUnreadable({ host, command: argv.join(" "), reason: parsed.left })
    return parsed.right
  })
