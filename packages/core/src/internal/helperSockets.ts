/**
 * Where this machine remembers the sockets of persistent remote helpers (`remoteHelper.ts`), so
 * that a new connection, from this process or a later `mlops` run, reaches a running helper
 * without the login shell: one file per helper key in a private directory (0700, each file
 * 0600, holding the socket's absolute path on the host), or this process's memory when no
 * directory is given. Best effort: a file that cannot be read or written is as if absent.
 *
 * The key names one helper: the helper program itself (a new mlops starts its own), every hop
 * of the route with its user and port, and the host key the server proved it holds (a
 * reinstalled or different machine behind the same name gets a helper of its own).
 *
 * @internal
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import type { HostConfig } from "../HostConfig.js"
import { HELPER_PY } from "./remoteHelperScript.js"

export interface HelperSockets {
  readonly recall: (key: string) => Effect.Effect<string | undefined>
  readonly remember: (key: string, socket: string) => Effect.Effect<void>
  readonly forget: (key: string) => Effect.Effect<void>
}

/** The helper's key on `host`: lowercase hex, short enough for a socket file name. */
export const keyOf = (host: HostConfig, hostKey: Uint8Array): string => {
  const hash = createHash("sha256").update(HELPER_PY)
  for (const hop of [...host.proxyJump, host]) hash.update(`\0${hop.user}@${hop.hostname}:${hop.port}`)
  return hash.update("\0").update(hostKey).digest("hex").slice(0, 24)
}

/** What the helper prints and a recalled file may hold: an absolute path fit for a Unix socket. */
export const isSocketPath = (text: string): boolean =>
  text.startsWith("/") && !/[\0\n]/.test(text) && Buffer.byteLength(text) <= 100

const remembered = new Map<string, string>()

/** This process's memory only. */
export const inMemory: HelperSockets = {
  recall: (key) => Effect.sync(() => remembered.get(key)),
  remember: (key, socket) => Effect.sync(() => void remembered.set(key, socket)),
  forget: (key) => Effect.sync(() => void remembered.delete(key))
}

/** Ours and private: anyone else able to write here could point our commands at their socket. */
const isPrivate = (stats: fs.Stats): boolean =>
  (process.getuid === undefined || stats.uid === process.getuid()) && (stats.mode & 0o077) === 0

/** The file's text, if it and its directory are ours, private and not symlinks. */
const readPrivate = (dir: string, file: string): string => {
  const dirStats = fs.lstatSync(dir)
  if (!dirStats.isDirectory() || !isPrivate(dirStats)) throw new Error(`${dir} is not a private directory`)
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  try {
    const stats = fs.fstatSync(fd)
    if (!stats.isFile() || !isPrivate(stats)) throw new Error(`${file} is not a private file`)
    return fs.readFileSync(fd, "utf8")
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Files in `dir` (created 0700 on first write). A directory or file that is not ours and
 * private (mode 0700 / 0600, not a symlink) is never read: recall finds nothing there.
 */
export const inDirectory = (dir: string): HelperSockets => {
  const fileOf = (key: string) => path.join(dir, key)
  return {
    recall: (key) =>
      Effect.try(() => readPrivate(dir, fileOf(key)).trim()).pipe(
        Effect.map((text) => (isSocketPath(text) ? text : undefined)),
        Effect.orElseSucceed(() => undefined)
      ),
    remember: (key, socket) =>
      Effect.try(() => {
        fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
        fs.chmodSync(dir, 0o700) // one made wider by hand would never be read back
        // written aside and renamed: a concurrent reader sees the old path or the new one, whole
        const aside = `${fileOf(key)}.${process.pid}.tmp`
        fs.writeFileSync(aside, `${socket}\n`, { mode: 0o600 })
        fs.renameSync(aside, fileOf(key))
      }).pipe(Effect.ignore),
    forget: (key) => Effect.try(() => fs.rmSync(fileOf(key), { force: true })).pipe(Effect.ignore)
  }
}
