/**
 * The effectful steps around the fake shell's pure expansion (`fakeShellExpand`): running the
 * `$(...)` a word needs (only those its expansion uses: `${x:-$(cmd)}` runs `cmd` only when
 * `x` is unset or empty) and pathname expansion of the resulting fields. One `WordExpander`
 * per command remembers the status of its last command substitution (the status of a command
 * that is only assignments).
 *
 * @internal
 */
import { Effect } from "effect"
import type { SystemContext } from "./fakeProcesses.js"
import { expandAssignment, expandFields, expandPattern, expandString, usesArg } from "./fakeShellExpand.js"
import { expandPathname } from "./fakeShellGlob.js"
import type { Field } from "./fakeShellPatterns.js"
import type { ExpandedRedirect } from "./fakeShellRedirect.js"
import { type Evaluator, paramsOf, type ShellIo, type ShellState } from "./fakeShellState.js"
import type { Redirect, Segment, Word } from "./fakeShellSyntax.js"

const hasCommand = (word: Word): boolean =>
  word.some((s) => s._tag === "Command" || (s._tag === "ParamOp" && hasCommand(s.arg)))

export class WordExpander {
  /** The status of the last command substitution run, if any. */
  lastStatus: number | undefined = undefined

  constructor(
    private readonly ctx: SystemContext,
    private readonly evaluator: Evaluator,
    private readonly state: ShellState,
    private readonly io: ShellIo
  ) {}

  private get params() {
    return paramsOf(this.state, this.ctx.pid)
  }

  /** The word with the command substitutions its expansion uses run (their output in place). */
  private resolve(word: Word): Effect.Effect<Word, unknown> {
    if (!hasCommand(word)) return Effect.succeed(word)
    return Effect.forEach(word, (segment): Effect.Effect<Segment, unknown> => {
      if (segment._tag === "Command") {
        return Effect.map(this.evaluator.substitute(segment.script, this.state, this.io), (ran) => {
          this.lastStatus = ran.status
          return { _tag: "Output", text: ran.output, quoted: segment.quoted }
        })
      }
      if (segment._tag === "ParamOp" && usesArg(segment, this.params))
        return Effect.map(this.resolve(segment.arg), (arg) => ({ ...segment, arg }))
      return Effect.succeed(segment)
    })
  }

  /** A command's words as arguments: expanded, split, and pathname-expanded. */
  fields(words: ReadonlyArray<Word>): Effect.Effect<Array<string>, unknown> {
    return Effect.gen(this, function* () {
      const out: Array<string> = []
      for (const word of words) {
        const fields = expandFields(yield* this.resolve(word), this.params)
        for (const field of fields) out.push(...(yield* expandPathname(field, this.state.cwd, this.ctx.fs)))
      }
      return out
    })
  }

  /** A word as one string, without splitting or pathname expansion (`case`'s word, redirection targets). */
  string(word: Word): Effect.Effect<string, unknown> {
    return Effect.map(this.resolve(word), (resolved) => expandString(resolved, this.params))
  }

  /** An assignment's value (no splitting; `~` also after each `:`). */
  assignment(word: Word): Effect.Effect<string, unknown> {
    return Effect.map(this.resolve(word), (resolved) => expandAssignment(resolved, this.params))
  }

  /** A `case` pattern. */
  pattern(word: Word): Effect.Effect<Field, unknown> {
    return Effect.map(this.resolve(word), (resolved) => expandPattern(resolved, this.params))
  }

  redirects(redirects: ReadonlyArray<Redirect>): Effect.Effect<Array<ExpandedRedirect>, unknown> {
    return Effect.forEach(redirects, (r) =>
      Effect.map(this.string(r.target), (target) => ({ fd: r.fd, op: r.op, target }))
    )
  }
}
