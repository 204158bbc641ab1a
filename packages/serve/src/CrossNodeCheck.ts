/**
 * What must agree between the nodes of a multi-node launch, read from the nodes themselves
 * before any rank starts (a mismatch otherwise ends in a silent hang at NCCL's init): the
 * engine install each would run, the model's `config.json` at the same path, enough GPUs per
 * node, clocks within a few seconds, and which interface the ranks should talk over when a node
 * has several (`NCCL_SOCKET_IFNAME` / `GLOO_SOCKET_IFNAME`). `gather` reads one node's facts;
 * `compare` names every problem at once. The rendezvous port itself is core's
 * `RendezvousProbe`.
 *
 * @since 0.1.0
 */
import type { Connection } from "@mlops/core/Connection"
import type { CommandError } from "@mlops/core/Errors"
import * as RemoteCommand from "@mlops/core/RemoteCommand"
import { Clock, Effect } from "effect"

/** One node's facts. @category models */
export interface NodeFacts {
  readonly host: string
  /** What it would run (`sglang 0.5.11`, an image id); undefined when not known. */
  readonly install: string | undefined
  /** The sha256 of the model's `config.json` there; undefined when it has none. */
  readonly modelConfig: string | undefined
  /** Its GPUs; undefined when not known. */
  readonly gpus: number | undefined
  /** Its clock minus this machine's, in ms (the round trip's midpoint); undefined when not read. */
  readonly clockOffsetMs: number | undefined
  /** Its IPv4 interfaces besides loopback. */
  readonly interfaces: ReadonlyArray<Interface>
}

/** @category models */
export interface Interface {
  readonly name: string
  readonly address: string
  readonly prefix: number
}

/** One thing that would keep the ranks from starting together. @category models */
export type CrossNodeProblem =
  | {
      readonly _tag: "InstallsDiffer"
      readonly byHost: Readonly<Record<string, string>>
      readonly fix: string
    }
  | { readonly _tag: "ModelMissing"; readonly host: string; readonly path: string; readonly fix: string }
  | {
      readonly _tag: "ModelsDiffer"
      readonly path: string
      readonly byHost: Readonly<Record<string, string>>
      readonly fix: string
    }
  | {
      readonly _tag: "TooFewGpus"
      readonly host: string
      readonly has: number
      readonly needs: number
      readonly fix: string
    }
  | { readonly _tag: "ClockSkew"; readonly host: string; readonly offsetMs: number; readonly fix: string }
  | {
      readonly _tag: "ChooseInterface"
      readonly host: string
      readonly interfaces: ReadonlyArray<Interface>
      /** The interface on the head's subnet, when one is. */
      readonly suggested: string | undefined
      readonly fix: string
    }

const toNumber = (address: string): number =>
  address.split(".").reduce((n, part) => n * 256 + Number(part), 0)

/** Whether `address` is on `iface`'s subnet. @category checks */
export const onSubnet = (iface: Interface, address: string): boolean => {
  const block = 2 ** (32 - Math.min(32, Math.max(0, iface.prefix)))
  return Math.floor(toNumber(iface.address) / block) === Math.floor(toNumber(address) / block)
}

/**
 * Every problem between the nodes, in a fixed order (installs, model, GPUs, clocks,
 * interfaces). `headAddress` is the address the others reach rank 0 by.
 *
 * @category checks
 */
