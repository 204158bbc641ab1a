/** Helpers for integration tests whose sshd runs on this machine: look at local processes. */
import { execFileSync } from "node:child_process"

/** PIDs of local processes whose command line matches `pattern` (pgrep -f). */
export const pgrep = (pattern: string): Array<string> => {
  try {
    return execFileSync("pgrep", ["-f", pattern], { encoding: "utf8" }).trim().split("\n").filter(Boolean)
  } catch {
    return []
  }
}

/** True while a local process exists. */
export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** A token unlikely to appear anywhere else in a process list. */
export const unique = (name: string) => `${name}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`

/** A pgrep pattern matching `token` but not itself ("[m]arker" does not match "[m]arker"). */
export const selfExcluding = (token: string) => `[${token[0]}]${token.slice(1)}`
