/**
 * The remote helper on the real sshd: the login shell (and its `~/.bashrc`) runs once per
 * connection instead of once per command, commands still see what the rc set up, and a host
 * where the helper cannot work (no python3 on the login PATH, sshd refusing stream-local
 * forwarding, a login shell too slow to start it in time) runs every command on exec channels
 * instead, with the same results.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeConnection } from "../../src/ConnectionPool.js"
import { make as cmd } from "../../src/RemoteCommand.js"
import * as ShellUsers from "../support/ShellUsers.js"
import * as Sshd from "../support/Sshd.js"
import { launcherOf } from "../support/transports.js"

const counting = {
  name: "mlops-rc-count",
  alias: "rccount",
  rc: 'echo run >> "$HOME/rc-runs"\nexport MLOPS_RC_VAR=from-rc\n'
}

/** A directory with the tools the wrapper needs and no python3. */
const toolsWithoutPython = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-nopython-"))
  fs.chmodSync(dir, 0o755)
  for (const tool of ["sh", "head", "mktemp", "rm", "kill", "sleep", "setsid", "cat", "echo", "printenv"])
    fs.symlinkSync(`/usr/bin/${tool}`, path.join(dir, tool))
  return dir
}

/** A login shell that takes 1.5 s before it runs anything (a heavy `conda init`, a slow NFS home). */
const sluggish = {
  // its own user: `helpersOf` counts this user's helpers, and other tests run helpers as theirs
  name: "mlops-rc-sluggish",
  alias: "sluggish",
  rc: "sleep 1.5\nexport MLOPS_RC_VAR=from-rc\n"
}

/** The helper processes (`python3 -I -c <helper>`) of `user` still running. */
const helpersOf = (user: string): ReadonlyArray<string> => {
  try {
    return execFileSync("pgrep", ["-u", user, "-f", "python3 -I -c"], { encoding: "utf8" })
      .split("\n")
      .filter((pid) => pid !== "")
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

const runFive = (conn: Effect.Effect.Success<ReturnType<typeof makeConnection>>) =>
  Effect.forEach(Array.from({ length: 5 }), () => conn.exec(cmd(["printenv", "MLOPS_RC_VAR"])))

describe("remote helper (real sshd)", () => {
  it.scopedLive(
    "the rc runs once per connection, not per command, and commands see what it exported",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({
          extraConfig: [`Match User ${counting.name}`, "  AuthorizedKeysFile .ssh/authorized_keys"]
        })
        const user = yield* ShellUsers.ensure(sshd, counting)
        const runs = path.join(user.home, "rc-runs")
        const count = () => (fs.existsSync(runs) ? fs.readFileSync(runs, "utf8").split("\n").length - 1 : 0)
        for (const [remoteHelper, expected] of [
          [true, 1],
          [false, 5]
        ] as const) {
          fs.rmSync(runs, { force: true })
          const results = yield* Effect.scoped(
            Effect.flatMap(makeConnection(ShellUsers.hostConfig(sshd, user), { remoteHelper }), runFive)
          )
          assert.deepStrictEqual(
            results.map((r) => r.stdout),
            Array.from({ length: 5 }, () => "from-rc\n")
          )
          assert.strictEqual(count(), expected, `remoteHelper: ${remoteHelper}`)
        }
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "no python3 on the login PATH: commands run on exec channels, with the same results",
    () =>
      Effect.gen(function* () {
        const tools = toolsWithoutPython()
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => fs.rmSync(tools, { recursive: true, force: true }))
        )
        const spec = { name: ShellUsers.users.rcLight.name, alias: "nopython", rc: "" }
        const sshd = yield* Sshd.start({
          extraConfig: [
            `Match User ${spec.name}`,
            "  AuthorizedKeysFile .ssh/authorized_keys",
            `  SetEnv PATH=${tools}`
          ]
        })
        const user = yield* ShellUsers.ensure(sshd, spec)
        const conn = yield* makeConnection(ShellUsers.hostConfig(sshd, user), { remoteHelper: true })
        const result = yield* conn.exec(cmd(["sh", "-c", "echo out; echo err >&2; exit 3"]))
        assert.deepStrictEqual(result, { exitCode: 3, signal: null, stdout: "out\n", stderr: "err\n" })
        // the wrapper's parent is sshd: an exec channel (no python3 to ask, so sh reads /proc)
        const launcher = yield* conn.exec(
          cmd(["sh", "-c", 'read -r _ _ _ parent _ </proc/$PPID/stat && cat "/proc/$parent/comm"'])
        )
        assert.match(launcher.stdout.trim(), /^sshd/)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "sshd refusing stream-local forwarding: commands run on exec channels, with the same results",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({ extraConfig: ["AllowStreamLocalForwarding no"] })
        const conn = yield* makeConnection(sshd.hostConfig, { remoteHelper: true })
        const results = yield* Effect.forEach(["a", "b"], (word) => conn.exec(cmd(["echo", word])))
        assert.deepStrictEqual(
          results.map((r) => [r.exitCode, r.stdout]),
          [
            [0, "a\n"],
            [0, "b\n"]
          ]
        )
        assert.match(yield* launcherOf(conn), /^sshd/)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive(
    "a login shell slower than the start-up timeout: commands run on exec channels, and no helper is left",
    () =>
      Effect.gen(function* () {
        const sshd = yield* Sshd.start({
          extraConfig: [`Match User ${sluggish.name}`, "  AuthorizedKeysFile .ssh/authorized_keys"]
        })
        const user = yield* ShellUsers.ensure(sshd, sluggish)
        const conn = yield* makeConnection(ShellUsers.hostConfig(sshd, user), {
          remoteHelper: true,
          remoteHelperStartTimeout: "300 millis"
        })
        const result = yield* conn.exec(cmd(["printenv", "MLOPS_RC_VAR"]))
        assert.deepStrictEqual([result.exitCode, result.stdout], [0, "from-rc\n"])
        assert.match(yield* launcherOf(conn), /^sshd/)
        // the abandoned start's channel was closed: its login shell never got to start python3
        yield* Effect.sleep("2 seconds")
        assert.deepStrictEqual(helpersOf(user.name), [])
      }),
    { timeout: 60_000 }
  )
})
