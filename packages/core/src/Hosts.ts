/**
 * Resolves host aliases to `HostConfig` the way `ssh -G` would, plus the mlops hosts file.
 *
 * ssh_config (default `~/.ssh/config`) is read with OpenSSH semantics: Host patterns and
 * wildcards, first value wins, `Include` (relative to `~/.ssh`, globs allowed), `%` tokens
 * and `~` in IdentityFile / UserKnownHostsFile / IdentityAgent, ProxyJump chains (each hop
 * resolved through the same config; `none` disables). `Match exec` never runs and
 * `CanonicalizeHostName` is ignored: resolving a host never spawns a process. A missing
 * ssh_config is an empty one, except one named by `MLOPS_SSH_CONFIG` (an error). A malformed
 * line (no value, an unterminated quote, a keyword that is not a word) is a ConfigFileError
 * naming the file and the line. hosts.json errors name the file, the host and the field.
 *
 * Defaults: User = the local user, Port 22, IdentityFile = the existing ones of
 * `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`, agent = `SSH_AUTH_SOCK`, UserKnownHostsFile =
 * `~/.ssh/known_hosts`, keepalive 15 s × 3, ConnectTimeout 15 s (also when it is 0).
 * StrictHostKeyChecking: `yes`, `ask` or unset → `strict`; `accept-new` → `accept-new`;
 * `no`/`off` → `accept-new` too: mlops never accepts a *changed* key, so `no` keeps only its
 * "record unknown hosts" half.
 *
 * The mlops hosts file (default `$MLOPS_HOME/hosts.json`, MLOPS_HOME default `~/.mlops`)
 * adds per-alias facts, and can define hosts that ssh_config does not know. Its
 * `hostname`/`user`/`port`/`identityFile` act like `ssh -o` options: they win over
 * ssh_config, and its keys are tried before ssh_config's. `stateDir` is the directory ON THE
 * HOST where mlops keeps its state (deployments in `<stateDir>/deployments/<name>/`): absolute
 * or starting with `~/`, default `~/.mlops`. Unknown fields are an error.
 *
 * ```json
 * {
 *   "hosts": {
 *     "ct129": { "python": "/opt/venvs/sglang", "tags": ["h100", "prod"], "stateDir": "/scratch/mlops" },
 *     "lab": { "hostname": "127.0.0.1", "port": 2222, "user": "me", "identityFile": "~/.ssh/lab" }
 *   }
 * }
 * ```
 *
 * Environment (read only by `layerConfig`; `make`/`layer` read none):
 * - `MLOPS_SSH_CONFIG`: the ssh_config file to read instead of `~/.ssh/config`;
 * - `MLOPS_HOME`: the mlops directory holding `hosts.json` (default `~/.mlops`);
 * - `SSH_AUTH_SOCK`: the ssh-agent socket, unless `IdentityAgent` says otherwise.
 *
 * Files are re-read on every call, so edits apply without a restart.
 *
 * @since 0.1.0
 */

import { homedir, userInfo } from "node:os"
import { join } from "node:path"
import { Config, type ConfigError, Context, Effect, Layer, Option } from "effect"
import type { ConfigFileError, HostNotFound } from "./Errors.js"
import type { HostConfig } from "./HostConfig.js"
import * as internal from "./internal/hosts.js"
import * as internalHostsFile from "./internal/hostsFile.js"

/** @category tags */
export class Hosts extends Context.Tag("@mlops/core/Hosts")<
  Hosts,
  {
    readonly resolve: (alias: string) => Effect.Effect<HostConfig, HostNotFound | ConfigFileError>
    /** Every concrete alias (no wildcard patterns), resolved. */
    readonly list: Effect.Effect<ReadonlyArray<HostConfig>, ConfigFileError>
    /**
     * The named groups of hosts (hosts.json's `groups`: the hosts of one deployment across
     * several, rank 0's first), by name.
     */
    readonly groups: Effect.Effect<ReadonlyMap<string, ReadonlyArray<string>>, ConfigFileError>
  }
>() {}

