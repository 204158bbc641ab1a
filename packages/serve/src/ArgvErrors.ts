/**
 * Why an engine's command line would be rejected by its argument parser, found before
 * anything runs. Each error names the flag and says how to fix it.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

const orList = (items: ReadonlyArray<string>) => items.join(", ")

/**
 * Why the flags were read with another release's catalogue, when one stood in (the host's own
 * parser could not be read): part of every argv error, so the release it names is explained.
 */
const standIn = { note: Schema.optional(Schema.String) }

const withNote = (message: string, note: string | undefined) =>
  note === undefined ? message : `${message} (${note})`

/** A flag no spelling or unique prefix of which is known. @category errors */
export class UnknownFlag extends Schema.TaggedError<UnknownFlag>()("UnknownFlag", {
  flag: Schema.String,
  suggestions: Schema.Array(Schema.String),
  /** The engine's display name: `SGLang`, `vLLM`. */
  engine: Schema.String,
  version: Schema.String,
  /** The command that lists the installed release's flags. */
  helpCommand: Schema.String,
  ...standIn
}) {
  override get message() {
    const hint =
      this.suggestions.length > 0
        ? `did you mean ${orList(this.suggestions)}?`
        : `remove it or check \`${this.helpCommand}\``
    return withNote(`unknown flag ${this.flag} for ${this.engine} ${this.version}; ${hint}`, this.note)
  }
}

/** A prefix that abbreviates several flags (argparse refuses to guess). @category errors */
export class AmbiguousFlag extends Schema.TaggedError<AmbiguousFlag>()("AmbiguousFlag", {
  flag: Schema.String,
  candidates: Schema.Array(Schema.String),
  ...standIn
}) {
  override get message() {
    return withNote(
      `ambiguous flag ${this.flag}: it abbreviates ${orList(this.candidates)}; spell the flag out`,
      this.note
    )
  }
}

/** A value outside the flag's choices. @category errors */
export class InvalidChoice extends Schema.TaggedError<InvalidChoice>()("InvalidChoice", {
  flag: Schema.String,
  value: Schema.String,
  choices: Schema.Array(Schema.String),
  ...standIn
}) {
  override get message() {
    return withNote(
      `invalid value ${JSON.stringify(this.value)} for ${this.flag}; choose one of: ${orList(this.choices)} (case-sensitive)`,
      this.note
    )
  }
}

/** A value that does not convert to the flag's type (`--tp-size two`). @category errors */
export class InvalidValue extends Schema.TaggedError<InvalidValue>()("InvalidValue", {
  flag: Schema.String,
  value: Schema.String,
  expected: Schema.String,
  ...standIn
}) {
  override get message() {
    return withNote(
      `invalid value ${JSON.stringify(this.value)} for ${this.flag}: expected ${this.expected}`,
      this.note
    )
  }
}

/** A flag that needs a value but got none (end of argv or another flag next). @category errors */
export class MissingValue extends Schema.TaggedError<MissingValue>()("MissingValue", {
  flag: Schema.String,
  expected: Schema.String,
  ...standIn
}) {
  override get message() {
    return withNote(
      `${this.flag} needs ${this.expected}: write \`${this.flag} <value>\` (use \`${this.flag}=<value>\` when the value starts with "-")`,
      this.note
    )
  }
}

/** The required flag is absent. @category errors */
export class MissingRequired extends Schema.TaggedError<MissingRequired>()("MissingRequired", {
  flag: Schema.String,
  ...standIn
}) {
  override get message() {
    return withNote(
      `${this.flag} is required: add \`${this.flag} <local dir or Hugging Face repo id>\``,
      this.note
    )
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
  inline: Schema.optional(Schema.Boolean),
  ...standIn
}) {
  override get message() {
    return withNote(
      `${this.flag} takes no value (it is an on/off switch) but got ${JSON.stringify(this.value)}; write just \`${this.flag}\` to turn it on, or leave it out`,
      this.note
    )
  }
}

/** A bare word where a flag was expected (SGLang takes no positional argument, vLLM only its model). @category errors */
export class UnexpectedArgument extends Schema.TaggedError<UnexpectedArgument>()("UnexpectedArgument", {
  argument: Schema.String,
  /** The flag before it, if any (a list flag given with `=` takes one value only). */
  after: Schema.NullOr(Schema.String),
  /** What the engine's command takes besides flags, in its own words (`vllm serve takes the model as its one positional argument`). */
  takes: Schema.String,
  ...standIn
}) {
  override get message() {
    const where = this.after === null ? "" : ` after ${this.after}`
    return withNote(
      `unexpected argument ${JSON.stringify(this.argument)}${where}: ${this.takes}, and lists are given as \`--flag a b\` (not \`--flag=a b\`)`,
      this.note
    )
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

/**
 * The same error with `note` saying why its release's flags were used (another release stood
 * in for the host's). @category constructors
 */
export const noted = (error: ArgvError, note: string): ArgvError => {
  switch (error._tag) {
    case "UnknownFlag":
      return new UnknownFlag({ ...error, note })
    case "AmbiguousFlag":
      return new AmbiguousFlag({ ...error, note })
    case "InvalidChoice":
      return new InvalidChoice({ ...error, note })
    case "InvalidValue":
      return new InvalidValue({ ...error, note })
    case "MissingValue":
      return new MissingValue({ ...error, note })
    case "MissingRequired":
      return new MissingRequired({ ...error, note })
    case "UnexpectedValue":
      return new UnexpectedValue({ ...error, note })
    case "UnexpectedArgument":
      return new UnexpectedArgument({ ...error, note })
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

/** Whether a value is one of the argv errors. @category predicates */
export const isArgvError: (u: unknown) => u is ArgvError = Schema.is(ArgvError)
