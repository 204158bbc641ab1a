/**
 * A command to run on a remote host, as a value: argv, environment and working directory.
 *
 * Each argv word is a plain string (arrives exactly as written) or a `RemotePath` (a path mlops
 * builds; `~/...` means the remote home). The working directory is always a path. The value is
 * rendered only at the edge, in two parts that travel separately:
 *
 * - `render`: the shell line `cd DIR && exec WORD...` (`exec`, so the program keeps the shell's
 *   pid: a recorded pid is the program's, not a wrapper shell's);
 * - `envScript`: `export NAME='value'` lines, sent on the channel's stdin and evaluated by the
 *   wrapper, so an environment value never appears on a command line on the host (`ps` shows
 *   argv to every user of the host). sshd's `env` requests are not used: sshd drops them unless
 *   AcceptEnv allows them.
 *
 * The live layer sends exactly these texts; the fake host interprets the same texts with a
 * POSIX-sh word parser, so quoting behaves on the fake as on a real shell.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import * as RemotePath from "./RemotePath.js"

/** One argv word: a literal string, or a remote path. @category models */
export const Word = Schema.Union(Schema.String, RemotePath.RemotePath)

/** @category models */
export type Word = typeof Word.Type

/** @category models */
export const RemoteCommand = Schema.Struct({
  argv: Schema.NonEmptyArray(Word),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), {
    default: () => ({})
  }),
  cwd: Schema.optional(RemotePath.RemotePath)
})

/** @category models */
export interface RemoteCommand extends Schema.Schema.Type<typeof RemoteCommand> {}

/**
 * A working directory given as a string is a path: `~/x` means the remote home's `x`.
 *
 * @category constructors
 */
export const make = (
  argv: readonly [Word, ...Array<Word>],
  options: {
    readonly env?: Readonly<Record<string, string>>
    readonly cwd?: string | RemotePath.RemotePath
  } = {}
): RemoteCommand => ({
  argv,
  env: options.env ?? {},
  ...(options.cwd === undefined
    ? {}
    : { cwd: typeof options.cwd === "string" ? RemotePath.make(options.cwd) : options.cwd })
})

/** @category rendering */
export const quote = RemotePath.quote

/** A word as written: a string as is, a path as its text (`~/x`). @category rendering */
export const wordText = (word: Word): string => (typeof word === "string" ? word : word.path)

/** A word as a shell word. @category rendering */
export const renderWord = (word: Word): string =>
  typeof word === "string" ? RemotePath.quote(word) : RemotePath.toWord(word)

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** True when `name` can be exported by a POSIX shell. @category rendering */
export const isValidEnvName = (name: string): boolean => ENV_NAME.test(name)

/**
 * The shell line, without the environment: `cd DIR && exec argv...`.
 *
 * @category rendering
 */
export const render = (command: RemoteCommand): string => {
  const run = `exec ${command.argv.map(renderWord).join(" ")}`
  return command.cwd === undefined ? run : `cd ${RemotePath.toWord(command.cwd)} && ${run}`
}

/**
 * The environment as a shell script, `export NAME='value'` one per line (empty when there is
 * none). Invalid names, and values holding NUL (no environment can carry one), are a
 * programming error and throw.
 *
 * @category rendering
 */
export const envScript = (command: Pick<RemoteCommand, "env">): string => {
  const names = Object.keys(command.env)
  for (const name of names) {
    if (!isValidEnvName(name)) throw new Error(`invalid environment variable name: ${JSON.stringify(name)}`)
    if (command.env[name]!.includes("\u0000"))
      throw new Error(`environment variable ${name} holds a NUL byte`)
  }
  return names.map((name) => `export ${name}=${RemotePath.quote(command.env[name]!)}\n`).join("")
}

const describeWord = (word: Word): string => {
  const rest = typeof word === "string" ? undefined : RemotePath.homeRelative(word)
  if (rest === undefined) return RemotePath.quote(wordText(word))
  return rest === "" ? "~" : `~/${RemotePath.quote(rest)}`
}

/** A short human description of the command for errors and spans (never the environment). @category rendering */
export const describe = (command: RemoteCommand): string => {
  const line = command.argv.map(describeWord).join(" ")
  return line.length > 200 ? `${line.slice(0, 197)}...` : line
}
