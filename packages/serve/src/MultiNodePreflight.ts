/**
 * The preflight of a multi-node launch, across its hosts, before anything starts (issue 22's
 * cross-node checks): each host's engine install (found as a launch finds it), GPUs and facts
 * (`CrossNodeCheck.gather`), compared; and the rendezvous port tried from the hosts themselves
 * (`RendezvousProbe`). Every problem at once (`CrossNodeProblems`), each with its host and fix;
 * a node with several interfaces gets a suggestion, not a refusal.
 *
 * A launch across several hosts (`LaunchRequest.hosts`) runs it before anything else.
 *
 * @since 0.1.0
 */
import { ConnectionPool } from "@mlops/core/ConnectionPool"
import * as Probes from "@mlops/core/Probes"
import * as RendezvousProbe from "@mlops/core/RendezvousProbe"
import { Effect, Either, Schema } from "effect"
import * as CrossNodeCheck from "./CrossNodeCheck.js"
import type { Registry } from "./Engine.js"
import type { Located, Spec as RuntimeSpec } from "./Runtime.js"
import * as Runtimes from "./Runtimes.js"

/** One problem as a person reads it. @category models */
export const Problem = Schema.Struct({
  /** `InstallsDiffer`, `ModelMissing`, `PortTaken`, `Unreachable`, `EngineNotFound`, ... */
  kind: Schema.String,
  /** The host it is about (the head for the rendezvous port; every host for a difference). */
  host: Schema.String,
  text: Schema.String,
  fix: Schema.String
})
/** @category models */
export type Problem = typeof Problem.Type

/** The hosts of a multi-node launch disagree or cannot meet: every problem found. @category errors */
export class CrossNodeProblems extends Schema.TaggedError<CrossNodeProblems>()("CrossNodeProblems", {
  hosts: Schema.Array(Schema.String),
  problems: Schema.Array(Problem)
}) {
  override get message() {
    return `the ${this.hosts.length} hosts of this launch (${this.hosts.join(", ")}) would not start together: ${this.problems.length} problem${this.problems.length === 1 ? "" : "s"}\n${this.problems.map((p, i) => `  ${i + 1}. ${p.host}: ${p.text}; fix: ${p.fix}`).join("\n")}`
  }
}

/** @category models */
export interface Request {
  /** The hosts, rank 0's first. */
  readonly hosts: ReadonlyArray<string>
  readonly engines: Registry
  /** The engine's flags for the whole deployment. */
  readonly argv: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
  /** Where the ranks meet on the head. */
  readonly rendezvousPort: number
  /** The address the others reach the head by (default: the head's address on their subnet). */
  readonly headAddress?: string
  /** How the engine is found on each host (`--python`, `--image`); default: each host's entry. */
  readonly runtime?: RuntimeSpec
}

/** @category models */
export interface Passed {
  readonly headAddress: string
  /** Each host's engine install as its runtime found it, in the hosts' order (a launch starts it from there). */
  readonly installs: ReadonlyArray<Located>
  readonly nodes: ReadonlyArray<CrossNodeCheck.NodeFacts>
  /** Interfaces to name for NCCL and Gloo (not refusals). */
  readonly suggestions: ReadonlyArray<string>
}

const describe = (p: CrossNodeCheck.CrossNodeProblem): Problem => {
  switch (p._tag) {
    case "InstallsDiffer":
      return {
        kind: p._tag,
        host: Object.keys(p.byHost).join(", "),
        text: `different engine installs: ${Object.entries(p.byHost)
          .map(([h, i]) => `${h} ${i}`)
          .join(", ")}`,
        fix: p.fix
      }
    case "ModelMissing":
      return { kind: p._tag, host: p.host, text: `no ${p.path}/config.json`, fix: p.fix }
    case "ModelsDiffer":
      return {
        kind: p._tag,
        host: Object.keys(p.byHost).join(", "),
        text: `${p.path}/config.json differs (${Object.entries(p.byHost)
          .map(([h, x]) => `${h} ${x}`)
          .join(", ")})`,
        fix: p.fix
      }
    case "TooFewGpus":
      return {
        kind: p._tag,
        host: p.host,
        text: `${p.has} GPU${p.has === 1 ? "" : "s"}, ${p.needs} needed per node`,
        fix: p.fix
      }
    case "ClockSkew":
      return { kind: p._tag, host: p.host, text: `clock off by ${p.offsetMs} ms`, fix: p.fix }
    case "ChooseInterface":
      return { kind: p._tag, host: p.host, text: `${p.interfaces.length} interfaces`, fix: p.fix }
  }
}

