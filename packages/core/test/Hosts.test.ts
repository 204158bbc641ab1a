import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import * as Hosts from "../src/Hosts.js"

/** A fake home directory: `files` maps paths relative to it to contents. */
const makeHome = (files: Record<string, string>) => {
  const home = mkdtempSync(join(tmpdir(), "mlops-hosts-"))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(home, path)), { recursive: true })
    writeFileSync(join(home, path), text)
  }
  return home
}

const hostsIn = (home: string, options: Hosts.HostsOptions = {}) =>
  Effect.runSync(Hosts.make({ homeDir: home, localUser: "tester", ...options }))

const sshConfig = (...lines: ReadonlyArray<string>) => lines.join("\n") + "\n"

describe("Hosts", () => {
  it.live("Host wildcards apply and the first value obtained wins", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig(
          "Host gpu-*",
          "  User mlops",
          "  Port 2200",
          "Host gpu-1",
          "  HostName 127.0.0.5",
          "  User ignored",
          "Host *",
          "  User fallback",
          "  ServerAliveInterval 30"
        )
      })
      const host = yield* hostsIn(home).resolve("gpu-1")
      assert.strictEqual(host.hostname, "127.0.0.5")
      assert.strictEqual(host.user, "mlops")
      assert.strictEqual(host.port, 2200)
      assert.strictEqual(host.keepaliveIntervalMs, 30_000)
      // known through the gpu-* pattern although not written out
      const other = yield* hostsIn(home).resolve("gpu-9")
      assert.strictEqual(other.hostname, "gpu-9")
      assert.strictEqual(other.port, 2200)
    })
  )

  it.live(
    "defaults: local user, port 22, existing default keys, known_hosts, keepalive, timeout, strict",
    () =>
      Effect.gen(function* () {
        const home = makeHome({
          ".ssh/config": sshConfig("Host plain", "  HostName 127.0.0.1"),
          ".ssh/id_ed25519": "key",
          ".ssh/id_rsa": "key"
        })
        const host = yield* hostsIn(home).resolve("plain")
        assert.strictEqual(host.user, "tester")
        assert.strictEqual(host.port, 22)
        assert.deepStrictEqual(host.identityFiles, [join(home, ".ssh/id_ed25519"), join(home, ".ssh/id_rsa")])
        assert.deepStrictEqual(host.knownHostsFiles, [join(home, ".ssh/known_hosts")])
        assert.strictEqual(host.hostKeyPolicy, "strict")
        assert.strictEqual(host.keepaliveIntervalMs, 15_000)
        assert.strictEqual(host.keepaliveCountMax, 3)
        assert.strictEqual(host.connectTimeoutMs, 15_000)
        assert.strictEqual(host.agent, undefined)
        assert.deepStrictEqual(host.proxyJump, [])
        assert.deepStrictEqual(host.tags, [])
        assert.strictEqual(host.python, undefined)
        assert.strictEqual(host.source, join(home, ".ssh/config"))
        const withAgent = yield* hostsIn(home, { agentSocket: "/tmp/agent.sock" }).resolve("plain")
        assert.strictEqual(withAgent.agent, "/tmp/agent.sock")
      })
  )

  it.live("explicit settings: StrictHostKeyChecking, UserKnownHostsFile list, timeouts, IdentityAgent", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig(
          "Host loose",
          "  StrictHostKeyChecking no",
          "  UserKnownHostsFile ~/.ssh/kh1 /etc/kh2",
          "  ConnectTimeout 5",
          "  ServerAliveInterval 0",
          "  ServerAliveCountMax 7",
          "  IdentityAgent ~/agent.sock",
          "Host new",
          "  StrictHostKeyChecking accept-new",
          "  IdentityAgent none",
          "Host asked",
          "  StrictHostKeyChecking ask",
          "  IdentityAgent $SSH_AUTH_SOCK"
        )
      })
      const hosts = hostsIn(home, { agentSocket: "/tmp/env.sock" })
      const loose = yield* hosts.resolve("loose")
      assert.strictEqual(loose.hostKeyPolicy, "accept-new")
      assert.deepStrictEqual(loose.knownHostsFiles, [join(home, ".ssh/kh1"), "/etc/kh2"])
      assert.strictEqual(loose.connectTimeoutMs, 5000)
      assert.strictEqual(loose.keepaliveIntervalMs, 0)
      assert.strictEqual(loose.keepaliveCountMax, 7)
      assert.strictEqual(loose.agent, join(home, "agent.sock"))
      const fresh = yield* hosts.resolve("new")
      assert.strictEqual(fresh.hostKeyPolicy, "accept-new")
      assert.strictEqual(fresh.agent, undefined)
      const asked = yield* hosts.resolve("asked")
      assert.strictEqual(asked.hostKeyPolicy, "strict")
      assert.strictEqual(asked.agent, "/tmp/env.sock")
    })
  )

  it.live(
    "Include follows globs relative to ~/.ssh, and a Host-block Include applies only to that host",
    () =>
      Effect.gen(function* () {
        const home = makeHome({
          ".ssh/config": sshConfig(
            "Include conf.d/*.conf",
            "Host special other",
            "  Include special.inc",
            "  Port 2300"
          ),
          ".ssh/conf.d/a.conf": sshConfig("Host inc1", "  HostName 127.0.0.11"),
          ".ssh/conf.d/b.conf": sshConfig("Host inc2", "  HostName 127.0.0.12", "  User bee"),
          ".ssh/conf.d/ignored.txt": sshConfig("Host notincluded"),
          ".ssh/special.inc": sshConfig(
            "User specialuser",
            "Host other",
            "  HostName 127.0.0.99",
            "Host *",
            "  IdentityFile ~/.ssh/special_key"
          )
        })
        const hosts = hostsIn(home)
        const inc1 = yield* hosts.resolve("inc1")
        assert.strictEqual(inc1.hostname, "127.0.0.11")
        assert.strictEqual(inc1.source, join(home, ".ssh/conf.d/a.conf"))
        assert.strictEqual((yield* hosts.resolve("inc2")).user, "bee")
        const special = yield* hosts.resolve("special")
        assert.strictEqual(special.user, "specialuser")
        assert.strictEqual(special.port, 2300)
        assert.strictEqual(special.hostname, "special")
        assert.deepStrictEqual(special.identityFiles, [join(home, ".ssh/special_key")])
        const other = yield* hosts.resolve("other")
        assert.strictEqual(other.hostname, "127.0.0.99")
        // the conditional include's blocks (even its Host *) stay out of unrelated hosts
        assert.strictEqual(inc1.user, "tester")
        assert.deepStrictEqual(inc1.identityFiles, [])
        const missing = yield* Effect.flip(hosts.resolve("notincluded"))
        assert.strictEqual(missing._tag, "HostNotFound")
      })
  )

  it.live(
    "ProxyJump: hops resolve through the config, first hop's own jump first, user@host:port, none",
    () =>
      Effect.gen(function* () {
        const home = makeHome({
          ".ssh/config": sshConfig(
            "Host target",
            "  HostName 127.0.0.10",
            "  ProxyJump hop2,admin@127.0.0.30:2022",
            "Host hop2",
            "  HostName 127.0.0.20",
            "  User hopuser",
            "  ProxyJump bastion",
            "Host bastion",
            "  HostName 127.0.0.40",
            "  Port 2201",
            "  IdentityFile ~/.ssh/bastion_key",
            "  ProxyJump none",
            "Host direct",
            "  ProxyJump none",
            "Host loopa",
            "  ProxyJump loopb",
            "Host loopb",
            "  ProxyJump loopa",
            "Host *",
            "  ProxyJump bastion"
          )
        })
        const hosts = hostsIn(home)
        const target = yield* hosts.resolve("target")
        assert.deepStrictEqual(
          target.proxyJump.map((hop) => [hop.alias, hop.user, hop.hostname, hop.port]),
          [
            ["bastion", "tester", "127.0.0.40", 2201],
            ["hop2", "hopuser", "127.0.0.20", 22],
            ["127.0.0.30", "admin", "127.0.0.30", 2022]
          ]
        )
        assert.deepStrictEqual(target.proxyJump[0]!.identityFiles, [join(home, ".ssh/bastion_key")])
        assert.deepStrictEqual((yield* hosts.resolve("direct")).proxyJump, [])
        assert.deepStrictEqual((yield* hosts.resolve("bastion")).proxyJump, [])
        const loop = yield* Effect.flip(hosts.resolve("loopa"))
        assert.strictEqual(loop._tag, "ConfigFileError")
        assert.include(loop.message, "loopa -> loopb -> loopa")
      })
  )

  it.live("IdentityFile expands ~ and %d %u %h %r %p %n tokens, keeps order, adds no defaults", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig(
          "Host keys",
          "  HostName 127.0.0.7",
          "  User remote",
          "  Port 2022",
          "  IdentityFile ~/.ssh/%r@%h-%p",
          "  IdentityFile %d/keys/%u_%n_%%",
          "Host badtoken",
          "  IdentityFile ~/.ssh/%C"
        ),
        ".ssh/id_ed25519": "key"
      })
      const host = yield* hostsIn(home).resolve("keys")
      assert.deepStrictEqual(host.identityFiles, [
        join(home, ".ssh/remote@127.0.0.7-2022"),
        join(home, "keys/tester_keys_%")
      ])
      const error = yield* Effect.flip(hostsIn(home).resolve("badtoken"))
      assert.strictEqual(error._tag, "ConfigFileError")
      assert.include(error.message, "%C")
    })
  )

  it.live("the hosts file adds python and tags, and defines hosts ssh_config lacks (its fields win)", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig("Host gpu-1", "  HostName 127.0.0.5", "Host *", "  User fallback"),
        ".mlops/hosts.json": JSON.stringify({
          hosts: {
            "gpu-1": { python: "/opt/venvs/sglang", tags: ["h100", "prod"], stateDir: "/scratch/mlops" },
            lab: { hostname: "127.0.0.1", port: 2222, user: "me", identityFile: "~/.ssh/lab" }
          }
        })
      })
      const hosts = hostsIn(home)
      const gpu = yield* hosts.resolve("gpu-1")
      assert.strictEqual(gpu.python, "/opt/venvs/sglang")
      assert.deepStrictEqual(gpu.tags, ["h100", "prod"])
      assert.strictEqual(gpu.stateDir, "/scratch/mlops")
      assert.strictEqual(gpu.hostname, "127.0.0.5")
      assert.strictEqual(gpu.user, "fallback")
      const lab = yield* hosts.resolve("lab")
      assert.strictEqual(lab.hostname, "127.0.0.1")
      assert.strictEqual(lab.port, 2222)
      assert.strictEqual(lab.user, "me")
      assert.deepStrictEqual(lab.identityFiles, [join(home, ".ssh/lab")])
      assert.strictEqual(lab.source, join(home, ".mlops/hosts.json"))
      assert.strictEqual(lab.stateDir, "~/.mlops", "the default state directory")
      const listed = yield* hosts.list
      assert.deepStrictEqual(
        listed.map((h) => h.alias),
        ["gpu-1", "lab"]
      )
    })
  )

  it.live("an unknown alias fails with HostNotFound listing concrete aliases and the files read", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig("Host alpha beta", "Host gpu-* !gpu-bad", "Host *", "  User x"),
        ".mlops/hosts.json": JSON.stringify({ hosts: { gamma: { python: "/usr/bin/python3" } } })
      })
      const hosts = hostsIn(home)
      for (const alias of ["alhpa", "gpu-bad"]) {
        const error = yield* Effect.flip(hosts.resolve(alias))
        assert.strictEqual(error._tag, "HostNotFound")
        if (error._tag !== "HostNotFound") return
        assert.strictEqual(error.alias, alias)
        assert.deepStrictEqual(error.known, ["alpha", "beta", "gamma"])
        assert.deepStrictEqual(error.sources, [join(home, ".ssh/config"), join(home, ".mlops/hosts.json")])
      }
    })
  )

  it.live("a missing ssh_config is empty, not an error", () =>
    Effect.gen(function* () {
      const home = makeHome({
        "mlops/hosts.json": JSON.stringify({ hosts: { solo: { hostname: "127.0.0.1" } } })
      })
      const hosts = hostsIn(home, { mlopsHome: join(home, "mlops") })
      assert.strictEqual((yield* hosts.resolve("solo")).hostname, "127.0.0.1")
      assert.deepStrictEqual(
        (yield* hosts.list).map((h) => h.alias),
        ["solo"]
      )
    })
  )

  it.live("a bad hosts file is a ConfigFileError naming the file, the host and the field", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<
        readonly [string, { readonly host?: string; readonly field?: string; readonly reason: string }]
      > = [
        ['{ "hosts": {\n  "a": { port: 22 }\n} }', { reason: "not valid JSON" }],
        [
          JSON.stringify({ hosts: { a: { port: "22" } } }),
          {
            host: "a",
            field: "port",
            reason: 'host "a", field "port": expected an integer from 1 to 65535, got "22"'
          }
        ],
        [
          JSON.stringify({ hosts: { a: { port: 70000 } } }),
          { host: "a", field: "port", reason: "got 70000" }
        ],
        [
          JSON.stringify({ hosts: { a: { pyton: "/usr/bin/python3" } } }),
          { host: "a", field: "pyton", reason: 'host "a": unknown field "pyton"' }
        ],
        [
          JSON.stringify({ hosts: { a: { stateDir: "scratch/mlops" } } }),
          { host: "a", field: "stateDir", reason: "an absolute path or one starting with ~/" }
        ],
        [JSON.stringify({ hosts: { a: "gpu" } }), { host: "a", reason: 'host "a" must be an object' }],
        [JSON.stringify({ host: {} }), { field: "host", reason: 'unknown top-level field "host"' }]
      ]
      for (const [text, expected] of cases) {
        const home = makeHome({ ".ssh/config": sshConfig("Host a"), ".mlops/hosts.json": text })
        const error = yield* Effect.flip(hostsIn(home).resolve("a"))
        assert.strictEqual(error._tag, "ConfigFileError")
        if (error._tag !== "ConfigFileError") return
        assert.strictEqual(error.path, join(home, ".mlops/hosts.json"))
        assert.include(error.reason, expected.reason)
        assert.strictEqual(error.host, expected.host, text)
        assert.strictEqual(error.field, expected.field, text)
        assert.notInclude(error.message, "readonly", "not a dump of the schema type")
      }
    })
  )

  it.live("an unknown hosts.json field suggests the known one it resembles", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig("Host a"),
        ".mlops/hosts.json": JSON.stringify({ hosts: { a: { pyton: "/usr/bin/python3" } } })
      })
      const error = yield* Effect.flip(hostsIn(home).resolve("a"))
      assert.include(error._tag === "ConfigFileError" ? error.fix : "", 'did you mean "python"?')
    })
  )

  it.live("invalid JSON in hosts.json names the line", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".ssh/config": sshConfig("Host a"),
        ".mlops/hosts.json": '{\n  "hosts": {\n    "a": { "port": 22, }\n  }\n}\n'
      })
      const error = yield* Effect.flip(hostsIn(home).resolve("a"))
      assert.strictEqual(error._tag === "ConfigFileError" ? error.line : undefined, 3)
    })
  )

  it.live("a malformed ssh_config line is a ConfigFileError naming the file and the line", () =>
    Effect.gen(function* () {
      const cases = [
        [["Host a", "  HostName 127.0.0.1", "  Port"], 3, "Port has no value"],
        [["Host a", '  IdentityFile "/keys/my key'], 2, "IdentityFile has an unterminated quote"],
        [["Host a", "", "  Po-rt 22"], 3, '"Po-rt" is not an ssh_config keyword'],
        [["Host"], 1, "Host has no value"]
      ] as const
      for (const [lines, line, reason] of cases) {
        const home = makeHome({ ".ssh/config": sshConfig(...lines) })
        const error = yield* Effect.flip(hostsIn(home).resolve("a"))
        assert.strictEqual(error._tag, "ConfigFileError")
        if (error._tag !== "ConfigFileError") return
        assert.strictEqual(error.path, join(home, ".ssh/config"))
        assert.strictEqual(error.line, line)
        assert.include(error.reason, `line ${line}: ${reason}`)
        assert.include(error.message, `${join(home, ".ssh/config")}:${line}:`)
      }
    })
  )

  it.live("MLOPS_SSH_CONFIG naming a missing file is an error; a missing default ssh_config is empty", () =>
    Effect.gen(function* () {
      const home = makeHome({
        ".mlops/hosts.json": JSON.stringify({ hosts: { solo: { hostname: "127.0.0.1" } } })
      })
      const missing = join(home, "nope", "ssh_config")
      const env = ConfigProvider.fromMap(new Map([["MLOPS_SSH_CONFIG", missing]]))
      const layer = Hosts.layerConfig({ homeDir: home }).pipe(Layer.provide(Layer.setConfigProvider(env)))
      const error = yield* Effect.flip(
        Effect.flatMap(Hosts.Hosts, (hosts) => hosts.resolve("solo")).pipe(Effect.provide(layer))
      )
      assert.strictEqual(error._tag, "ConfigFileError")
      if (error._tag !== "ConfigFileError") return
      assert.strictEqual(error.path, missing)
      assert.include(error.reason, "MLOPS_SSH_CONFIG")
      // without the variable, no ~/.ssh/config is simply no ssh_config hosts
      assert.strictEqual((yield* hostsIn(home).resolve("solo")).hostname, "127.0.0.1")
    })
  )

  it.live("a bad Port is a ConfigFileError naming the ssh_config file", () =>
    Effect.gen(function* () {
      const home = makeHome({ ".ssh/config": sshConfig("Host a", "  Port twenty") })
      const error = yield* Effect.flip(hostsIn(home).resolve("a"))
      assert.strictEqual(error._tag, "ConfigFileError")
      if (error._tag === "ConfigFileError") {
        assert.strictEqual(error.path, join(home, ".ssh/config"))
        assert.include(error.reason, "twenty")
      }
    })
  )

  it.live("Match exec never runs", () =>
    Effect.gen(function* () {
      const home = makeHome({})
      const marker = join(home, "exec-ran")
      writeFileSync(
        join(home, "config"),
        sshConfig(`Match exec "touch ${marker}"`, "  User fromexec", "Host m", "  HostName 127.0.0.1")
      )
      const host = yield* hostsIn(home, { sshConfig: join(home, "config") }).resolve("m")
      assert.strictEqual(host.user, "tester")
      assert.isFalse(existsSync(marker))
    })
  )

  it.live("layerConfig reads MLOPS_SSH_CONFIG, MLOPS_HOME and SSH_AUTH_SOCK", () =>
    Effect.gen(function* () {
      const home = makeHome({
        "elsewhere/ssh_config": sshConfig("Host envhost", "  HostName 127.0.0.3"),
        "mh/hosts.json": JSON.stringify({ hosts: { envhost: { tags: ["from-env"] } } })
      })
      const env = ConfigProvider.fromMap(
        new Map([
          ["MLOPS_SSH_CONFIG", join(home, "elsewhere/ssh_config")],
          ["MLOPS_HOME", join(home, "mh")],
          ["SSH_AUTH_SOCK", "/tmp/from-env.sock"]
        ])
      )
      const layer = Hosts.layerConfig({ homeDir: home }).pipe(Layer.provide(Layer.setConfigProvider(env)))
      const host = yield* Effect.flatMap(Hosts.Hosts, (hosts) => hosts.resolve("envhost")).pipe(
        Effect.provide(layer)
      )
      assert.strictEqual(host.hostname, "127.0.0.3")
      assert.deepStrictEqual(host.tags, ["from-env"])
      assert.strictEqual(host.agent, "/tmp/from-env.sock")
    })
  )

  it.live("groups: named host lists for one deployment across hosts, each problem named with the group", () =>
    Effect.gen(function* () {
      const hostsJson = (groups: unknown) =>
        JSON.stringify({ hosts: { "node-a": { python: "/venv" }, "node-b": {} }, groups })
      const ok = makeHome({ ".mlops/hosts.json": hostsJson({ pair: ["node-a", "node-b"] }) })
      assert.deepStrictEqual([...(yield* hostsIn(ok).groups)], [["pair", ["node-a", "node-b"]]])
      // the hosts themselves still resolve: "groups" is a known top-level field
      assert.strictEqual((yield* hostsIn(ok).resolve("node-a")).python, "/venv")
      assert.strictEqual((yield* hostsIn(makeHome({})).groups).size, 0)
      const cases: ReadonlyArray<readonly [unknown, string]> = [
        [["node-a"], 'group "pair" has 1 host(s): a group is two hosts or more'],
        [["node-a", "node-a"], 'group "pair" names node-a twice'],
        ["node-a,node-b", 'group "pair" must be a list of host aliases'],
        [[1, 2], 'group "pair" must be a list of host aliases']
      ]
      for (const [members, reason] of cases) {
        const home = makeHome({ ".mlops/hosts.json": hostsJson({ pair: members }) })
        const error = yield* Effect.flip(hostsIn(home).groups)
        assert.strictEqual(error.field, "groups")
        assert.include(error.reason, reason)
      }
      const clash = makeHome({ ".mlops/hosts.json": hostsJson({ "node-a": ["node-a", "node-b"] }) })
      assert.include(
        (yield* Effect.flip(hostsIn(clash).groups)).reason,
        'group "node-a" has the name of a host'
      )
    })
  )
})
