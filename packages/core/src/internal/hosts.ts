/**
 * Alias → HostConfig, the way `ssh -G` computes it, merged with the mlops hosts file.
 *
 * @internal
 */

import { access } from "node:fs/promises"
import { hostname as localHostname } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { ConfigFileError, HostNotFound } from "../Errors.js"
import { HostConfig, type HostKeyPolicy, type JumpHost } from "../HostConfig.js"
import * as HostsFile from "./hostsFile.js"
import * as SshConfig from "./sshConfig.js"

/** The entry's container fields as the host's container settings (none set: no settings). */
const containerOf = (entry: HostsFile.HostEntry | undefined) => {
  if (entry === undefined) return {}
  const settings = {
    ...(entry.image === undefined ? {} : { image: entry.image }),
    ...(entry.runtime === undefined ? {} : { runtime: entry.runtime }),
    ...(entry.pull === undefined ? {} : { pull: entry.pull }),
    ...(entry.shm === undefined ? {} : { shm: entry.shm })
  }
  return Object.keys(settings).length === 0 ? {} : { container: settings }
}

/** Every input resolved to a value; no environment is read past this point. @internal */
export interface Settings {
  readonly sshConfig: string
  /** Set when the ssh_config path was named explicitly (by this setting): it must exist. */
  readonly sshConfigRequiredBy: string | undefined
  readonly hostsFile: string
  readonly homeDir: string
  readonly localUser: string
  readonly agentSocket: string | undefined
}

/** @internal */
export interface Snapshot {
  readonly settings: Settings
  readonly ssh: SshConfig.SshConfigSet
  readonly hosts: ReadonlyMap<string, HostsFile.HostEntry>
}

const DEFAULT_PORT = 22
const DEFAULT_KEEPALIVE_SECONDS = 15
const DEFAULT_KEEPALIVE_COUNT = 3
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000
/** ssh's default keys, in the order the brief's users expect them tried. */
const DEFAULT_KEYS = ["id_ed25519", "id_ecdsa", "id_rsa"]
const MAX_JUMPS = 8

/** @internal */
export const load = (settings: Settings): Effect.Effect<Snapshot, ConfigFileError> =>
  Effect.map(
    Effect.all({
      ssh: SshConfig.load(
        settings.sshConfig,
        settings.homeDir,
        settings.sshConfigRequiredBy === undefined ? {} : { required: settings.sshConfigRequiredBy }
      ),
      hosts: HostsFile.load(settings.hostsFile)
    }),
    ({ hosts, ssh }) => ({ settings, ssh, hosts })
  )

/** Concrete ssh_config aliases, then hosts-file-only aliases. @internal */
export const knownAliases = (snapshot: Snapshot): ReadonlyArray<string> => [
  ...new Set([...SshConfig.concreteAliases(snapshot.ssh), ...snapshot.hosts.keys()])
]

const sources = (snapshot: Snapshot) => [...snapshot.ssh.files.keys(), snapshot.settings.hostsFile]

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

const all = (value: string | ReadonlyArray<string> | undefined): ReadonlyArray<string> =>
  value === undefined ? [] : typeof value === "string" ? [value] : value

interface Context {
  readonly snapshot: Snapshot
  readonly alias: string
  /** Where errors point: the block's file, else the main ssh_config. */
  readonly file: string
}

const fail = (ctx: Context, reason: string, fix?: string) =>
  new ConfigFileError({
    path: ctx.file,
    host: ctx.alias,
    reason: `host "${ctx.alias}": ${reason}`,
    ...(fix ? { fix } : {})
  })

const integer = (ctx: Context, directive: string, raw: string | undefined, min: number, max: number) =>
  Effect.suspend(() => {
    if (raw === undefined) return Effect.succeed(undefined)
    const value = Number(raw)
    return /^\d+$/.test(raw.trim()) && value >= min && value <= max
      ? Effect.succeed(value)
      : Effect.fail(fail(ctx, `${directive} "${raw}" is not an integer between ${min} and ${max}`))
  })

interface Tokens {
  readonly hostname: string
  readonly user: string
  readonly port: number
}

/** `~` and the `%` tokens ssh expands in IdentityFile, UserKnownHostsFile and IdentityAgent. */
const expandPath = (ctx: Context, directive: string, raw: string, tokens: Tokens) =>
  Effect.suspend(() => {
    const { homeDir, localUser } = ctx.snapshot.settings
    const table: Record<string, string> = {
      "%": "%",
      d: homeDir,
      u: localUser,
      h: tokens.hostname,
      r: tokens.user,
      p: String(tokens.port),
      n: ctx.alias,
      l: localHostname()
    }
    let unknown: string | undefined
    const expanded = raw.replace(/%(.)/g, (whole, token: string) => {
      const value = table[token]
      if (value === undefined) unknown ??= whole
      return value ?? whole
    })
    if (unknown !== undefined)
      return Effect.fail(fail(ctx, `${directive} "${raw}" uses unsupported token ${unknown}`))
    const path = expanded === "~" || expanded.startsWith("~/") ? join(homeDir, expanded.slice(1)) : expanded
    return Effect.succeed(path)
  })

