/**
 * The two ways the live connection runs a command, for tests that must hold on both: through
 * the connection's remote helper (the default) and on plain exec channels (the fallback).
 */
import { Effect } from "effect"
import type { Connection } from "../../src/Connection.js"
import { make as cmd } from "../../src/RemoteCommand.js"

export interface Transport {
  readonly name: string
  readonly options: { readonly remoteHelper: boolean }
  /** The process that starts each command's wrapper shell: the helper's python, or sshd. */
  readonly launcher: RegExp
}

export const transports: ReadonlyArray<Transport> = [
  { name: "remote helper", options: { remoteHelper: true }, launcher: /^python3/ },
  { name: "exec channel", options: { remoteHelper: false }, launcher: /^sshd/ }
]

// the command's parent is the wrapper shell; the wrapper's parent launched it
const LAUNCHER = [
  "import os",
  "stat = open('/proc/%d/stat' % os.getppid()).read()",
  "grand = stat.rsplit(')', 1)[1].split()[1]",
  "print(open('/proc/%s/comm' % grand).read().strip())"
].join("\n")

/** The name of the process that launched a command's wrapper on `conn`. */
export const launcherOf = (conn: Connection) =>
  Effect.map(conn.exec(cmd(["python3", "-c", LAUNCHER])), (result) => result.stdout.trim())
