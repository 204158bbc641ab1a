/**
 * The launch as a person sees it. Plain mode: one line per step. Live mode (a TTY): the same
 * permanent lines (adjustments, warnings, attempts) scroll above a block of phases with their
 * elapsed times, which is rewritten in place as the launch moves on.
 */
import * as Deployment from "@mlops/serve/Deployment"
import type * as Launch from "@mlops/serve/Launch"
import * as Secrets from "@mlops/serve/Secrets"
import * as Engines from "../Engines.js"
import { commandLine, type FailureContext } from "./failure.js"
import { bold, cyan, dim, duration, green, red, rewind, type Style, yellow } from "./style.js"

type Progress = Launch.LaunchProgress

/** The command line being run (for the commands a launch prints: relaunch, logs, stop). */
export type Context = FailureContext & {
  /** `--tunnel`: the result says the tunnel stays open until Ctrl-C. */
  readonly tunnel?: boolean | undefined
}

const pythonLine = (style: Style, p: Launch.PythonFacts, elapsedMs: number): ReadonlyArray<string> => {
  const from = p.versionSource === "version.py" ? ", a source checkout: version from version.py" : ""
  const head = `${green(style, "✓")} Python ${p.pythonVersion} ${p.where} with ${Engines.displayName(p.engine)} ${p.engineVersion}${from} ${dim(style, duration(elapsedMs))}`
  if (p.source !== "discovered") return [`${head}`, `    (set by ${p.source})`]
  return [
    head,
    `    found by looking (${p.how}); to pin it: --python ${p.setting}, or "python": "${p.setting}" in hosts.json`
  ]
}

interface PhaseRow {
  readonly phase: string
  readonly startedMs: number
}

/** What the live block shows. */
export interface ViewState {
  readonly startMs: number
  readonly phases: ReadonlyArray<PhaseRow>
  /** What the server said about itself while loading (capacity, listening, health checks): under the phases. */
  readonly notes: ReadonlyArray<string>
  readonly status: string
  /** Screen rows the block occupies (for rewinding). */
  readonly blockLines: number
  /** The block is final (ready, failed, interrupted): nothing redraws it any more. */
  readonly done: boolean
}

export const initial = (startMs: number): ViewState => ({
  startMs,
  phases: [],
  notes: [],
  status: "connecting",
  blockLines: 0,
  done: false
})

/** Plain mode: the permanent lines plus one line per phase reached. */
export const plain = (style: Style, event: Progress, context: Context = {}): ReadonlyArray<string> =>
  event._tag === "Log" && event.event._tag === "PhaseStarted"
    ? otherRank(event)
      ? []
      : [`  ${cyan(style, "·")} ${event.event.phase} ${dim(style, `+${duration(event.elapsedMs)}`)}`]
    : lines(style, event, context)

/** A deployment across several hosts shows rank 0's phases; the others' lines carry their rank. */
const otherRank = (event: Progress): boolean =>
  "rank" in event && event.rank !== undefined && event.rank.rank > 0

/** `[rank 1 on node-b] `, for an event about one rank of several. */
const rankPrefix = (event: Progress): string =>
  "rank" in event && event.rank !== undefined ? `[rank ${event.rank.rank} on ${event.rank.host}] ` : ""