const exists = (path: string) =>
  Effect.promise(() =>
    access(path).then(
      () => true,
      () => false
    )
  )

interface Endpoint {
  readonly hostname: string
  readonly port: number
  readonly user: string
  readonly identityFiles: ReadonlyArray<string>
  readonly computed: SshConfig.Computed
}

/** hosts-file fields act like `ssh -o`: they win over ssh_config; their keys are tried first. */
const endpoint = (ctx: Context, explicit: { readonly user?: string; readonly port?: number }) =>
  Effect.gen(function* () {
    const computed = SshConfig.compute(ctx.snapshot.ssh, ctx.alias)
    const entry = ctx.snapshot.hosts.get(ctx.alias)
    const hostname = (entry?.hostname ?? first(computed.hostname) ?? ctx.alias).replace(/%([%h])/g, (_, t) =>
      t === "%" ? "%" : ctx.alias
    )
    const user = explicit.user ?? entry?.user ?? first(computed.user) ?? ctx.snapshot.settings.localUser
    const port =
      explicit.port ??
      entry?.port ??
      (yield* integer(ctx, "Port", first(computed.port), 1, 65535)) ??
      DEFAULT_PORT
    const tokens = { hostname, user, port }
    const configured = [...all(entry?.identityFile), ...all(computed.identityfile)].filter(
      (f) => f.toLowerCase() !== "none"
    )
    let identityFiles = yield* Effect.forEach(configured, (f) => expandPath(ctx, "IdentityFile", f, tokens))
    if (configured.length === 0) {
      const defaults = DEFAULT_KEYS.map((name) => join(ctx.snapshot.settings.homeDir, ".ssh", name))
      identityFiles = yield* Effect.filter(defaults, exists)
    }
    return { hostname, port, user, identityFiles: [...new Set(identityFiles)], computed } satisfies Endpoint
  })

/** `[user@]host[:port]`, `[v6addr]:port`, `ssh://user@host:port`. */
const parseHop = (ctx: Context, spec: string) =>
  Effect.gen(function* () {
    const rest0 = spec.startsWith("ssh://") ? spec.slice("ssh://".length) : spec
    const at = rest0.lastIndexOf("@")
    const user = at >= 0 ? rest0.slice(0, at) : undefined
    const rest = rest0.slice(at + 1)
    let host = rest
    let port: string | undefined
    if (rest.startsWith("[")) {
      const close = rest.indexOf("]")
      host = rest.slice(1, close)
      if (rest.slice(close + 1).startsWith(":")) port = rest.slice(close + 2)
    } else if (rest.indexOf(":") !== -1 && rest.indexOf(":") === rest.lastIndexOf(":")) {
      host = rest.slice(0, rest.indexOf(":"))
      port = rest.slice(rest.indexOf(":") + 1)
    }
    if (host === "" || user === "") return yield* fail(ctx, `ProxyJump hop "${spec}" is malformed`)
    const parsedPort = yield* integer(ctx, `ProxyJump hop "${spec}" port`, port, 1, 65535)
    return {
      host,
      ...(user !== undefined ? { user } : {}),
      ...(parsedPort !== undefined ? { port: parsedPort } : {})
    }
  })

/** A hop's own ProxyJump is honoured only for the first hop, as `ssh -J a,b` does. */
const jumps = (
  ctx: Context,
  raw: string | undefined,
  chain: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<JumpHost>, ConfigFileError> =>
  Effect.gen(function* () {
    if (raw === undefined || raw.trim().toLowerCase() === "none") return []
    const hops: Array<JumpHost> = []
    const specs = raw
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "")
    for (const [index, spec] of specs.entries()) {
      const hop = yield* parseHop(ctx, spec)
      if (chain.includes(hop.host) || chain.length > MAX_JUMPS) {
        return yield* fail(
          ctx,
          `ProxyJump loops: ${[...chain, hop.host].join(" -> ")}`,
          `add "ProxyJump none" to the Host block of "${hop.host}"`
        )
      }
      const hopCtx = { ...ctx, alias: hop.host }
      const ep = yield* endpoint(hopCtx, hop)
      if (index === 0)
        hops.push(...(yield* jumps(hopCtx, first(ep.computed.proxyjump), [...chain, hop.host])))
      hops.push({
        alias: hop.host,
        hostname: ep.hostname,
        port: ep.port,
        user: ep.user,
        identityFiles: ep.identityFiles
      })
    }
    return hops
  })

