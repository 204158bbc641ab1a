/**
 * A real terminal for tests: a tmux server on a private socket (`-L`), one 160×50 window
 * running a plain bash, keys typed into it, and the screen read back with
 * `tmux capture-pane -p` as a person sees it. Waits poll the screen (bounded), never sleep a
 * fixed time. `close()` kills this server only.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))

/** The executable as the README runs it (`npm run mlops --` runs this file). */
export const mlopsBin = path.resolve(here, "..", "..", "bin", "mlops")

export const columns = 160
export const rows = 50

/**
 * The shell: a `$ ` prompt, and after each command typed with `run` its exit status on a line
 * of its own (printed before the next prompt, so also after Ctrl-C ended the command).
 */
const rcFile = [
  "PS1='$ '",
  "HISTFILE=/dev/null",
  `PROMPT_COMMAND='__status=$?; [ -n "$__typed" ] && printf "[exit %s]\\n" "$__status"; __typed='`
].join("\n")
const exitPattern = /^\[exit (\d+)\]$/m

export interface Terminal {
  /** Type a command line and Enter; its exit status is printed after it as `[exit N]`. */
  readonly run: (commandLine: string) => void
  /** tmux key names: `C-c`, `Enter`. */
  readonly keys: (...keys: ReadonlyArray<string>) => void
  /** The visible screen (50 rows), trailing blank rows dropped. */
  readonly screen: () => string
  /** The same with the colours and attributes tmux shows (`capture-pane -e`). */
  readonly screenWithEscapes: () => string
  /** Everything printed since the last `clear()`, wrapped lines joined (scrollback included). */
  readonly transcript: () => string
  /** Poll the screen until `ready(screen)` holds; fails after `timeoutMs` naming `what`. */
  readonly waitFor: (what: string, ready: (screen: string) => boolean, timeoutMs?: number) => Promise<string>
  /** Wait for the command typed last to end; its exit status and the transcript. */
  readonly finished: (timeoutMs?: number) => Promise<{ readonly code: number; readonly transcript: string }>
  /** Empty the screen and the scrollback (between commands). */
  readonly clear: () => Promise<void>
  readonly close: () => void
}

let opened = 0

/** Open a terminal whose shell has `env`; `cleanup` paths are removed on close. */
export const open = (
  env: Readonly<Record<string, string>>,
  cleanup: ReadonlyArray<string> = []
): Terminal => {
  const socket = `mlops-term-${process.pid}-${++opened}`
  const tmux = (...args: ReadonlyArray<string>) =>
    execFileSync("tmux", ["-L", socket, "-f", "/dev/null", ...args], {
      encoding: "utf8",
      timeout: 10_000,
      stdio: ["ignore", "pipe", "pipe"]
    })
  const rc = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "mlops-term-rc-")), "bashrc")
  fs.writeFileSync(rc, `${rcFile}\n`)
  const shellEnv = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`])
  tmux(
    "new-session",
    "-d",
    "-s",
    "t",
    "-x",
    String(columns),
    "-y",
    String(rows),
    ...shellEnv,
    `bash --noprofile --rcfile ${rc}`
  )
  tmux("set-option", "-g", "history-limit", "10000")
  // kill-server leaves the socket file behind: remove it on close
  const socketPath = tmux("display-message", "-p", "-t", "t", "#{socket_path}").trim()
  const screenOf = (...flags: ReadonlyArray<string>) =>
    tmux("capture-pane", "-p", ...flags, "-t", "t").replace(/\s+$/, "")
  const screen = () => screenOf()
  const waitFor = async (what: string, ready: (screen: string) => boolean, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const now = screen()
      if (ready(now)) return now
      if (Date.now() > deadline) {
        throw new Error(`the terminal never showed ${what} within ${timeoutMs} ms; its screen:\n${now}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const transcript = () => screenOf("-J", "-S", "-")
  let closed = false
  return {
    run: (commandLine) => {
      tmux("send-keys", "-t", "t", "-l", `__typed=1; ${commandLine}`)
      tmux("send-keys", "-t", "t", "Enter")
    },
    keys: (...keys) => tmux("send-keys", "-t", "t", ...keys),
    screen,
    screenWithEscapes: () => screenOf("-e"),
    transcript,
    waitFor,
    finished: async (timeoutMs) => {
      const shown = await waitFor("the command's exit status", (s) => exitPattern.test(s), timeoutMs)
      return { code: Number(exitPattern.exec(shown)![1]), transcript: transcript() }
    },
    clear: async () => {
      tmux("send-keys", "-t", "t", "clear", "Enter")
      await waitFor("a cleared screen", (s) => s.trim() === "$")
      tmux("clear-history", "-t", "t")
    },
    close: () => {
      if (closed) return
      closed = true
      try {
        tmux("kill-server")
      } catch {
        // already gone
      }
      for (const dir of [path.dirname(rc), ...cleanup]) fs.rmSync(dir, { recursive: true, force: true })
      if (socketPath !== "") fs.rmSync(socketPath, { force: true })
    }
  }
}
