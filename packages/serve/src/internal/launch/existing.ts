/**
 * Idempotence: a deployment of the same name that is alive. The same launch and healthy →
 * it is the result (`AlreadyRunning`); otherwise `DeploymentExists`, unless `replace` (then it
 * is stopped first).
 *
 * "The same launch" compares what SGLang would run, not the text: both argvs are decoded
 * with the catalogue of the running server's SGLang version, so aliases (`--tp` /
 * `--tp-size`), order and defaults given explicitly do not matter; the environment compares
 * the variable names and a salted digest of the values (with the secret flag values), since
 * the host keeps no value.
 *
 * @internal
 */

import type { Connection } from "@mlops/core/Connection"
import { Effect, Either } from "effect"
import * as Deployment from "../../Deployment.js"
import type { Engine, Flags } from "../../Engine.js"
import * as Placements from "../../Placements.js"
import { isHealthyAt } from "../../Readiness.js"
import * as Secrets from "../../Secrets.js"
import * as Stop from "../../Stop.js"
import type { Spec } from "../seams.js"
import { DeploymentExists, type LaunchProgress } from "./types.js"

/** Stable text of decoded args (keys sorted). */
const canonical = (args: object): string =>
  JSON.stringify(Object.fromEntries(Object.entries(args).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))))

/** True when the two argvs decode to the same args; textual equality when either does not decode. */
export const sameArgs = (
  a: ReadonlyArray<string>,
  b: ReadonlyArray<string>,
  flags: Flags | undefined
): Effect.Effect<boolean> =>
  Effect.gen(function* () {
    if (JSON.stringify(a) === JSON.stringify(b)) return true
    if (flags === undefined) return false
    const [da, db] = yield* Effect.all([Effect.either(flags.decode(a)), Effect.either(flags.decode(b))])
    if (Either.isLeft(da) || Either.isLeft(db)) return false
    return canonical(da.right.args) === canonical(db.right.args)
  })

/** JSON with every object's keys sorted: equal values, equal text. */
const deepCanonical = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v
  )

/** The same spec (settings compared by value, in any order). */
const sameSpec = (a: Spec, b: Spec) => deepCanonical(a) === deepCanonical(b)

/** Why a recorded deployment is not this launch (undefined when it is). */
const difference = (
  engine: Engine,
  state: Deployment.State,
  shown: ReadonlyArray<string>,
  env: Readonly<Record<string, string>>,
  secrets: ReadonlyArray<Secrets.ArgvSecret>,
  specs: { readonly placement: Spec; readonly runtime: Spec },
  /** What the runtime would run now (an image name's current id), when it tells installs apart. */
  install: string | undefined,
  /** The hosts of this launch, rank 0's first (`[host]` on one). */
  hosts: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    if (state.argv === undefined || state.meta === undefined) return "its record is incomplete"
    const runsOn = state.ranks?.hosts ?? hosts.slice(0, 1)
    if (JSON.stringify(runsOn) !== JSON.stringify(hosts))
      return `it runs ${runsOn.length > 1 ? `across ${runsOn.join(", ")}` : `on ${runsOn[0]} alone`}`
    if (state.meta.engine !== engine.name) return `it runs ${state.meta.engine}`
    const placement = Deployment.placementOf(state.meta)
    if (!sameSpec(placement, specs.placement)) return `it runs elsewhere (${JSON.stringify(placement)})`
    const runtime = Deployment.runtimeOf(state.meta)
    if (!sameSpec(runtime, specs.runtime))
      return `its engine was found another way (${JSON.stringify(runtime)}, at ${state.meta.python})`
    if (install !== undefined && state.meta.install !== undefined && install !== state.meta.install)
      return `it runs ${state.meta.install}, and the same name now gives ${install}`
    const version = Deployment.versionOf(state.meta)
    const flags = version === null ? undefined : engine.shippedFlags(version)
    const same =
      (yield* sameArgs(state.argv.argv, shown, flags)) ||
      (yield* sameArgs(state.argv.requestedArgv, shown, flags))
    if (!same) return "it runs with different args"
    const names = Object.keys(env).sort()
    if (JSON.stringify([...state.meta.envNames].sort()) !== JSON.stringify(names)) {
      return `it runs with other environment variables (${state.meta.envNames.join(", ") || "none"})`
    }
    if (!Secrets.matches(state.meta.secrets, env, secrets)) {
      return "it runs with other environment values or secret flag values"
    }
    return undefined
  })

/** The running deployment to return, or undefined when a new one must be started. */
export const check = Effect.fn("Launch.existing")(function* (
  conn: Connection,
  o: {
    readonly engine: Engine
    readonly name: string
    readonly port: number
    /** The request's argv as shown (secrets `***`) and its secrets. */
    readonly shown: ReadonlyArray<string>
    readonly secrets: ReadonlyArray<Secrets.ArgvSecret>
    readonly env: Readonly<Record<string, string>>
    readonly replace: boolean
    /** Where this launch would run and how it finds its engine (a relaunch must match both). */
    readonly placement: Spec
    readonly runtime: Spec
    /** What the runtime would run now (an image's id), when it tells installs apart. */
    readonly install: string | undefined
    /** Every host of this launch, rank 0's first (default: this one alone). */
    readonly hosts?: ReadonlyArray<string>
    readonly emit: (p: LaunchProgress) => Effect.Effect<void>
  }
) {
  const { name, port, emit } = o
  const host = conn.host.alias
  const existing = yield* Deployment.read(conn, name)
  if (existing === undefined) return undefined
  const { placed } = yield* Placements.ofDeployment(conn, existing)
  if (placed === undefined || !(yield* placed.isAlive(conn))) return undefined
  const different = yield* difference(
    o.engine,
    existing,
    o.shown,
    o.env,
    o.secrets,
    o,
    o.install,
    o.hosts ?? [host]
  )
  const port0 = existing.meta?.port ?? port
  // where the server answers from the host (its loopback, a compute node)
  const address = yield* placed.address(conn).pipe(Effect.orElseSucceed(() => undefined))
  const healthy = address !== undefined && (yield* isHealthyAt(conn, port0, address, "10 seconds"))
  if (different === undefined && healthy && address !== undefined) {
    const deployment = Deployment.fromState(host, existing, placed, address)
    if (deployment !== undefined) {
      yield* emit({ _tag: "AlreadyRunning", deployment })
      return { deployment, address }
    }
  }
  if (!o.replace) {
    return yield* new DeploymentExists({
      host,
      name,
      server: placed.server.label,
      reason: different ?? "it runs with these args but is not healthy (yet)",
      runningArgv: existing.argv?.argv ?? [],
      fix: `pass replace (--replace) to stop it first, or choose another name (--name ${name}-2)`
    })
  }
  // a deployment across hosts is replaced whole: every rank, on its own host
  if ((existing.ranks?.hosts.length ?? 1) > 1) {
    const stopped = yield* Stop.stop(host, name).pipe(
      // gone meanwhile: nothing left to replace
      Effect.catchTag("DeploymentNotFound", () => Effect.succeed(undefined))
    )
    if (stopped === undefined) return undefined
    yield* emit({
      _tag: "Replacing",
      name,
      server: stopped.ranks.map((r) => `${r.server.label} on ${r.host}`).join(", "),
      outcome: stopped.outcome
    })
    return undefined
  }
  const outcome = yield* placed.stop(conn)
  yield* emit({ _tag: "Replacing", name, server: placed.server.label, outcome })
  return undefined
})
