/**
 * The launch as a person sees it. Plain mode: one line per step. Live mode (a TTY): the same
 * permanent lines (adjustments, warnings, attempts) scroll above a block of phases with their
 * elapsed times, which is rewritten in place as the launch moves on.
 */
import type * as Launch from "@mlops/serve/Launch"
import * as Secrets from "@mlops/serve/Secrets"
import * as Engines from "../Engines.js"
import { commandLine, type FailureContext } from "./failure.js"
import { bold, cyan, dim, duration, green, red, rewind, type Style, yellow } from "./style.js"

type Progress = Launch.LaunchProgress

/** The command line being run (for the commands a launch prints: relaunch, logs, stop). */
export type Context = FailureContext

const pythonLine = (style: Style, p: Launch.PythonFacts, elapsedMs: number): ReadonlyArray<string> => {
  const from = p.versionSource === "version.py" ? ", a source checkout: version from version.py" : ""
  const head = `${green(style, "✓")} Python ${p.pythonVersion} at ${p.interpreter} with ${Engines.displayName(p.engine)} ${p.engineVersion}${from} ${dim(style, duration(elapsedMs))}`
  if (p.source !== "discovered")
    return [`${head}`, `    (set by ${p.source === "--python" ? "--python" : "hosts.json"})`]
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
  readonly status: string
  /** Lines the block occupies on screen (for rewinding). */
  readonly blockLines: number
}

export const initial = (startMs: number): ViewState => ({
  startMs,
  phases: [],
  status: "connecting",
  blockLines: 0
})

/** Plain mode: the permanent lines plus one line per phase reached. */
export const plain = (style: Style, event: Progress, context: Context = {}): ReadonlyArray<string> =>
  event._tag === "Log" && event.event._tag === "PhaseStarted"
    ? [`  ${cyan(style, "·")} ${event.event.phase} ${dim(style, `+${duration(event.elapsedMs)}`)}`]
    : lines(style, event, context)