const hostKeyPolicy = (ctx: Context, raw: string | undefined) =>
  Effect.suspend((): Effect.Effect<HostKeyPolicy, ConfigFileError> => {
    switch (raw?.toLowerCase()) {
      case undefined:
      case "ask":
      case "yes":
        return Effect.succeed("strict")
      // We never accept a changed key; "no" keeps only its "record unknown hosts" half.
      case "no":
      case "off":
      case "accept-new":
        return Effect.succeed("accept-new")
      default:
        return Effect.fail(fail(ctx, `StrictHostKeyChecking "${raw}" is not yes, no, ask or accept-new`))
    }
  })

const agentSocket = (ctx: Context, raw: string | undefined, tokens: Tokens) =>
  Effect.suspend((): Effect.Effect<string | undefined, ConfigFileError> => {
    const fromEnv = ctx.snapshot.settings.agentSocket
    // `SSH_AUTH_SOCK`, `$SSH_AUTH_SOCK` and `${SSH_AUTH_SOCK}` all name the agent from the environment.
    const variable = raw === undefined ? undefined : /^\$?\{?(\w+)\}?$/.exec(raw)?.[1]
    if (raw === undefined || variable === "SSH_AUTH_SOCK") return Effect.succeed(fromEnv)
    if (raw.toLowerCase() === "none") return Effect.succeed(undefined)
    if (raw.startsWith("$")) {
      return Effect.fail(
        fail(ctx, `IdentityAgent "${raw}": only $SSH_AUTH_SOCK is supported`, "use a socket path")
      )
    }
    return expandPath(ctx, "IdentityAgent", raw, tokens)
  })

/** Resolve without the "is it known" check (used by `list`). @internal */
export const resolveKnown = (snapshot: Snapshot, alias: string): Effect.Effect<HostConfig, ConfigFileError> =>
  Effect.gen(function* () {
    const definedIn = SshConfig.definingFile(snapshot.ssh, alias)
    const entry = snapshot.hosts.get(alias)
    const ctx: Context = { snapshot, alias, file: definedIn ?? snapshot.settings.sshConfig }
    const ep = yield* endpoint(ctx, {})
    const c = ep.computed
    const tokens = { hostname: ep.hostname, user: ep.user, port: ep.port }
    const proxyJump = yield* jumps(ctx, first(c.proxyjump), [alias])
    const agent = yield* agentSocket(ctx, first(c.identityagent), tokens)
    const knownRaw = all(c.userknownhostsfile).filter((f) => f.toLowerCase() !== "none")
    const knownHostsFiles =
      knownRaw.length > 0
        ? yield* Effect.forEach(knownRaw, (f) => expandPath(ctx, "UserKnownHostsFile", f, tokens))
        : [join(snapshot.settings.homeDir, ".ssh", "known_hosts")]
    const interval = yield* integer(ctx, "ServerAliveInterval", first(c.serveraliveinterval), 0, 86_400)
    const countMax = yield* integer(ctx, "ServerAliveCountMax", first(c.serveralivecountmax), 1, 1000)
    const connectTimeout = yield* integer(ctx, "ConnectTimeout", first(c.connecttimeout), 0, 86_400)
    return new HostConfig({
      alias,
      hostname: ep.hostname,
      port: ep.port,
      user: ep.user,
      identityFiles: ep.identityFiles,
      ...(agent !== undefined ? { agent } : {}),
      proxyJump,
      knownHostsFiles,
      hostKeyPolicy: yield* hostKeyPolicy(ctx, first(c.stricthostkeychecking)),
      keepaliveIntervalMs: (interval ?? DEFAULT_KEEPALIVE_SECONDS) * 1000,
      keepaliveCountMax: countMax ?? DEFAULT_KEEPALIVE_COUNT,
      // ConnectTimeout 0 means "the system's TCP timeout" to ssh; we keep a bound instead.
      connectTimeoutMs: connectTimeout ? connectTimeout * 1000 : DEFAULT_CONNECT_TIMEOUT_MS,
      ...(entry?.python !== undefined ? { python: entry.python } : {}),
      tags: entry?.tags ?? [],
      ...(entry?.stateDir !== undefined ? { stateDir: entry.stateDir } : {}),
      ...(entry?.slurm !== undefined ? { slurm: entry.slurm } : {}),
      ...containerOf(entry),
      source: definedIn ?? (entry !== undefined ? snapshot.settings.hostsFile : snapshot.settings.sshConfig)
    })
  })

/**
 * Known = in the hosts file, or named by a Host block pattern other than a bare `*`
 * (so `gpu-7` is known through `Host gpu-*`, but a typo is not known through `Host *`).
 *
 * @internal
 */
export const resolve = (
  snapshot: Snapshot,
  alias: string
): Effect.Effect<HostConfig, ConfigFileError | HostNotFound> =>
  snapshot.hosts.has(alias) || SshConfig.definingFile(snapshot.ssh, alias) !== undefined
    ? resolveKnown(snapshot, alias)
    : Effect.fail(new HostNotFound({ alias, known: knownAliases(snapshot), sources: sources(snapshot) }))
