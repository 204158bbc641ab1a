/**
 * A command to run on a remote host, as a value: argv, environment and working directory.
 * It is rendered to one POSIX shell line only at the edge (the live ssh layer); the fake host
 * interprets the value directly, never shell text.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** @category models */
export const RemoteCommand = Schema.Struct({
  argv: Schema.NonEmptyArray(Schema.String),
  env: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), {
    default: () => ({})
  }),
  cwd: Schema.optional(Schema.String)
})

/** @category models */
export interface RemoteCommand extends Schema.Schema.Type<typeof RemoteCommand> {}

/** @category constructors */
export const make = (
  argv: readonly [string, ...Array<string>],
  options: { readonly env?: Readonly<Record<string, string>>; readonly cwd?: string } = {}
): RemoteCommand => ({
  argv,
  env: options.env ?? {},
  ...(options.cwd === undefined ? {} : { cwd: options.cwd })
})

const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/

/**
 * Quote one word for a POSIX shell: bare when it only holds characters that are never special,
 * otherwise single-quoted with `'` written as `'\''`. Every byte inside single quotes is literal
 * (newlines, `$`, backticks, `\`), so this is exact for any string.
 *
 * @category rendering
 */
export const quote = (word: string): string =>
  word !== "" && SAFE.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** True when `name` can be exported by a POSIX shell. @category rendering */
export const isValidEnvName = (name: string): boolean => ENV_NAME.test(name)

/**
 * Render to one shell line: `cd DIR && export K=V && exec argv...`.
 * The environment is exported in the line because sshd drops `env` channel requests
 * unless AcceptEnv allows them. Invalid environment names are a programming error and throw.
 *
 * @category rendering
 */
export const render = (command: RemoteCommand): string => {
  const parts: Array<string> = []
  if (command.cwd !== undefined) parts.push(`cd ${quote(command.cwd)}`)
  const names = Object.keys(command.env)
  for (const name of names) {
    if (!isValidEnvName(name)) throw new Error(`invalid environment variable name: ${JSON.stringify(name)}`)
  }
  if (names.length > 0) parts.push(`export ${names.map((n) => `${n}=${quote(command.env[n]!)}`).join(" ")}`)
  parts.push(command.argv.map(quote).join(" "))
  return parts.join(" && ")
}

/** A short human description of the command for errors and spans. @category rendering */
export const describe = (command: RemoteCommand): string => {
  const line = command.argv.map(quote).join(" ")
  return line.length > 200 ? `${line.slice(0, 197)}...` : line
}