/** The permanent lines an event adds (plain and live mode). */
export const lines = (style: Style, event: Progress, context: Context = {}): ReadonlyArray<string> => {
  switch (event._tag) {
    case "Python":
      return pythonLine(style, event.python, event.elapsedMs)
    case "Disconnected":
      return [`${yellow(style, "!")} connection lost (${event.reason}); the launch goes on once it is back`]
    case "Reconnected":
      return [`${green(style, "✓")} reconnected after ${duration(event.downMs)}; following again`]
    case "Connected":
      return [
        `${green(style, "✓")} connected to ${bold(style, event.host)} as deployment ${bold(style, event.name)} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "Preflight": {
      const f = event.facts
      const gpus =
        f.gpus.length > 0
          ? `${f.gpus.length}× ${f.gpus[0]!.name}${f.gpus[0]!.computeCapability ? ` (sm ${f.gpus[0]!.computeCapability})` : ""}`
          : "no GPUs"
      const fromHost =
        f.flags.source === "dumped" || f.flags.source === "cached"
          ? `; flags read from the host's ${Engines.displayName(f.engine)}${f.flags.source === "cached" ? " (cached)" : ""}`
          : ""
      return [
        `${green(style, "✓")} preflight: ${Engines.displayName(f.engine)} ${f.engineVersion} (Python ${f.pythonVersion}), ${gpus}, port ${f.port} free, model ${f.model.architecture ?? f.model.path}${fromHost} ${dim(style, duration(event.elapsedMs))}`,
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
          ? `${green(style, "✓")} flags checked against SGLang's rules${event.adjustments.length > 0 ? `; SGLang will adjust:` : ""}`
          : `${green(style, "✓")} flags parse (names, values, types); rules left to the host`,
        ...event.adjustments.map((a) => `    ${dim(style, "·")} ${a}`)
      ]
    case "RemoteChecked":
      return [
        `${green(style, "✓")} the host's SGLang accepts the flags${event.reason === "rules-unverified" ? " (its own validation, run because the rules are unverified)" : ""} ${dim(style, duration(event.elapsedMs))}`
      ]
    case "AlreadyRunning":
      return [`${green(style, "✓")} already running with the same flags (pid ${event.deployment.pid})`]
    case "Replacing":
      return [`${yellow(style, "↻")} replacing ${event.name} (pid ${event.pid}): ${event.outcome}`]
    case "Spawned":
      return [
        `${cyan(style, "▶")} started pid ${event.pid}${event.attempt > 1 ? ` (attempt ${event.attempt})` : ""}: ${dim(style, event.commandLine)}`,
        `    log: ${event.logPath}`
      ]
    case "Log": {
      const e = event.event
      switch (e._tag) {
        case "Warning":
          return [`    ${yellow(style, "!")} ${e.process === "launcher" ? "" : `[${e.process}] `}${e.text}`]
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
    case "AttemptFailed": {
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
      const facts =
        spec === null
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
        `${green(style, "✓")} ${bold(style, `${d.name} is ready`)} on ${d.host} (pid ${d.pid}) ${dim(style, d.readyAt !== undefined ? duration(d.readyAt - d.startedAt) : "")}`,
        `    url: ${d.url}`,
        ...facts,
        ...relaunch,
        `    logs: mlops logs --host ${d.host} --name ${d.name} -f`,
        `    stop: mlops stop --host ${d.host} --name ${d.name}`
      ]
    }
    default:
      return []
  }
}

/** The mlops words without `--auto-fix` (the relaunch command carries the fixes already). */
const withoutAutoFix = (prefix: ReadonlyArray<string>) => prefix.filter((word) => word !== "--auto-fix")

/** Phase/status changes an event makes to the live block. */
export const update = (state: ViewState, event: Progress, nowMs: number): ViewState => {
  switch (event._tag) {
    case "Preflight":
      return { ...state, status: "checking flags" }
    case "Spawned":
      return { ...state, phases: [], status: "starting" }
    case "Log":
      if (event.event._tag === "PhaseStarted") {
        return {
          ...state,
          phases: [...state.phases, { phase: event.event.phase, startedMs: nowMs }],
          status: event.event.phase
        }
      }
      return state
    case "HealthChecked":
      return { ...state, status: `health ${event.endpoint}` }
    case "Launched":
      return { ...state, status: "ready" }
    default:
      return state
  }
}

/** The live block: one line per phase reached, the current one with a running clock. */
export const block = (style: Style, state: ViewState, nowMs: number): ReadonlyArray<string> => {
  const rows = state.phases.map((row, i) => {
    const next = state.phases[i + 1]
    const done = next !== undefined || row.phase === "ready" || state.status === "ready"
    const took = (next?.startedMs ?? nowMs) - row.startedMs
    return `    ${done ? green(style, "✓") : cyan(style, "…")} ${row.phase.padEnd(18)} ${dim(style, duration(took))}`
  })
  return [...rows, `  ${dim(style, `${state.status} · ${duration(nowMs - state.startMs)} elapsed`)}`]
}

/** Text to print for an event in live mode: rewind the old block, permanent lines, new block. */
export const live = (
  style: Style,
  state: ViewState,
  event: Progress | undefined,
  nowMs: number,
  context: Context = {}
): { readonly text: string; readonly state: ViewState } => {
  const permanent = event === undefined ? [] : lines(style, event, context)
  const next = event === undefined ? state : update(state, event, nowMs)
  if (event?._tag === "Launched") {
    // the final phase list stays on screen (without the clock line), then the summary
    const phases = block(style, next, nowMs).slice(0, -1)
    return {
      text: rewind(state.blockLines) + [...phases, ...permanent].join("\n"),
      state: { ...next, blockLines: 0 }
    }
  }
  const newBlock = block(style, next, nowMs)
  const text = rewind(state.blockLines) + [...permanent, ...newBlock].join("\n")
  return { text, state: { ...next, blockLines: newBlock.length } }
}
