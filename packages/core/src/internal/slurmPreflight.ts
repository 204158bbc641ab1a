/**
 * Whether a request can run on the cluster, from its partitions and nodes: every problem at
 * once (the partition, its state, time limit, account and QoS lists, the GRES, the node
 * features, enough GPUs on one node, and whether such a node is in service).
 *
 * @internal
 */
import { Either } from "effect"
import type { SlurmProblem } from "../SlurmErrors.js"
import type { SlurmNode, SlurmPartition } from "./slurmClusterParsers.js"
import { gresCount, parseTime } from "./slurmParsers.js"

/** @internal */
export interface PreflightRequest {
  /** Default: the cluster's default partition. */
  readonly partition?: string
  /** GPUs on each node (tp × pp over the nodes). */
  readonly gpus: number
  /** Nodes the job spans (default 1). */
  readonly nodes?: number
  /** `gpu` (default) or `gpu:type`. */
  readonly gres?: string
  readonly time?: string
  readonly account?: string
  readonly qos?: string
  readonly constraint?: string
}

/** @internal */
export interface PreflightResult {
  readonly partition: string
  readonly maxTime: string
  /** Nodes that fit and are in service. */
  readonly nodes: ReadonlyArray<string>
  /** The most GPUs of the GRES on one fitting node. */
  readonly largestNode: number
}

const OUT_OF_SERVICE = /down|drain|fail|maint|inval|future|unk|boot|power/i

/** A single feature name (`a100`); expressions (`a100|h100`, `[a&b]`) are left to Slurm. */
const SIMPLE_FEATURE = /^[A-Za-z0-9_.-]+$/

const gresParts = (gres: string) => {
  const [name, type] = gres.split(":")
  return { name: name!, type }
}

const allowed = (list: "ALL" | ReadonlyArray<string>, deny: ReadonlyArray<string>, value: string) =>
  (list === "ALL" || list.includes(value)) && !deny.includes(value)

const shownList = (list: "ALL" | ReadonlyArray<string>, deny: ReadonlyArray<string>) =>
  list === "ALL" ? `ALL except ${deny.join(",")}` : list.join(",")

/** @internal */
export const check = (
  request: PreflightRequest,
  partitions: ReadonlyArray<SlurmPartition>,
  nodes: ReadonlyArray<SlurmNode>
): Either.Either<
  PreflightResult,
  { readonly partition: string; readonly problems: ReadonlyArray<SlurmProblem> }
> => {
  const wanted = request.partition ?? partitions.find((p) => p.isDefault)?.name
  const partition = partitions.find((p) => p.name === wanted)
  if (partition === undefined) {
    const name = wanted ?? "(no default partition)"
    return Either.left({
      partition: name,
      problems: [{ _tag: "PartitionNotFound", partition: name, known: partitions.map((p) => p.name) }]
    })
  }
  const name = partition.name
  const problems: Array<SlurmProblem> = []
  if (partition.state !== "UP")
    problems.push({ _tag: "PartitionNotUp", partition: name, state: partition.state })
  const seconds = request.time === undefined ? undefined : parseTime(request.time)
  if (typeof seconds === "number" && partition.maxTimeSeconds !== null && seconds > partition.maxTimeSeconds)
    problems.push({
      _tag: "TimeLimitTooLong",
      partition: name,
      requested: request.time!,
      maxTime: partition.maxTime
    })
  if (
    request.account !== undefined &&
    !allowed(partition.allowAccounts, partition.denyAccounts, request.account)
  )
    problems.push({
      _tag: "AccountNotAllowed",
      partition: name,
      account: request.account,
      allowed: shownList(partition.allowAccounts, partition.denyAccounts)
    })
  if (request.qos !== undefined && !allowed(partition.allowQos, partition.denyQos, request.qos))
    problems.push({
      _tag: "QosNotAllowed",
      partition: name,
      qos: request.qos,
      allowed: shownList(partition.allowQos, partition.denyQos)
    })

  const featured = (node: SlurmNode) =>
    request.constraint === undefined ||
    !SIMPLE_FEATURE.test(request.constraint) ||
    node.features.includes(request.constraint)
  const inPartition = nodes.filter((node) => node.partitions.includes(name))
  const candidates = inPartition.filter(featured)
  if (inPartition.length === 0) problems.push({ _tag: "NoUsableNode", partition: name, states: ["no nodes"] })
  else if (candidates.length === 0 && request.constraint !== undefined)
    problems.push({ _tag: "ConstraintUnmatched", partition: name, constraint: request.constraint })

  const gres = request.gres ?? "gpu"
  const { name: gresName, type } = gresParts(gres)
  const count = (node: SlurmNode) => (request.gpus > 0 ? gresCount(node.gres, gresName, type) : 0)
  let fitting = candidates
  let largestNode = candidates.reduce((most, node) => Math.max(most, count(node)), 0)
  if (request.gpus > 0 && candidates.length > 0) {
    if (largestNode === 0) {
      const names = new Set(
        inPartition.flatMap((node) =>
          node.gres.map((g) => (g.type === undefined ? g.name : `${g.name}:${g.type}`))
        )
      )
      problems.push({ _tag: "GresNotFound", partition: name, gres, available: [...names].sort() })
    } else if (largestNode < request.gpus) {
      const elsewhere = partitions
        .filter((p) => p.name !== name)
        .filter((p) =>
          nodes.some(
            (node) => node.partitions.includes(p.name) && featured(node) && count(node) >= request.gpus
          )
        )
        .map((p) => p.name)
      problems.push({
        _tag: "NotEnoughGpus",
        partition: name,
        gres,
        requested: request.gpus,
        largestNode,
        elsewhere
      })
    }
    fitting = candidates.filter((node) => count(node) >= request.gpus)
  }
  const usable = fitting.filter((node) => !OUT_OF_SERVICE.test(node.state))
  if (fitting.length > 0 && usable.length === 0)
    problems.push({
      _tag: "NoUsableNode",
      partition: name,
      states: [...new Set(fitting.map((node) => node.state))]
    })
  const nodesWanted = request.nodes ?? 1
  if (usable.length > 0 && usable.length < nodesWanted)
    problems.push({
      _tag: "TooFewNodes",
      partition: name,
      requested: nodesWanted,
      usable: usable.length,
      gpusPerNode: request.gpus
    })
  if (problems.length > 0) return Either.left({ partition: name, problems })
  largestNode = usable.reduce((most, node) => Math.max(most, count(node)), 0)
  return Either.right({
    partition: name,
    maxTime: partition.maxTime,
    nodes: usable.map((node) => node.name),
    largestNode
  })
}
