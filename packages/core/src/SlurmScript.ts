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
  /** The engine: argv and working directory (its `env` goes to the env file, not here). */
  readonly command: RemoteCommand.RemoteCommand
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
    ["working directory", script.workDir]
  ] as const)
    if (!p.startsWith("/"))
      return Either.left(`the ${what} path must be absolute on the host, got ${JSON.stringify(p)}`)
  return Either.right(
    [
      "#!/bin/sh",
      ...directives.map((directive) => `#SBATCH ${directive}`),
      "# Written by mlops. The engine is this job's main process: the job's state is the server's.",
      "umask 077",
      `echo "[mlops] slurm job $SLURM_JOB_ID on $(hostname), GPUs \${CUDA_VISIBLE_DEVICES-none}"`,
      `. ${RemoteCommand.quote(script.envPath)} || exit 1`,
      RemoteCommand.render(script.command),
      ""
    ].join("\n")
  )
}

/** The env file's text: `export NAME='value'` lines (0600; sourced by the script). @category rendering */
export const envFile = (command: Pick<RemoteCommand.RemoteCommand, "env">): string =>
  RemoteCommand.envScript(command)
