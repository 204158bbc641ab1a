/**
 * The fake shell's evaluator: lists, and-or lists, pipelines, compound commands (`{ }`,
 * `( )`, `if`, `for`, `while`, `until`, `case`), function definitions, subshells and command
 * substitution, as dash runs them.
 *
 * Subshells (`( )`, `$( )`, each side of a pipeline) run in this process on a copy of the
 * shell's state, so nothing they set leaks out; the programs they start are this shell's
 * children. A pipeline's commands run one after the other, each reading what the one before
 * wrote (a fake program reads its whole stdin when it starts); its status is the last one's.
 *
 * @internal
 */
import { Effect } from "effect"
import { concatBytes, decodeLossy, toBytes } from "./fakeFs.js"
import type { SystemContext } from "./fakeProcesses.js"
import { matches } from "./fakeShellPatterns.js"
import { redirect } from "./fakeShellRedirect.js"
import { runSimple } from "./fakeShellSimple.js"
import {
  type Evaluator,
  errorPrefix,
  Input,
  NEXT,
  type Outcome,
  type ShellIo,
  type ShellState,
  subshellOf
} from "./fakeShellState.js"
import type { AndOr, Command, CompoundBody, List, Pipeline, Script } from "./fakeShellSyntax.js"
import { WordExpander } from "./fakeShellWordExpansion.js"

type Run<A = Outcome> = Effect.Effect<A, unknown>

/** The interpreter of one shell process. */
export interface Interpreter extends Evaluator {
  readonly runList: (list: List, state: ShellState, io: ShellIo) => Run
}

export const makeInterpreter = (ctx: SystemContext): Interpreter => {
  const evaluator: Evaluator = {
    substitute: (script, state, io) => substitute(ctx, evaluator, script, state, io),
    runCommand: (command, state, io) => runCommand(ctx, evaluator, command, state, io)
  }
  return { ...evaluator, runList: (list, state, io) => runListWith(ctx, evaluator, list, state, io) }
}

const runListWith = (ctx: SystemContext, ev: Evaluator, list: List, state: ShellState, io: ShellIo): Run =>
  Effect.gen(function* () {
    for (const item of list) {
      const outcome = yield* runAndOr(ctx, ev, item, state, io)
      if (outcome._tag !== "Next") return outcome
    }
    return NEXT
  })

const runAndOr = (ctx: SystemContext, ev: Evaluator, list: AndOr, state: ShellState, io: ShellIo): Run =>
  Effect.gen(function* () {
    const first = yield* runPipeline(ctx, ev, list.first, state, io)
    if (first._tag !== "Next") return first
    for (const { op, pipeline } of list.rest) {
      if ((op === "&&") !== (state.status === 0)) continue
      const outcome = yield* runPipeline(ctx, ev, pipeline, state, io)
      if (outcome._tag !== "Next") return outcome
    }
    return NEXT
  })

/** Run `body` on a copy of the state; its status (what `exit` gave, or its last `$?`). */
const inSubshell = (state: ShellState, body: (sub: ShellState) => Run): Run<number> =>
  Effect.gen(function* () {
    const sub = subshellOf(state)
    const outcome = yield* body(sub)
    return outcome._tag === "Exit" ? outcome.code : sub.status & 255
  })

const collector = () => {
  const chunks: Array<Uint8Array> = []
  return {
    sink: (bytes: Uint8Array) => Effect.sync(() => void chunks.push(bytes)),
    bytes: () => concatBytes(chunks)
  }
}

const runPipeline = (
  ctx: SystemContext,
  ev: Evaluator,
  pipeline: Pipeline,
  state: ShellState,
  io: ShellIo
): Run =>
  Effect.gen(function* () {
    const { commands } = pipeline
    let outcome: Outcome = NEXT
    if (commands.length === 1) outcome = yield* runCommand(ctx, ev, commands[0]!, state, io)
    else {
      let input = io.input
      let status = 0
      for (const [k, command] of commands.entries()) {
        const last = k === commands.length - 1
        const out = collector()
        const side: ShellIo = { input, stdout: last ? io.stdout : out.sink, stderr: io.stderr }
        status = yield* inSubshell(state, (sub) => runCommand(ctx, ev, command, sub, side))
        input = new Input(out.bytes())
      }
      state.status = status
    }
    if (pipeline.negated && outcome._tag === "Next") state.status = state.status === 0 ? 1 : 0
    return outcome
  })

