/**
 * `RemoteFs` over one lazily-opened, reused sftp channel. The channel holds one permit of the
 * connection's channel budget while it is open (sshd counts it as a session), and is
 * reopened on next use if it closes.
 *
 * @internal
 */
import { Deferred, Duration, Effect, FiberId, Runtime } from "effect"
import type { Client, SFTPWrapper, Stats } from "ssh2"
import type { FileStat, RemoteFs } from "../Connection.js"
import { type ConnectError, RemoteFileError } from "../Errors.js"
import { boundedWait } from "./boundedWait.js"
import { freed, type SlotActivity } from "./sshChannels.js"
import { type Endpoint, fileFailure, isDisconnected, lost } from "./sshErrors.js"

type FsError = RemoteFileError | ConnectError

const READ_CHUNK = 256 * 1024
/** What mlops creates on a host: private to the user. */
const PRIVATE_FILE = 0o600
const PRIVATE_DIR = 0o700

export const makeFiles = (
  client: Client,
  endpoint: Pick<Endpoint, "alias">,
  budget: Effect.Semaphore,
  timeout: Duration.Duration,
  slots: SlotActivity
): Effect.Effect<RemoteFs> =>
  Effect.gen(function* () {
    // ssh2 reports a closed channel through a callback: its permit goes back through this runtime
    const releasePermit = Runtime.runSync(yield* Effect.runtime<never>())
    let current: SFTPWrapper | undefined
    let home: string | undefined

    const open = Effect.async<SFTPWrapper, FsError>((resume) => {
      try {
        client.sftp((error, sftp) => {
          if (error) {
            return resume(
              Effect.fail(
                isDisconnected(error)
                  ? lost(endpoint, error)
                  : fileFailure(endpoint, "", "open sftp channel", error)
              )
            )
          }
          sftp.on("error", () => {})
          sftp.once("close", () => {
            if (current === sftp) current = undefined
            releasePermit(Effect.zipRight(freed(slots), budget.release(1)))
          })
          resume(Effect.succeed(sftp))
        })
      } catch (error) {
        resume(Effect.fail(lost(endpoint, error)))
      }
    })

    let opening: Deferred.Deferred<SFTPWrapper, FsError> | undefined

    /**
     * The shared channel. It is opened by a background fiber that callers only await, so a
     * caller's timeout or interruption cannot strand a half-opened channel or its permit.
     */
    const sftp: Effect.Effect<SFTPWrapper, FsError> = Effect.suspend(() => {
      if (current !== undefined) return Effect.succeed(current)
      if (opening !== undefined) return Deferred.await(opening)
      const pending = Deferred.unsafeMake<SFTPWrapper, FsError>(FiberId.none)
      opening = pending
      const openShared = budget.take(1).pipe(
        Effect.zipRight(open.pipe(Effect.tapError(() => budget.release(1)))),
        Effect.tap((opened) =>
          Effect.sync(() => {
            current = opened
          })
        ),
        Effect.exit,
        Effect.flatMap((exit) =>
          Effect.suspend(() => {
            opening = undefined
            return Deferred.done(pending, exit)
          })
        )
      )
      return Effect.forkDaemon(openShared).pipe(Effect.zipRight(Deferred.await(pending)))
    })

    /** One sftp request, with the connection's step timeout. */
    const call = <A>(
      path: string,
      operation: string,
      run: (sftp: SFTPWrapper, done: (error: Error | null | undefined, value?: A) => void) => void
    ): Effect.Effect<A, FsError> =>
      Effect.flatMap(sftp, (session) =>
        Effect.async<A, FsError>((resume) => {
          run(session, (error, value) => {
            if (error)
              resume(
                Effect.fail(
                  isDisconnected(error)
                    ? lost(endpoint, error)
                    : fileFailure(endpoint, path, operation, error)
                )
              )
            else resume(Effect.succeed(value as A))
          })
        })
      ).pipe(
        Effect.timeoutFail({
          duration: timeout,
          onTimeout: () =>
            new RemoteFileError({
              host: endpoint.alias,
              path,
              operation,
              reason: `no answer within ${Duration.toMillis(timeout)} ms`,
              notFound: false
            })
        })
      )

    const resolvePath = (path: string): Effect.Effect<string, FsError> => {
      if (path !== "~" && !path.startsWith("~/")) return Effect.succeed(path)
      const rest = path.slice(2)
      const homeDir =
        home !== undefined
          ? Effect.succeed(home)
          : call<string>(".", "resolve home directory", (s, done) => s.realpath(".", done)).pipe(
              Effect.tap((resolved) => {
                home = resolved
              })
            )
      return Effect.map(homeDir, (dir) => (rest === "" ? dir : `${dir}/${rest}`))
    }

    const statRaw = (path: string) =>
      call<Stats>(path, "stat", (s, done) => s.stat(path, done)).pipe(
        Effect.map((stats): FileStat | undefined => ({
          size: stats.size,
          mtimeMs: stats.mtime * 1000,
          isDirectory: stats.isDirectory(),
          mode: stats.mode & 0o7777
        })),
        Effect.catchIf(
          (error) => error._tag === "RemoteFileError" && error.notFound,
          () => Effect.succeed(undefined)
        )
      )

    const stat: RemoteFs["stat"] = (path) => Effect.flatMap(resolvePath(path), statRaw)

    const mkdirAbsolute = (path: string): Effect.Effect<void, FsError> =>
      Effect.gen(function* () {
        const existing = yield* statRaw(path)
        if (existing?.isDirectory) return
        if (existing !== undefined) {
          return yield* fileFailure(endpoint, path, "mkdir", new Error("exists and is not a directory"))
        }
        const parent = path.replace(/\/+[^/]*\/*$/, "")
        if (parent !== "" && parent !== path) yield* mkdirAbsolute(parent)
        yield* call<void>(path, "mkdir", (s, done) =>
          s.mkdir(path, { mode: PRIVATE_DIR }, (e) => done(e))
        ).pipe(
          // lost a race with another creator: fine if it is a directory now
          Effect.catchTag("RemoteFileError", (error) =>
            Effect.flatMap(statRaw(path), (now) => (now?.isDirectory ? Effect.void : Effect.fail(error)))
          )
        )
      })

    const mkdir: RemoteFs["mkdir"] = (path) => Effect.flatMap(resolvePath(path), mkdirAbsolute)

    const read: RemoteFs["read"] = (path, options = {}) =>
      Effect.gen(function* () {
        const full = yield* resolvePath(path)
        const offset = options.offset ?? 0
        const handle = yield* call<Buffer>(full, "open", (s, done) => s.open(full, "r", done))
        const session = yield* sftp
        return yield* Effect.gen(function* () {
          const length =
            options.length ??
            Math.max(0, (yield* call<Stats>(full, "fstat", (s, done) => s.fstat(handle, done))).size - offset)
          const out = Buffer.alloc(length)
          let filled = 0
          while (filled < length) {
            const want = Math.min(READ_CHUNK, length - filled)
            const got = yield* call<number>(full, "read", (s, done) =>
              s.read(handle, out, filled, want, offset + filled, (e, bytesRead) => done(e, bytesRead))
            )
            if (got === 0) break
            filled += got
          }
          return new Uint8Array(out.buffer, out.byteOffset, filled)
        }).pipe(Effect.ensuring(Effect.sync(() => session.close(handle, () => {}))))
      })

    // open (created with `mode`), fchmod (an existing file gets `mode` before its new content),
    // write, close: the content is never readable under a wider mode
    const write: RemoteFs["write"] = (path, data, options = {}) =>
      Effect.gen(function* () {
        const full = yield* resolvePath(path)
        const parent = full.replace(/\/+[^/]*$/, "")
        if (parent !== "" && parent !== full) yield* mkdirAbsolute(parent)
        const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data)
        const mode = options.mode ?? PRIVATE_FILE
        const handle = yield* call<Buffer>(full, "open", (s, done) => s.open(full, "w", { mode }, done))
        const session = yield* sftp
        yield* Effect.gen(function* () {
          yield* call<void>(full, "chmod", (s, done) => s.fchmod(handle, mode, (e) => done(e)))
          if (bytes.length > 0)
            yield* call<void>(full, "write", (s, done) =>
              s.write(handle, bytes, 0, bytes.length, 0, (e) => done(e))
            )
        }).pipe(
          Effect.ensuring(
            Effect.async<void>((resume) => session.close(handle, () => resume(Effect.void))).pipe(
              boundedWait(timeout),
              Effect.ignore
            )
          )
        )
      })

    return {
      stat,
      read,
      write,
      mkdir,
      resolvePath
    } satisfies RemoteFs
  })
