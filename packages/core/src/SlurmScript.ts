/**
 * The batch script mlops writes into a deployment directory (on the cluster's shared home) and
 * submits with `sbatch`. The engine is the job's main process (`exec`, never `nohup ... &`: a
 * detached child dies with its step under proctrack/cgroup, and Slurm's job state would no
 * longer be the server's). Output is appended to the deployment's log. The environment,
 * secrets included, is sourced from a 0600 file next to the script, never put on a command
 * line or in the script (which Slurm copies into its spool and shows in `scontrol write batch_script`).
 *
 * @since 0.1.0
 */
import { Either } from "effect"
import * as RemoteCommand from "./RemoteCommand.js"

/** @category models */
export interface JobScript {
  /** The job's name (`--job-name`), e.g. `mlops-qwen`. */
  readonly jobName: string
  /** sbatch options (`--partition=gpu`, `--gres=gpu:2`): become `#SBATCH` lines. */
  readonly options: ReadonlyArray<string>
  /** Absolute path of the deployment's log on the host. */
  readonly logPath: string
  /** Absolute path of the 0600 environment file (`envFile`'s text). */
  readonly envPath: string
  /** Absolute path of the directory the job starts in (the deployment directory). */
  readonly workDir: string
  /** The engine: argv and working directory (its `env` goes to the env file, not here); rank 0's across nodes. */
  readonly command: RemoteCommand.RemoteCommand
  /** A job across several nodes: one rank on each (`--nodes`, one task per node). */
  readonly spread?: Spread
}

/**
 * A server across the job's nodes: the script starts one `srun` step with a task on each node
 * (`--kill-on-bad-exit`: one rank's death ends every rank, and the job), and each task runs the
 * script again as its node's rank (`SLURM_NODEID`). The head's address is known only once the
 * job runs: a word holding `headToken` gets the first node's `NodeAddr` there.
 *
 * @category models
 */
export interface Spread {
  /** The commands of ranks 1 ... N-1 (rank 0's is `command`). */
  readonly others: ReadonlyArray<RemoteCommand.RemoteCommand>
  /** Stands for the head node's address in the ranks' words. */
  readonly headToken: string
  /** Absolute path of the script itself on the shared filesystem (each node's task runs it). */
  readonly scriptPath: string
}

/** `#SBATCH` values are not shell words: no whitespace, quotes, backslashes or `%` patterns. */
const UNSAFE = /[\s'"\\%]/

/** The script's text, or why it cannot be written. @category rendering */
export const render = (script: JobScript): Either.Either<string, string> => {
  const directives = [
    `--job-name=${script.jobName}`,
    `--output=${script.logPath}`,
    "--open-mode=append",
    // a server that died should be seen dead, not silently started again elsewhere
    "--no-requeue",
    `--chdir=${script.workDir}`,
    ...script.options
  ]
  for (const directive of directives) {
    const value = directive.slice(directive.indexOf("=") + 1)
    if (!directive.startsWith("--") || UNSAFE.test(value))
      return Either.left(
        `sbatch option ${JSON.stringify(directive)} cannot go on an #SBATCH line (no spaces, quotes, backslashes or %)`
      )
  }
  for (const [what, p] of [
    ["log", script.logPath],
    ["env file", script.envPath],
    ["working directory", script.workDir],
    ...(script.spread === undefined ? [] : [["script", script.spread.scriptPath] as const])
  ] as const)
    if (!p.startsWith("/"))
      return Either.left(`the ${what} path must be absolute on the host, got ${JSON.stringify(p)}`)
  const header = [
    "#!/bin/sh",
    ...directives.map((directive) => `#SBATCH ${directive}`),
    "# Written by mlops. The engine is this job's main process: the job's state is the server's.",
    "umask 077"
  ]
  const greeting = `echo "[mlops] slurm job $SLURM_JOB_ID on $(hostname), GPUs \${CUDA_VISIBLE_DEVICES-none}"`
  const env = `. ${RemoteCommand.quote(script.envPath)} || exit 1`
  if (script.spread === undefined)
    return Either.right([...header, greeting, env, RemoteCommand.render(script.command), ""].join("\n"))
  const spread = script.spread
  const nodes = spread.others.length + 1
  const ranks = [script.command, ...spread.others]
  return Either.right(
    [
      ...header,
      env,
      "# a task of the srun step below: this node's rank",
      `if [ -n "\${MLOPS_RANK_STEP-}" ]; then`,
      `  case "\${SLURM_NODEID-}" in`,
      ...ranks.map((command, rank) => `    ${rank}) ${renderRank(command, spread.headToken)} ;;`),
      "  esac",
      `  echo "[mlops] no rank for node \${SLURM_NODEID-unknown} of the job"`,
      "  exit 1",
      "fi",
      greeting,
      "# the ranks meet at the first node of the allocation",
      `MLOPS_HEAD=$(scontrol show node "$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p')`,
      'if [ -z "$MLOPS_HEAD" ]; then echo "[mlops] no address for the first node of $SLURM_JOB_NODELIST"; exit 1; fi',
      'echo "[mlops] ranks on nodes $SLURM_JOB_NODELIST meet at $MLOPS_HEAD"',
      "export MLOPS_HEAD MLOPS_RANK_STEP=1",
      "# since Slurm 22.05 a step does not inherit the job's --cpus-per-task: each rank gets them again",
      `if [ -n "\${SLURM_CPUS_PER_TASK-}" ]; then export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"; fi`,
      `exec srun --nodes=${nodes} --ntasks=${nodes} --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/sh ${RemoteCommand.quote(spread.scriptPath)}`,
      ""
    ].join("\n")
  )
}

/** A rank's shell line: as `RemoteCommand.render`, with the head's address where a word holds the token. */
const renderRank = (command: RemoteCommand.RemoteCommand, token: string): string =>
  renderWith(command, (word) =>
    typeof word === "string" && word.includes(token)
      ? word
          .split(token)
          .map((part) => (part === "" ? "" : RemoteCommand.quote(part)))
          .join('"$MLOPS_HEAD"')
      : RemoteCommand.renderWord(word)
  )

/** `RemoteCommand.render` with each word rendered by `word`. */
const renderWith = (
  command: RemoteCommand.RemoteCommand,
  word: (word: RemoteCommand.Word) => string
): string => {
  const run = `exec ${command.argv.map(word).join(" ")}`
  return command.cwd === undefined ? run : `cd ${RemoteCommand.renderWord(command.cwd)} && ${run}`
}

/** The env file's text: `export NAME='value'` lines (0600; sourced by the script). @category rendering */
export const envFile = (command: Pick<RemoteCommand.RemoteCommand, "env">): string =>
  RemoteCommand.envScript(command)