/** Where to read from. Every field is optional; see the module docs for defaults. @category models */
export interface HostsOptions {
  /** ssh_config path. Default `<homeDir>/.ssh/config`. Env (layerConfig): `MLOPS_SSH_CONFIG`. */
  readonly sshConfig?: string
  /**
   * Who named `sshConfig` (e.g. `"MLOPS_SSH_CONFIG"`): then a missing file is a
   * ConfigFileError saying so, instead of an empty config. `layerConfig` sets it.
   */
  readonly sshConfigRequiredBy?: string
  /** mlops directory. Default `<homeDir>/.mlops`. Env (layerConfig): `MLOPS_HOME`. */
  readonly mlopsHome?: string
  /** hosts file path. Default `<mlopsHome>/hosts.json`. */
  readonly hostsFile?: string
  /** What `~` and `%d` mean, and where `~/.ssh` is. Default: the OS home directory. */
  readonly homeDir?: string
  /** Default user and `%u`. Default: the OS user. */
  readonly localUser?: string
  /** ssh-agent socket. Env (layerConfig): `SSH_AUTH_SOCK`. Default: none. */
  readonly agentSocket?: string
}

/** The mlops hosts file schema (`{ hosts: { [alias]: { python?, tags?, stateDir?, hostname?, user?, port?, identityFile? } } }`). @category models */
export const HostsFile = internalHostsFile.HostsFile

const localUserName = (): string => {
  try {
    return userInfo().username
  } catch {
    return process.env.USER ?? "root"
  }
}

const settings = (options: HostsOptions): internal.Settings => {
  const homeDir = options.homeDir ?? homedir()
  const mlopsHome = options.mlopsHome ?? join(homeDir, ".mlops")
  return {
    homeDir,
    sshConfig: options.sshConfig ?? join(homeDir, ".ssh", "config"),
    sshConfigRequiredBy: options.sshConfig === undefined ? undefined : options.sshConfigRequiredBy,
    hostsFile: options.hostsFile ?? join(mlopsHome, "hosts.json"),
    localUser: options.localUser ?? localUserName(),
    agentSocket: options.agentSocket
  }
}

/** @category constructors */
export const make = (options: HostsOptions = {}): Effect.Effect<Context.Tag.Service<Hosts>> =>
  Effect.sync(() => {
    const resolved = settings(options)
    const resolve = Effect.fn("Hosts.resolve")(function* (alias: string) {
      const snapshot = yield* internal.load(resolved)
      return yield* internal.resolve(snapshot, alias)
    })
    const list = Effect.gen(function* () {
      const snapshot = yield* internal.load(resolved)
      return yield* Effect.forEach(internal.knownAliases(snapshot), (alias) =>
        internal.resolveKnown(snapshot, alias)
      )
    }).pipe(Effect.withSpan("Hosts.list"))
    const groups = internalHostsFile.loadGroups(resolved.hostsFile).pipe(Effect.withSpan("Hosts.groups"))
    return Hosts.of({ resolve, list, groups })
  })

/** Reads only `options` (no environment). @category layers */
export const layer = (options: HostsOptions = {}): Layer.Layer<Hosts> => Layer.effect(Hosts, make(options))

/**
 * The mlops directory on this machine: `MLOPS_HOME` (empty is unset), default `~/.mlops`.
 *
 * @category config
 */
export const mlopsHome: Config.Config<string> = Config.string("MLOPS_HOME").pipe(
  Config.withDefault(""),
  Config.map((home) => (home === "" ? join(homedir(), ".mlops") : home))
)

/** `MLOPS_SSH_CONFIG`, `MLOPS_HOME` and `SSH_AUTH_SOCK` from the current `ConfigProvider`. @category config */
export const config: Config.Config<HostsOptions> = Config.all({
  sshConfig: Config.option(Config.string("MLOPS_SSH_CONFIG")),
  mlopsHome: Config.option(Config.string("MLOPS_HOME")),
  agentSocket: Config.option(Config.string("SSH_AUTH_SOCK"))
}).pipe(
  Config.map((values): HostsOptions => {
    const set = Object.fromEntries(
      Object.entries(values).flatMap(([key, value]) =>
        Option.isSome(value) && value.value !== "" ? [[key, value.value]] : []
      )
    )
    return set.sshConfig === undefined ? set : { ...set, sshConfigRequiredBy: "MLOPS_SSH_CONFIG" }
  })
)

/** Environment via `config`, then `overrides` on top (for CLI flags). @category layers */
export const layerConfig = (overrides: HostsOptions = {}): Layer.Layer<Hosts, ConfigError.ConfigError> =>
  Layer.effect(
    Hosts,
    Effect.flatMap(config, (fromEnv) => make({ ...fromEnv, ...overrides }))
  )
