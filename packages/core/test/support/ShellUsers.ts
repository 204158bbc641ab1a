/**
 * Extra login users on the test sshd, each with a `~/.bashrc` of its own: `rcSlow` stands for a
 * GPU host whose rc runs `conda init`/`pyenv init` (300 ms per shell), `rcLight` for one with
 * an empty rc. Both have bash as their login shell, so they differ only in the rc's cost.
 *
 * sshd runs every exec through the user's login shell, and Debian's bash reads `~/.bashrc`
 * for commands sshd runs; the harness' own user keeps the machine's rc out with `SHLVL=1`
 * (see the stand-in's sshd config), these users must not. The users are created once per
 * machine (`useradd`, so this needs root, as the harness sshd does) and reused; their rc and
 * authorized_keys are rewritten on every use.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect } from "effect"
import { HostConfig } from "../../src/HostConfig.js"
import { type Sshd, SshdError } from "./Sshd.js"

export interface ShellUser {
  readonly name: string
  readonly home: string
  readonly uid: number
  readonly gid: number
  /** The ssh_config alias (and HostConfig alias) that logs in as this user on the harness sshd. */
  readonly alias: string
}

/** The rc of the slow user: what `conda init` costs on a GPU host, as a plain sleep. */
export const SLOW_RC = "# stands for conda/pyenv init: 300 ms per shell\nsleep 0.3\n"

export const users = {
  rcSlow: { name: "mlops-rc-slow", alias: "rcslow", rc: SLOW_RC },
  rcLight: { name: "mlops-rc-light", alias: "rclight", rc: "" }
} as const

/**
 * sshd_config lines for the harness sshd (last: they are `Match` blocks): these users' keys
 * come from their own home; `extra` adds lines per user name (`SetEnv PATH=...`).
 */
export const sshdConfig = (extra: Readonly<Record<string, ReadonlyArray<string>>> = {}): Array<string> =>
  [users.rcSlow.name, users.rcLight.name].flatMap((name) => [
    `Match User ${name}`,
    "  AuthorizedKeysFile .ssh/authorized_keys",
    ...(extra[name] ?? []).map((line) => `  ${line}`)
  ])

const idOf = (flag: "-u" | "-g", name: string) => Number(execFileSync("id", [flag, name]).toString().trim())

/** Create (once) and set up `spec`'s user: its rc, and the harness client key authorized. */
export const ensure = (
  sshd: Pick<Sshd, "clientKeyPath">,
  spec: { readonly name: string; readonly alias: string; readonly rc: string }
): Effect.Effect<ShellUser, SshdError> =>
  Effect.try({
    try: () => {
      try {
        execFileSync("id", ["-u", spec.name], { stdio: "ignore" })
      } catch {
        execFileSync("/usr/sbin/useradd", ["--create-home", "--shell", "/bin/bash", spec.name], {
          stdio: "pipe"
        })
      }
      // useradd leaves the password locked ("!"), and sshd refuses locked accounts without PAM;
      // "*" is no password, not locked: only the key logs in
      execFileSync("/usr/sbin/usermod", ["--password", "*", spec.name], { stdio: "pipe" })
      const home = execFileSync("getent", ["passwd", spec.name]).toString().trim().split(":")[5]!
      const uid = idOf("-u", spec.name)
      const gid = idOf("-g", spec.name)
      const ssh = path.join(home, ".ssh")
      fs.mkdirSync(ssh, { recursive: true, mode: 0o700 })
      const key = fs.readFileSync(`${sshd.clientKeyPath}.pub`, "utf8")
      fs.writeFileSync(path.join(ssh, "authorized_keys"), key, { mode: 0o600 })
      fs.writeFileSync(path.join(home, ".bashrc"), spec.rc)
      for (const file of [home, ssh, path.join(ssh, "authorized_keys"), path.join(home, ".bashrc")])
        fs.chownSync(file, uid, gid)
      return { name: spec.name, home, uid, gid, alias: spec.alias }
    },
    catch: (error) => new SshdError({ reason: `setting up the test user ${spec.name}: ${String(error)}` })
  })

/** The harness host config, logging in as `user` under its alias. */
export const hostConfig = (sshd: Pick<Sshd, "hostConfig">, user: ShellUser): HostConfig =>
  new HostConfig({ ...sshd.hostConfig, alias: user.alias, user: user.name })

/** An ssh_config (next to the harness one) with a `Host` entry per user. */
export const writeSshConfig = (sshd: Sshd, list: ReadonlyArray<ShellUser>): string => {
  const file = path.join(sshd.dir, "ssh_config_users")
  const entries = list.map((user) =>
    [
      `Host ${user.alias}`,
      "  HostName 127.0.0.1",
      `  Port ${sshd.port}`,
      `  User ${user.name}`,
      `  IdentityFile ${sshd.clientKeyPath}`,
      "  IdentitiesOnly yes",
      "  IdentityAgent none",
      `  UserKnownHostsFile ${sshd.knownHostsPath}`,
      "  GlobalKnownHostsFile /dev/null",
      "  StrictHostKeyChecking yes",
      "  BatchMode yes",
      "  LogLevel ERROR",
      ""
    ].join("\n")
  )
  fs.writeFileSync(file, entries.join("\n"))
  return file
}