const substitute = (ctx: SystemContext, ev: Evaluator, script: Script, state: ShellState, io: ShellIo) =>
  Effect.gen(function* () {
    const out = collector()
    const status = yield* inSubshell(state, (sub) =>
      runListWith(ctx, ev, script, sub, { input: io.input, stdout: out.sink, stderr: io.stderr })
    )
    return { output: decodeLossy(out.bytes()).replace(/\n+$/, ""), status }
  })

const runCommand = (
  ctx: SystemContext,
  ev: Evaluator,
  command: Command,
  state: ShellState,
  io: ShellIo
): Run =>
  Effect.gen(function* () {
    switch (command._tag) {
      case "Simple":
        return yield* runSimple(ctx, ev, command, state, io)
      case "Function":
        state.functions.set(command.name, command.body)
        state.status = 0
        return NEXT
      case "Compound": {
        const words = new WordExpander(ctx, ev, state, io)
        const at = errorPrefix(state, command.line)
        const redirected = yield* redirect(ctx, yield* words.redirects(command.redirects), state.cwd, io, at)
        if (typeof redirected === "string") {
          yield* io.stderr(toBytes(`${redirected}\n`))
          state.status = 2
          return NEXT
        }
        return yield* runCompound(ctx, ev, command.body, state, redirected)
      }
    }
  })

/** Run a loop's body once: whether to stop, or the jump that leaves the loop. */
const loopStep = (outcome: Outcome): "again" | "stop" | Outcome => {
  switch (outcome._tag) {
    case "Next":
      return "again"
    case "Break":
      return outcome.levels > 1 ? { _tag: "Break", levels: outcome.levels - 1 } : "stop"
    case "Continue":
      return outcome.levels > 1 ? { _tag: "Continue", levels: outcome.levels - 1 } : "again"
    default:
      return outcome
  }
}

const inLoop = (state: ShellState, body: Run): Run =>
  Effect.suspend(() => {
    state.loops++
    return Effect.ensuring(
      body,
      Effect.sync(() => {
        state.loops--
      })
    )
  })

const runCompound = (
  ctx: SystemContext,
  ev: Evaluator,
  compound: CompoundBody,
  state: ShellState,
  io: ShellIo
): Run =>
  Effect.gen(function* () {
    const list = (body: List) => runListWith(ctx, ev, body, state, io)
    switch (compound._tag) {
      case "Group":
        return yield* list(compound.body)
      case "Subshell":
        state.status = yield* inSubshell(state, (sub) => runListWith(ctx, ev, compound.body, sub, io))
        return NEXT
      case "If": {
        for (const branch of compound.branches) {
          const tested = yield* list(branch.condition)
          if (tested._tag !== "Next") return tested
          if (state.status === 0) return yield* list(branch.body)
        }
        if (compound.otherwise !== undefined) return yield* list(compound.otherwise)
        state.status = 0
        return NEXT
      }
      case "Loop":
        return yield* inLoop(
          state,
          Effect.gen(function* () {
            let status = 0
            for (;;) {
              const tested = loopStep(yield* list(compound.condition))
              if (typeof tested !== "string") return tested
              if (tested === "stop" || (state.status === 0) === compound.until) break
              const step = loopStep(yield* list(compound.body))
              status = state.status
              if (typeof step !== "string") return step
              if (step === "stop") break
            }
            state.status = status
            return NEXT
          })
        )
      case "For": {
        const words = new WordExpander(ctx, ev, state, io)
        const values =
          compound.words === undefined ? state.positional.slice(1) : yield* words.fields(compound.words)
        return yield* inLoop(
          state,
          Effect.gen(function* () {
            let status = 0
            for (const value of values) {
              state.vars.set(compound.name, value)
              const step = loopStep(yield* list(compound.body))
              status = state.status
              if (typeof step !== "string") return step
              if (step === "stop") break
            }
            state.status = status
            return NEXT
          })
        )
      }
      case "Case": {
        const words = new WordExpander(ctx, ev, state, io)
        const subject = yield* words.string(compound.subject)
        for (const item of compound.items) {
          for (const pattern of item.patterns) {
            if (matches(yield* words.pattern(pattern), subject)) {
              state.status = 0
              return yield* list(item.body)
            }
          }
        }
        state.status = 0
        return NEXT
      }
    }
  })