export const compare = (
  nodes: ReadonlyArray<NodeFacts>,
  o: {
    readonly modelPath: string
    readonly gpusPerNode: number
    readonly headAddress: string
    /** Largest clock difference to this machine tolerated (default 5 s). */
    readonly maxSkewMs?: number
  }
): ReadonlyArray<CrossNodeProblem> => {
  const problems: Array<CrossNodeProblem> = []
  const installs = nodes.filter((n) => n.install !== undefined)
  if (new Set(installs.map((n) => n.install)).size > 1)
    problems.push({
      _tag: "InstallsDiffer",
      byHost: Object.fromEntries(installs.map((n) => [n.host, n.install!])),
      fix: "install the same engine release (or pull the same image id) on every node"
    })
  for (const n of nodes)
    if (n.modelConfig === undefined)
      problems.push({
        _tag: "ModelMissing",
        host: n.host,
        path: o.modelPath,
        fix: `copy the model to ${o.modelPath} on ${n.host} (every node reads it at the same path), or use a shared filesystem`
      })
  const configs = nodes.filter((n) => n.modelConfig !== undefined)
  if (new Set(configs.map((n) => n.modelConfig)).size > 1)
    problems.push({
      _tag: "ModelsDiffer",
      path: o.modelPath,
      byHost: Object.fromEntries(configs.map((n) => [n.host, n.modelConfig!.slice(0, 12)])),
      fix: `${o.modelPath}/config.json differs between nodes: sync the same checkpoint to every node`
    })
  for (const n of nodes)
    if (n.gpus !== undefined && n.gpus < o.gpusPerNode)
      problems.push({
        _tag: "TooFewGpus",
        host: n.host,
        has: n.gpus,
        needs: o.gpusPerNode,
        fix: `each node runs ${o.gpusPerNode} ranks: give ${n.host} ${o.gpusPerNode} GPUs, or lower --tp/--pp`
      })
  const maxSkew = o.maxSkewMs ?? 5000
  for (const n of nodes)
    if (n.clockOffsetMs !== undefined && Math.abs(n.clockOffsetMs) > maxSkew)
      problems.push({
        _tag: "ClockSkew",
        host: n.host,
        offsetMs: Math.round(n.clockOffsetMs),
        fix: `${n.host}'s clock is ${Math.round(n.clockOffsetMs / 1000)} s off: enable time sync there (chrony or systemd-timesyncd)`
      })
  for (const n of nodes) {
    if (n.interfaces.length < 2) continue
    const suggested = n.interfaces.find((i) => onSubnet(i, o.headAddress))?.name
    problems.push({
      _tag: "ChooseInterface",
      host: n.host,
      interfaces: n.interfaces,
      suggested,
      fix:
        suggested === undefined
          ? `${n.host} has ${n.interfaces.length} interfaces and none is on ${o.headAddress}'s subnet: check the address the ranks meet at`
          : `set NCCL_SOCKET_IFNAME=${suggested} GLOO_SOCKET_IFNAME=${suggested} (--env) so ${n.host}'s ranks talk over the interface that reaches ${o.headAddress}`
    })
  }
  return problems
}

const GATHER = [
  "date +%s%3N",
  'if [ -f "$1/config.json" ]; then sha256sum "$1/config.json" | cut -d" " -f1; else echo missing; fi',
  "ip -o -4 addr show 2>/dev/null || true"
].join("; ")

/**
 * One node's clock, model config hash and interfaces, from one command; `install` and `gpus`
 * come from the caller's probes (the runtime's locate, `Probes.gpus`).
 *
 * @category probes
 */
export const gather = Effect.fn("CrossNodeCheck.gather")(function* (
  conn: Connection,
  o: { readonly modelPath: string; readonly install: string | undefined; readonly gpus: number | undefined }
): Effect.fn.Return<NodeFacts, CommandError> {
  const before = yield* Clock.currentTimeMillis
  const result = yield* conn.exec(RemoteCommand.make(["sh", "-c", GATHER, "sh", o.modelPath]), {
    timeout: "15 seconds"
  })
  const after = yield* Clock.currentTimeMillis
  const [clock, hash, ...rest] = result.stdout.split("\n")
  const remote = Number(clock)
  const interfaces = rest.flatMap((line): ReadonlyArray<Interface> => {
    const m = /^\d+:\s+(\S+)\s+inet\s+(\d+\.\d+\.\d+\.\d+)\/(\d+)/.exec(line)
    return m === null || m[1] === "lo" ? [] : [{ name: m[1]!, address: m[2]!, prefix: Number(m[3]) }]
  })
  return {
    host: conn.host.alias,
    install: o.install,
    modelConfig: hash === undefined || hash === "missing" || hash === "" ? undefined : hash,
    gpus: o.gpus,
    clockOffsetMs: Number.isFinite(remote) ? remote - (before + after) / 2 : undefined,
    interfaces
  }
})
