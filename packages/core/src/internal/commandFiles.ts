/**
 * `RemoteFs` as commands (one `python3` per operation) on the connection, for when sshd has no
 * session left for sftp: under `MaxSessions 1` the remote helper holds the one session, and
 * its commands need none. The same contract as the sftp side: `~/` against the home
 * directory, files created or replaced with `mode` (0600) before their content is written,
 * directories created 0700, `undefined` from `stat` for a missing path. File contents travel
 * on stdin and stdout (base64 out), never on the command line; what is written passes, as any
 * command's stdin does, through the wrapper's unlinked 0600 temp file. `python3 -I`: the home
 * directory's modules, PYTHONPATH and user site stay out.
 *
 * @internal
 */
import { Effect } from "effect"
import type { ExecOptions, ExecResult, FileStat, RemoteFs } from "../Connection.js"
import { type CommandError, type ConnectError, RemoteFileError } from "../Errors.js"
import * as RemoteCommand from "../RemoteCommand.js"
import { isChannelOpenFailure } from "./sshErrors.js"

/** argv: op, path[, offset, length | mode]. Exit 2: no such file; 1: another OSError (stderr says). */
const FILES_PY = `
import base64, errno, json, os, stat, sys
op, path = sys.argv[1], sys.argv[2]
if path == "~" or path.startswith("~/"):
    path = os.path.expanduser("~") + path[1:]
def makedirs(d):
    if d == "" or os.path.isdir(d):
        return
    makedirs(os.path.dirname(d.rstrip("/")))
    try:
        os.mkdir(d, 0o700)
        os.chmod(d, 0o700)
    except FileExistsError:
        if not os.path.isdir(d):
            raise
try:
    if op == "resolve":
        sys.stdout.write(path)
    elif op == "stat":
        st = os.stat(path)
        sys.stdout.write(json.dumps([st.st_size, st.st_mtime * 1000, stat.S_ISDIR(st.st_mode), st.st_mode & 0o7777]))
    elif op == "read":
        offset, length = int(sys.argv[3]), int(sys.argv[4])
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read() if length < 0 else f.read(length)
        sys.stdout.write(base64.b64encode(data).decode("ascii"))
    elif op == "mkdir":
        if os.path.exists(path) and not os.path.isdir(path):
            raise OSError(errno.EEXIST, "exists and is not a directory")
        makedirs(path)
    elif op == "write":
        mode = int(sys.argv[3], 8)
        makedirs(os.path.dirname(path))
        data = sys.stdin.buffer.read()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, mode)
        try:
            os.fchmod(fd, mode)
            os.ftruncate(fd, 0)
            os.write(fd, data)
        finally:
            os.close(fd)
except OSError as e:
    sys.stderr.write(e.strerror or str(e))
    sys.exit(2 if e.errno == errno.ENOENT else 1)
`

type Exec = (
  command: RemoteCommand.RemoteCommand,
  options?: ExecOptions
) => Effect.Effect<ExecResult, CommandError>