/** The permanent lines an event adds (plain and live mode). */
export const lines = (style: Style, event: Progress, context: Context = {}): ReadonlyArray<string> => {
  switch (event._tag) {
    case "Python":
      return pythonLine(style, event.python, event.elapsedMs)
    case "Disconnected":
      return [
        `${yellow(style, "!")} ${rankPrefix(event)}connection lost (${event.reason}); the launch goes on once it is back`
      ]
    case "Reconnected":
      return [
        `${green(style, "✓")} ${rankPrefix(event)}reconnected after ${duration(event.downMs)}; following again`
      ]
    case "Connected":
      return [
        `${green(style, "✓")} connected to ${bold(style, event.host)} as deployment ${bold(style, event.name)} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "Preparing":
      return [
        `  ${cyan(style, "↓")} ${rankPrefix(event)}${event.step}: ${event.detail} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "Preflight": {
      const f = event.facts
      // the host's GPUs and port where the server runs on it; elsewhere, the placement's own word
      const gpus =
        f.gpus === undefined
          ? undefined
          : f.gpus.length > 0
            ? `${f.gpus.length}× ${f.gpus[0]!.name}${f.gpus[0]!.computeCapability ? ` (sm ${f.gpus[0]!.computeCapability})` : ""}`
            : "no GPUs"
      const where = [
        ...(gpus === undefined ? [] : [gpus]),
        ...(f.portChecked ? [`port ${f.port} free`] : []),
        ...(f.runtime.summary === undefined ? [] : [f.runtime.summary]),
        ...(f.placement.summary === undefined ? [] : [f.placement.summary])
      ]
      const fromHost =
        f.flags.source === "dumped" || f.flags.source === "cached"
          ? `; flags read from the host's ${Engines.displayName(f.engine)}${f.flags.source === "cached" ? " (cached)" : ""}`
          : ""
      return [
        `${green(style, "✓")} preflight: ${Engines.displayName(f.engine)} ${f.engineVersion} (Python ${f.pythonVersion}), ${[...where, `model ${f.model.architecture ?? f.model.path}`].join(", ")}${fromHost} ${dim(style, duration(event.elapsedMs))}`,
        ...f.busyGpus.map(
          (h) =>
            `    ${yellow(style, "!")} GPU ${h.gpu} is busy (allowed by --allow-busy-gpus): pid ${h.pid}${h.deployment === undefined ? "" : ` (deployment ${h.deployment})`}${h.usedMiB === undefined ? "" : ` holds ${h.usedMiB} MiB`}`
        ),
        ...f.warnings.map((w) => `    ${yellow(style, "!")} ${w}`),
        ...(f.rulesVerified
          ? []
          : [
              `    ${yellow(style, "!")} mlops has not verified its launch rules for ${Engines.displayName(f.engine)} ${f.engineVersion}: only the flags are checked offline, the host's own validation decides`
            ])
      ]
    }
    case "Resolved":
      return [
        event.rulesVerified
          ? `${green(style, "✓")} flags checked against the engine's launch rules${event.adjustments.length > 0 ? "; it will adjust:" : ""}`
          : `${green(style, "✓")} flags parse (names, values, types); rules left to the host`,
        ...event.adjustments.map((a) => `    ${dim(style, "·")} ${a}`)
      ]
    case "RemoteChecked":
      return [
        `${green(style, "✓")} the host's ${event.engine} accepts the flags${event.reason === "rules-unverified" ? " (its own validation, run because the rules are unverified)" : ""} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "AlreadyRunning":
      return [`${green(style, "✓")} already running with the same flags (${event.deployment.server.label})`]
    case "Replacing":
      return [`${yellow(style, "↻")} replacing ${event.name} (${event.server}): ${event.outcome}`]
    case "RanksPlanned":
      return [
        `${green(style, "✓")} ${event.hosts.length} hosts agree (install, model, GPUs per node, clocks); ranks meet at ${event.rendezvous.address}:${event.rendezvous.port}, reached from every host ${dim(style, duration(event.elapsedMs))}`,
        ...event.hosts.map((h, rank) => `    rank ${rank}: ${h}${rank === 0 ? " (serves HTTP)" : ""}`),
        ...event.suggestions.map((s) => `    ${yellow(style, "!")} ${s}`)
      ]
    case "Spawned":
      return [
        `${cyan(style, "▶")} ${rankPrefix(event)}${event.server.started}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}: ${dim(style, event.commandLine)}`,
        `    log: ${event.logPath}`
      ]
    case "Log": {
      const e = event.event
      switch (e._tag) {
        case "Warning":
          return [
            `    ${yellow(style, "!")} ${rankPrefix(event)}${e.process === "launcher" ? "" : `[${e.process}] `}${e.text}`
          ]
        case "Capacity":
          return [
            `    capacity: ${e.maxTotalNumTokens} tokens, max_running_requests ${e.maxRunningRequests}, context ${e.contextLen}, ${e.availableGpuMemGB} GB free`
          ]
        case "Listening":
          return [`    listening on ${e.url} (warming up)`]
        default:
          return []
      }
    }
    case "HealthChecked":
      return [
        `    ${event.status === 200 ? green(style, "✓") : red(style, "✗")} ${event.endpoint} ${event.status}`
      ]
    case "PlacementState":
      return [
        `    ${rankPrefix(event)}${event.server}: ${event.state} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "AttemptFailed": {
      // the last attempt's failure is the command's error, printed once after the launch
      if (event.nextArgv === undefined) return []
      const failure = event.failure as { readonly _tag: string; readonly message: string }
      return [
        `${red(style, "✗")} attempt ${event.attempt} failed: ${failure.message} ${dim(style, `[${failure._tag}]`)}`,
        ...(event.nextArgv
          ? [`${yellow(style, "↻")} relaunching with the fix: ${event.nextArgv.join(" ")}`]
          : [])
      ]
    }
    case "Launched": {
      const d = event.deployment
      const spec = d.args as Record<string, unknown> | null
      // the speculative summary is SGLang's (its args carry these fields); other engines have none
      const facts =
        spec === null || !("speculative_algorithm" in spec)
          ? []
          : [
              `    speculative: ${String(spec.speculative_algorithm ?? "off")}${spec.speculative_algorithm ? ` steps/topk/draft ${String(spec.speculative_num_steps)}/${String(spec.speculative_eagle_topk)}/${String(spec.speculative_num_draft_tokens)}` : ""}, max_running_requests ${String(spec.max_running_requests ?? "auto")}`
            ]
      const asked = context.argv === undefined ? undefined : Secrets.redactArgv(context.argv)
      const relaunch =
        asked !== undefined && JSON.stringify(asked) !== JSON.stringify(d.argv)
          ? [
              `    ran with fixes; the same launch next time: ${commandLine(withoutAutoFix(context.prefix ?? []), d.argv)}`
            ]
          : []
      return [
        `${green(style, "✓")} ${bold(style, `${d.name} is ready`)} on ${d.hosts.length > 1 ? `${d.hosts.join(", ")} (${d.hosts.length} ranks; rank 0 on ${d.host}, ${d.server.label})` : `${d.host} (${d.server.label})`} ${dim(style, d.readyAt !== undefined ? duration(d.readyAt - d.startedAt) : "")}`,
        `    url: ${d.url}`,
        ...(d.timeToReady === undefined
          ? []
          : [`    time to ready: ${Deployment.describeTimeToReady(d.timeToReady)} (from its start)`]),
        ...facts,
        ...relaunch,
        `    logs: mlops logs --host ${d.host} --name ${d.name} -f`,
        `    stop: mlops stop --host ${d.host} --name ${d.name}`,
        ...(context.tunnel === true
          ? [
              `${cyan(style, "⇄")} tunnel open: ${d.url} → ${d.host} port ${d.port}; Ctrl-C closes it (the server keeps running)`
            ]
          : [])
      ]
    }
    default:
      return []
  }
}

/** The mlops words without `--auto-fix` (the relaunch command carries the fixes already). */
const withoutAutoFix = (prefix: ReadonlyArray<string>) => prefix.filter((word) => word !== "--auto-fix")

/** Lines a server event adds under the phases of the live block (plain mode prints them as they come). */
const isNote = (event: Progress): boolean =>
  event._tag === "HealthChecked" ||
  event._tag === "PlacementState" ||
  (event._tag === "Log" && (event.event._tag === "Capacity" || event.event._tag === "Listening"))

/** Events that only move the live block's status line (plain mode prints each as a line): a pull's progress. */
const isStatus = (event: Progress): boolean => event._tag === "Preparing"

/** Phase/status changes an event makes to the live block. */
export const update = (state: ViewState, event: Progress, nowMs: number): ViewState => {
  switch (event._tag) {
    case "Preparing":
      return {
        ...state,
        status: `${event.step}: ${event.detail.length > 72 ? `${event.detail.slice(0, 71)}…` : event.detail}`
      }
    case "Preflight":
      return { ...state, status: "checking flags" }
    case "Spawned":
      return otherRank(event) ? state : { ...state, phases: [], notes: [], status: "starting" }
    case "Log":
      if (event.event._tag === "PhaseStarted" && !otherRank(event)) {
        return {
          ...state,
          phases: [...state.phases, { phase: event.event.phase, startedMs: nowMs }],
          status: event.event.phase
        }
      }
      return state
    case "HealthChecked":
      return { ...state, status: `health ${event.endpoint}` }
    case "PlacementState":
      return { ...state, status: `${event.server}: ${event.state}` }
    case "Launched":
      return { ...state, status: "ready" }
    default:
      return state
  }
}

/** How a phase row is marked: done, running, or where the launch ended. */
type Ending = "running" | "failed" | "interrupted"

const phaseRows = (style: Style, state: ViewState, nowMs: number, ending: Ending): Array<string> =>
  state.phases.map((row, i) => {
    const next = state.phases[i + 1]
    const done = next !== undefined || row.phase === "ready" || state.status === "ready"
    const took = (next?.startedMs ?? nowMs) - row.startedMs
    const mark = done
      ? green(style, "✓")
      : ending === "failed"
        ? red(style, "✗")
        : ending === "interrupted"
          ? yellow(style, "■")
          : cyan(style, "…")
    return `    ${mark} ${row.phase.padEnd(18)} ${dim(style, duration(took))}`
  })

/** The live block: one line per phase reached (the current one with a running clock), the notes, the status. */
export const block = (style: Style, state: ViewState, nowMs: number): ReadonlyArray<string> => [
  ...phaseRows(style, state, nowMs, "running"),
  ...state.notes,
  `  ${dim(style, `${state.status} · ${duration(nowMs - state.startMs)} elapsed`)}`
]

const sgrPattern = /\x1b\[[0-9;]*m/g

/** Screen rows `lines` take on a terminal `columns` wide (a long line wraps). */
export const screenRows = (lines: ReadonlyArray<string>, columns: number | undefined): number =>
  lines.reduce((rows, line) => {
    const width = [...line.replace(sgrPattern, "")].length
    return rows + (columns === undefined || columns <= 0 ? 1 : Math.max(1, Math.ceil(width / columns)))
  }, 0)

const text = (rewindRows: number, lines: ReadonlyArray<string>) =>
  rewind(rewindRows) + lines.map((line) => `${line}\n`).join("")

/**
 * Text to print for an event in live mode (each line ends with a newline): rewind the old
 * block, the permanent lines, the new block. Once the block is final, only permanent lines.
 */
export const live = (
  style: Style,
  state: ViewState,
  event: Progress | undefined,
  nowMs: number,
  context: Context = {}
): { readonly text: string; readonly state: ViewState } => {
  if (state.done) {
    return { text: event === undefined ? "" : text(0, lines(style, event, context)), state }
  }
  const note = event !== undefined && isNote(event)
  const permanent = event === undefined || note || isStatus(event) ? [] : lines(style, event, context)
  const updated = event === undefined ? state : update(state, event, nowMs)
  const next = note ? { ...updated, notes: [...updated.notes, ...lines(style, event, context)] } : updated
  if (event?._tag === "Launched") {
    // the final phase list and the notes stay on screen (without the clock line), then the result
    const final = [...phaseRows(style, next, nowMs, "running"), ...next.notes, ...permanent]
    return { text: text(state.blockLines, final), state: { ...next, blockLines: 0, done: true } }
  }
  if (event?._tag === "AttemptFailed" && event.nextArgv !== undefined) {
    // this attempt's phases stay above the relaunch
    const frozen = [...phaseRows(style, state, nowMs, "failed"), ...state.notes]
    const newBlock = block(style, { ...next, phases: [], notes: [] }, nowMs)
    return {
      text: text(state.blockLines, [...frozen, ...permanent, ...newBlock]),
      state: { ...next, phases: [], notes: [], blockLines: screenRows(newBlock, style.columns) }
    }
  }
  const newBlock = block(style, next, nowMs)
  return {
    text: text(state.blockLines, [...permanent, ...newBlock]),
    state: { ...next, blockLines: screenRows(newBlock, style.columns) }
  }
}

/**
 * Text to write around lines that something else prints while the block is on screen (the
 * sim's warning on stderr): `before` takes the block off the screen, `after` draws it again
 * under them. Printed under the block instead, they would be what the next rewind erases, and
 * the block's old drawing would stay above. Once the block is final, nothing around them.
 */
export const around = (
  style: Style,
  state: ViewState,
  nowMs: number
): { readonly before: string; readonly after: string; readonly state: ViewState } => {
  if (state.done) return { before: "", after: "", state }
  const newBlock = block(style, state, nowMs)
  return {
    before: text(state.blockLines, []),
    after: text(0, newBlock),
    state: { ...state, blockLines: screenRows(newBlock, style.columns) }
  }
}

/**
 * The block's last drawing when the launch ends without a result (a failure, Ctrl-C): the
 * phases reached, the one it ended in marked, no clock; the error or interrupt message follows.
 */
export const freeze = (
  style: Style,
  state: ViewState,
  nowMs: number,
  ending: "failed" | "interrupted"
): { readonly text: string; readonly state: ViewState } =>
  state.done
    ? { text: "", state }
    : {
        text: text(state.blockLines, [...phaseRows(style, state, nowMs, ending), ...state.notes]),
        state: { ...state, blockLines: 0, done: true }
      }
