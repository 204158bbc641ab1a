/**
 * Remote commands vs the host's rc files: `mlops status --host H` and a launch's preflight
 * (a launch of the story's command, which probes the host and then stops at the offline rule
 * check with LaunchRulesViolated) on two users of the test sshd that differ only in their
 * `~/.bashrc`: `rcslow` sleeps 300 ms (a GPU host's `conda init`), `rclight` is empty
 * (packages/core/test/support/ShellUsers.ts), each with one running stand-in deployment. Each
 * run opens a fresh connection, in process (the CLI's own start-up is bench/cliStart.ts),
 * alternating users, median of BENCH_RUNS (7); the ratio slow/light is the figure (goal
 * <= 1.5x), printed for plain exec (`MLOPS_REMOTE_HELPER=0`), for a helper attached to its
 * connection (`MLOPS_REMOTE_HELPER_PERSIST=0`: the login shell once per connection), for the
 * default's first connection to a host (`cold`: no helper running before each run) and for
 * the default (a persistent helper, started by the warm-up run).
 *
 *   npx tsx bench/remoteShell.ts      (needs root: it creates the two users once)
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer, Stream } from "effect"
import * as ConnectionPool from "../packages/core/src/ConnectionPool.js"
import * as Hosts from "../packages/core/src/Hosts.js"
import * as ShellUsers from "../packages/core/test/support/ShellUsers.js"
import * as Sshd from "../packages/core/test/support/Sshd.js"
import * as Launch from "../packages/serve/src/Launch.js"
import * as Status from "../packages/serve/src/Status.js"
import * as Stop from "../packages/serve/src/Stop.js"
import * as SglangEngine from "../packages/sglang/src/SglangEngine.js"
import * as Standin from "../packages/sglang/test/integration/standin/install.js"
import { fixedStory, freePort, story } from "../packages/sglang/test/integration/support.js"
import { median } from "./support/stats.js"

const RUNS = Number(process.env.BENCH_RUNS ?? 7)

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const started = performance.now()
    yield* effect
    return performance.now() - started
  })

const program = Effect.gen(function* () {
  // the venv's python must be one the users can run (not a pyenv build under /root)
  process.env.PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  // a stand-in install per user (its fake GPUs are per install), owned by that user, its bin
  // (the stand-in nvidia-smi) first on that user's PATH
  const specs = [ShellUsers.users.rcSlow, ShellUsers.users.rcLight]
  const standins = new Map<string, Standin.Standin>()
  for (const spec of specs) standins.set(spec.alias, yield* Standin.install)
  const sshd = yield* Sshd.start({
    extraConfig: ShellUsers.sshdConfig(
      Object.fromEntries(
        specs.map((spec) => [
          spec.name,
          [`SetEnv PATH=${standins.get(spec.alias)!.bin}:/usr/local/bin:/usr/bin:/bin`]
        ])
      )
    )
  })
  const [slow, light] = [yield* ShellUsers.ensure(sshd, specs[0]!), yield* ShellUsers.ensure(sshd, specs[1]!)]
  for (const user of [slow, light])
    execFileSync("chown", ["-R", `${user.uid}:${user.gid}`, standins.get(user.alias)!.dir])
  const sshConfig = ShellUsers.writeSshConfig(sshd, [slow, light])
  const mlopsHome = standins.get(slow.alias)!.mlopsHome
  fs.writeFileSync(
    path.join(mlopsHome, "hosts.json"),
    JSON.stringify({
      hosts: Object.fromEntries([...standins].map(([alias, standin]) => [alias, { python: standin.venv }]))
    })
  )
  const pool = () => ConnectionPool.layer().pipe(Layer.provideMerge(Hosts.layer({ sshConfig, mlopsHome })))
  const env = { STANDIN_PHASE_SECONDS: "0.02" }
  // one running deployment per user, so status has something to look at (health, pid, GPUs)
  const running: Array<{ alias: string; name: string }> = []
  for (const user of [slow, light]) {
    const name = `bench-rc-${process.pid}`
    yield* Launch.launchDeployment({
      engine: SglangEngine.engine,
      host: user.alias,
      name,
      argv: fixedStory(standins.get(user.alias)!.modelPath, yield* freePort),
      env
    }).pipe(Effect.provide(pool()))
    running.push({ alias: user.alias, name })
  }
  yield* Effect.addFinalizer(() =>
    Effect.forEach(running, (r) =>
      Stop.stop(r.alias, r.name).pipe(
        Effect.timeout("60 seconds"),
        Effect.tapErrorCause((cause) => Effect.logWarning(`stopping ${r.name} on ${r.alias}`, cause)),
        Effect.ignore
      )
    ).pipe(Effect.provide(pool()), Effect.ignore)
  )
  if (process.env.BENCH_HOLD) {
    console.log(`MLOPS_SSH_CONFIG=${sshConfig} MLOPS_HOME=${mlopsHome}`, standins.get(slow.alias)!.modelPath)
    yield* Effect.sleep("10 minutes")
  }
  const preflightPort = String(yield* freePort)
  const preflightArgv = (alias: string) => [...story(standins.get(alias)!.modelPath), "--port", preflightPort]
  const commands = [
    {
      label: "status --host H (1 deployment)",
      run: (alias: string) => Status.ofHost(alias, [SglangEngine.engine]).pipe(Effect.asVoid, Effect.orDie)
    },
    {
      label: "launch preflight (story: rules)",
      run: (alias: string) =>
        Launch.launch({
          engine: SglangEngine.engine,
          host: alias,
          name: `bench-pre-${process.pid}`,
          argv: preflightArgv(alias),
          env,
          // the running deployment holds the fake GPUs: preflight would stop there, not at the rules
          allowBusyGpus: true
        }).pipe(
          Stream.tap((event) => (process.env.BENCH_VERBOSE ? Effect.log(event._tag) : Effect.void)),
          Stream.runDrain,
          Effect.timeoutFail({
            duration: "60 seconds",
            onTimeout: () => ({ _tag: "BenchTimeout" }) as const
          }),
          Effect.flip,
          Effect.filterOrDieMessage(
            (error) => error._tag === "LaunchRulesViolated",
            "expected the story's launch to stop at the rule check"
          ),
          Effect.asVoid,
          Effect.orDie
        )
    }
  ]
  const only = process.env.BENCH_ONLY
  // the helpers' sockets are remembered under the bench's own mlops home
  process.env.MLOPS_HOME = mlopsHome
  const killHelpers = Effect.sync(() => {
    for (const pid of sshd.helpers()) process.kill(pid, "SIGKILL")
  })
  const modes = [
    { label: "plain exec", env: { MLOPS_REMOTE_HELPER: "0" }, cold: false },
    { label: "attached", env: { MLOPS_REMOTE_HELPER_PERSIST: "0" }, cold: false },
    // no helper running before each run: what the first mlops command on a host pays
    { label: "cold", env: {}, cold: true },
    { label: "default", env: {}, cold: false }
  ]
  console.log(`runs: ${RUNS} per cell, users ${slow.name} (~/.bashrc: sleep 0.3) vs ${light.name} (empty)`)
  console.log("each run: a fresh connection (connect + the commands), in process")
  for (const mode of modes) {
    for (const name of ["MLOPS_REMOTE_HELPER", "MLOPS_REMOTE_HELPER_PERSIST"] as const) {
      const value = (mode.env as Partial<Record<string, string>>)[name]
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    for (const command of commands) {
      if (only !== undefined && !command.label.startsWith(only)) continue
      const once = (alias: string) =>
        (mode.cold ? killHelpers : Effect.void).pipe(
          Effect.zipRight(timed(Effect.provide(command.run(alias), pool()))),
          Effect.orDie,
          Effect.tap((t) =>
            process.env.BENCH_VERBOSE
              ? Effect.log(`${command.label} ${alias} ${t.toFixed(0)} ms`)
              : Effect.void
          )
        )
      const times = { slow: [] as Array<number>, light: [] as Array<number> }
      yield* once(light.alias) // warm-up (and the helpers started, where they persist)
      yield* once(slow.alias)
      for (let i = 0; i < RUNS; i++) {
        times.slow.push(yield* once(slow.alias))
        times.light.push(yield* once(light.alias))
      }
      const s = median(times.slow)
      const l = median(times.light)
      console.log(
        `${mode.label.padEnd(10)} ${command.label.padEnd(32)} slow-rc ${s.toFixed(0).padStart(5)} ms  light ${l
          .toFixed(0)
          .padStart(5)} ms  ratio ${(s / l).toFixed(2)}x (goal <= 1.5x)`
      )
    }
  }
})

Effect.runPromise(Effect.scoped(program)).catch((error) => {
  console.error(error)
  process.exit(1)
})
