/**
 * Why an engine's command line would be rejected by its argument parser, found before
 * anything runs. Each error names the flag and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const orList = (items: ReadonlyArray<string>) => items.join(", ")

/** A flag no spelling or unique prefix of which is known. @category errors */
export class UnknownFlag extends Schema.TaggedError<UnknownFlag>()("UnknownFlag", {
  flag: Schema.String,
  suggestions: Schema.Array(Schema.String),
  /** The engine's display name: `SGLang`, `vLLM`. */
  engine: Schema.String,
  version: Schema.String,
  /** The command that lists the installed release's flags. */
  helpCommand: Schema.String
}) {
  override get message() {
    const hint =
      this.suggestions.length > 0
        ? `did you mean ${orList(this.suggestions)}?`
        : `remove it or check \`${this.helpCommand}\``
    return `unknown flag ${this.flag} for ${this.engine} ${this.version}; ${hint}`
  }
}

/** A prefix that abbreviates several flags (argparse refuses to guess). @category errors */
export class AmbiguousFlag extends Schema.TaggedError<AmbiguousFlag>()("AmbiguousFlag", {
  flag: Schema.String,
  candidates: Schema.Array(Schema.String)
}) {
  override get message() {
    return `ambiguous flag ${this.flag}: it abbreviates ${orList(this.candidates)}; spell the flag out`
  }
}

/** A value outside the flag's choices. @category errors */
export class InvalidChoice extends Schema.TaggedError<InvalidChoice>()("InvalidChoice", {
  flag: Schema.String,
  value: Schema.String,
  choices: Schema.Array(Schema.String)
}) {
  override get message() {
    return `invalid value ${JSON.stringify(this.value)} for ${this.flag}; choose one of: ${orList(this.choices)} (case-sensitive)`
  }
}

/** A value that does not convert to the flag's type (`--tp-size two`). @category errors */
export class InvalidValue extends Schema.TaggedError<InvalidValue>()("InvalidValue", {
  flag: Schema.String,
  value: Schema.String,
  expected: Schema.String
}) {
  override get message() {
    return `invalid value ${JSON.stringify(this.value)} for ${this.flag}: expected ${this.expected}`
  }
}

/** A flag that needs a value but got none (end of argv or another flag next). @category errors */
export class MissingValue extends Schema.TaggedError<MissingValue>()("MissingValue", {
  flag: Schema.String,
  expected: Schema.String
}) {
  override get message() {
    return `${this.flag} needs ${this.expected}: write \`${this.flag} <value>\` (use \`${this.flag}=<value>\` when the value starts with "-")`
  }
}

/** The required flag is absent. @category errors */
export class MissingRequired extends Schema.TaggedError<MissingRequired>()("MissingRequired", {
  flag: Schema.String
}) {
  override get message() {
    return `${this.flag} is required: add \`${this.flag} <local dir or Hugging Face repo id>\``
  }
}

/** A value given to a flag that takes none (`--trust-remote-code=yes`, `--enable-x true`). @category errors */
export class UnexpectedValue extends Schema.TaggedError<UnexpectedValue>()("UnexpectedValue", {
  flag: Schema.String,
  value: Schema.String,
  /**
   * True for `--flag=value` (argparse fails at once: "ignored explicit argument"), false for a
   * separate word after the switch (argparse reports it last, as "unrecognized arguments").
   */
  inline: Schema.optional(Schema.Boolean)
}) {
  override get message() {
    return `${this.flag} takes no value (it is an on/off switch) but got ${JSON.stringify(this.value)}; write just \`${this.flag}\` to turn it on, or leave it out`
  }
}

/** A bare word where a flag was expected: launch_server takes no positional arguments. @category errors */
export class UnexpectedArgument extends Schema.TaggedError<UnexpectedArgument>()("UnexpectedArgument", {
  argument: Schema.String,
  /** The flag before it, if any (a list flag given with `=` takes one value only). */
  after: Schema.NullOr(Schema.String)
}) {
  override get message() {
    const where = this.after === null ? "" : ` after ${this.after}`
    return `unexpected argument ${JSON.stringify(this.argument)}${where}: launch_server takes only --flags; put the model behind --model-path, and give lists as \`--flag a b\` (not \`--flag=a b\`)`
  }
}

/** A ServerArgs value that no command line can produce (e.g. null for a flag whose default is a number). @category errors */
export class UnencodableValue extends Schema.TaggedError<UnencodableValue>()("UnencodableValue", {
  field: Schema.String,
  value: Schema.Unknown,
  reason: Schema.String
}) {
  override get message() {
    return `cannot write ${this.field}=${JSON.stringify(this.value)} as a flag: ${this.reason}`
  }
}

/** Everything `Argv.decodeArgv` can fail with. @category errors */
export type ArgvError =
  | UnknownFlag
  | AmbiguousFlag
  | InvalidChoice
  | InvalidValue
  | MissingValue
  | MissingRequired
  | UnexpectedValue
  | UnexpectedArgument

/** @category schemas */
export const ArgvError = Schema.Union(
  UnknownFlag,
  AmbiguousFlag,
  InvalidChoice,
  InvalidValue,
  MissingValue,
  MissingRequired,
  UnexpectedValue,
  UnexpectedArgument
)