export const makeCommandFiles = (exec: Exec, alias: string): RemoteFs => {
  const fileError = (operation: string, path: string, reason: string, notFound = false) =>
    new RemoteFileError({ host: alias, path, operation, reason, notFound })

  /** One operation: its stdout, or the RemoteFileError naming the path and operation. */
  const run = (
    operation: string,
    path: string,
    args: ReadonlyArray<string> = [],
    stdin?: Uint8Array
  ): Effect.Effect<string, RemoteFileError | ConnectError> =>
    Effect.flatMap(
      exec(
        RemoteCommand.make(["python3", "-I", "-c", FILES_PY, operation, path, ...args]),
        stdin === undefined ? undefined : { stdin }
      ).pipe(
        // a refused channel or a timeout is this operation failing; a lost connection stays itself
        Effect.catchTags({
          ChannelOpenFailed: (error) => Effect.fail(fileError(operation, path, error.message)),
          CommandTimeout: (error) => Effect.fail(fileError(operation, path, error.message))
        })
      ),
      (result) =>
        result.exitCode === 0
          ? Effect.succeed(result.stdout)
          : Effect.fail(
              fileError(
                operation,
                path,
                result.stderr.trim() || `python3 exited with ${result.exitCode ?? result.signal}`,
                result.exitCode === 2
              )
            )
    )

  /** The answer's stdout as `parse` reads it, or a RemoteFileError saying it was unreadable. */
  const parsed =
    <A>(operation: string, path: string, parse: (out: string) => A | undefined) =>
    (out: string): Effect.Effect<A, RemoteFileError> => {
      const value = (() => {
        try {
          return parse(out)
        } catch {
          return undefined
        }
      })()
      return value === undefined
        ? Effect.fail(
            fileError(operation, path, `unreadable answer from python3: ${JSON.stringify(out.slice(0, 80))}`)
          )
        : Effect.succeed(value)
    }

  const statOf = (out: string): FileStat | undefined => {
    const answer: unknown = JSON.parse(out)
    if (!Array.isArray(answer) || answer.length !== 4) return undefined
    const [size, mtimeMs, isDirectory, mode] = answer
    return typeof size === "number" &&
      typeof mtimeMs === "number" &&
      typeof isDirectory === "boolean" &&
      typeof mode === "number"
      ? { size, mtimeMs, isDirectory, mode }
      : undefined
  }

  const bytesOf = (out: string): Uint8Array | undefined =>
    /^[A-Za-z0-9+/]*={0,2}$/.test(out) && out.length % 4 === 0
      ? new Uint8Array(Buffer.from(out, "base64"))
      : undefined

  const stat: RemoteFs["stat"] = (path) =>
    run("stat", path).pipe(
      Effect.flatMap(parsed("stat", path, statOf)),
      Effect.map((found): FileStat | undefined => found),
      Effect.catchIf(
        (error) => error._tag === "RemoteFileError" && error.notFound,
        () => Effect.succeed(undefined)
      )
    )

  return {
    stat,
    read: (path, options = {}) =>
      Effect.flatMap(
        run("read", path, [String(options.offset ?? 0), String(options.length ?? -1)]),
        parsed("read", path, bytesOf)
      ),
    write: (path, data, options = {}) =>
      Effect.asVoid(
        run(
          "write",
          path,
          [(options.mode ?? 0o600).toString(8)],
          typeof data === "string" ? new TextEncoder().encode(data) : data
        )
      ),
    mkdir: (path) => Effect.asVoid(run("mkdir", path)),
    resolvePath: (path) =>
      path !== "~" && !path.startsWith("~/") ? Effect.succeed(path) : run("resolve", path)
  }
}

const SFTP_REFUSED_FIX =
  "sshd has no session left for sftp (MaxSessions reached): raise MaxSessions in the host's sshd_config, or keep python3 on the login PATH so mlops' remote helper can carry the file operations"

/**
 * `sftp`, until sshd refuses its session: then `commands` when the remote helper serves (every
 * later operation too), else the refusal with its fix.
 */
export const sftpOrCommands = (
  sftp: RemoteFs,
  commands: RemoteFs,
  helperServes: Effect.Effect<boolean>
): RemoteFs => {
  let useCommands = false
  const either =
    <Args extends ReadonlyArray<unknown>, A>(
      op: (fs: RemoteFs) => (...args: Args) => Effect.Effect<A, RemoteFileError | ConnectError>
    ) =>
    (...args: Args): Effect.Effect<A, RemoteFileError | ConnectError> =>
      useCommands
        ? op(commands)(...args)
        : op(sftp)(...args).pipe(
            Effect.catchIf(isSftpRefused, (refused) =>
              Effect.flatMap(helperServes, (serves) => {
                if (!serves) return Effect.fail(new RemoteFileError({ ...refused, fix: SFTP_REFUSED_FIX }))
                useCommands = true
                return op(commands)(...args)
              })
            )
          )
  return {
    stat: either((fs) => fs.stat),
    read: either((fs) => fs.read),
    write: either((fs) => fs.write),
    mkdir: either((fs) => fs.mkdir),
    resolvePath: either((fs) => fs.resolvePath)
  }
}

const isSftpRefused = (error: RemoteFileError | ConnectError): error is RemoteFileError =>
  error._tag === "RemoteFileError" &&
  error.operation === "open sftp channel" &&
  isChannelOpenFailure(error.reason)