const rendezvousProblem = (p: RendezvousProbe.RendezvousProblem): Problem =>
  p._tag === "PortTaken"
    ? {
        kind: p._tag,
        host: p.host,
        text: `the rendezvous ${p.address}:${p.port} cannot be bound: ${p.detail}`,
        fix: "pick another rendezvous port, or the head's address the other hosts reach it by"
      }
    : {
        kind: p._tag,
        host: p.from,
        text: `cannot reach the rendezvous ${p.address}:${p.port} (${p.how}: ${p.detail})`,
        fix:
          p.how === "no route"
            ? "give the head's address on a network this host is on"
            : "open the port between the hosts (a firewall drops or rejects it), or give the head's address on a network they share"
      }

/**
 * Check the hosts of a multi-node launch against each other: what it found, or
 * `CrossNodeProblems` with every problem.
 *
 * @category programs
 */
export const run = Effect.fn("MultiNodePreflight.run")(function* (request: Request) {
  const pool = yield* ConnectionPool
  const env = request.env ?? {}
  const conns = yield* Effect.forEach(request.hosts, (host) => pool.get(host), { concurrency: "unbounded" })
  const problems: Array<Problem> = []
  const found = yield* Effect.forEach(
    conns,
    (conn) =>
      Effect.gen(function* () {
        const runtime = yield* Runtimes.resolve(conn.host, request.runtime)
        const located = yield* Effect.either(runtime.locate(conn, { engines: request.engines, env }))
        const gpus = yield* Effect.either(Probes.gpus(conn))
        return { conn, located, gpus: Either.isRight(gpus) ? gpus.right.length : undefined }
      }),
    { concurrency: "unbounded" }
  )
  for (const f of found)
    if (Either.isLeft(f.located))
      problems.push({
        kind: "EngineNotFound",
        host: f.conn.host.alias,
        text: f.located.left.message.split("\n")[0] ?? f.located.left._tag,
        fix: "install the engine there as on the other hosts (or name its Python environment in hosts.json)"
      })
  const head = found[0]
  const engine =
    head !== undefined && Either.isRight(head.located) ? head.located.right.engine : request.engines[0]
  const modelPath = engine?.modelOf(request.argv) ?? "model"
  const decoded =
    engine === undefined ? undefined : yield* Effect.either(engine.latestFlags.decode(request.argv))
  const gpusPerNode =
    engine === undefined || decoded === undefined || Either.isLeft(decoded)
      ? 0
      : engine.gpusOf(decoded.right.args).perNode
  const nodes = yield* Effect.forEach(
    found,
    (f) =>
      CrossNodeCheck.gather(f.conn, {
        modelPath,
        install: Either.isRight(f.located)
          ? `${f.located.right.engine.name} ${f.located.right.located.engineVersion}${f.located.right.located.runtime === "image" ? ` (${f.located.right.located.installId})` : ""}`
          : undefined,
        gpus: f.gpus
      }),
    { concurrency: "unbounded" }
  )
  // the head's address on a network the others share, else its ssh address
  const others = nodes.slice(1).flatMap((n) => n.interfaces)
  const headAddress =
    request.headAddress ??
    nodes[0]?.interfaces.find((i) => others.some((o) => CrossNodeCheck.onSubnet(i, o.address)))?.address ??
    conns[0]!.host.hostname
  const compared = CrossNodeCheck.compare(nodes, { modelPath, gpusPerNode, headAddress })
  problems.push(...compared.filter((p) => p._tag !== "ChooseInterface").map(describe))
  const rendezvous = yield* RendezvousProbe.probe({
    head: conns[0]!,
    address: headAddress,
    port: request.rendezvousPort,
    others: conns.slice(1)
  })
  problems.push(...rendezvous.map(rendezvousProblem))
  if (problems.length > 0) return yield* new CrossNodeProblems({ hosts: request.hosts, problems })
  return {
    headAddress,
    installs: found.flatMap((f) => (Either.isRight(f.located) ? [f.located.right.located] : [])),
    nodes,
    suggestions: compared.flatMap((p) => (p._tag === "ChooseInterface" ? [p.fix] : []))
  } satisfies Passed
})
