/**
 * `--help` as people expect it from a command on their PATH: usage lines that start with
 * `mlops` (and end in `-- <engine flags>` for the commands that take the engine's flags), options
 * that do something (none of @effect/cli's built-ins: `--wizard`, `--log-level`,
 * `--completions` are not mlops features; `mlops completion` is), a repeatable option shown as
 * optional, no type boilerplate ("A user-defined piece of text."), and no escapes unless the
 * terminal takes colour (`NO_COLOR`, or not a TTY: plain text).
 *
 * It renders @effect/cli's own help document (so descriptions and options stay the single
 * source), walking it here instead of through @effect/cli's ANSI renderer.
 */
import { CliConfig, Command, CommandDescriptor, type HelpDoc, Usage } from "@effect/cli"
import type { Span } from "@effect/cli/HelpDoc/Span"
import { HashMap } from "effect"
import { bold, type Style } from "./style.js"

/** Commands whose arguments after `--` are SGLang's. */
const TAKES_ENGINE_FLAGS: ReadonlySet<string> = new Set(["launch", "check"])

/** @effect/cli's description of a value's type, which says nothing the option name does not. */
const BOILERPLATE =
  /^(A user-defined piece of text|An integer|A true or false value|A floating point number|A file system path|A date|This setting is optional)\.?$/

/** @effect/cli's built-in options: mlops documents `--help` and `--version` once, at the top. */
const BUILT_IN = /^(--completions|--log-level|--wizard|--version|\(-h, --help\))(\s|$)/

const spanText = (span: Span, style: Style): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Highlight":
    case "Weak":
      return spanText(span.value, style)
    case "Strong":
      return bold(style, spanText(span.value, style))
    case "Sequence":
      return spanText(span.left, style) + spanText(span.right, style)
  }
}

const blocks = (doc: HelpDoc.HelpDoc, style: Style, indent: string): Array<string> => {
  switch (doc._tag) {
    case "Empty":
      return []
    case "Header":
      return [bold(style, spanText(doc.value, style))]
    case "Paragraph": {
      const text = spanText(doc.value, style)
      return BOILERPLATE.test(text.trim()) ? [] : [`${indent}${text}`]
    }
    case "DescriptionList":
      return doc.definitions.flatMap(([term, description]) => {
        const text = spanText(term, { live: false, color: false })
        if (BUILT_IN.test(text)) return []
        return [`${indent}${bold(style, text)}`, ...blocks(description, style, `${indent}    `)]
      })
    case "Enumeration":
      return doc.elements.flatMap((element) => blocks(element, style, `${indent}  - `))
    case "Sequence":
      return [...blocks(doc.left, style, indent), ...blocks(doc.right, style, indent)]
  }
}

/** The usage line of a command: `mlops <name> ...`, repeatables optional, the engine's flags last. */
export const usageLine = (name: string, command: CommandDescriptor.Command<unknown>): string => {
  const plain: Style = { live: false, color: false }
  const usage = blocks(Usage.getHelp(CommandDescriptor.getUsage(command)), plain, "")
    .join(" ")
    .trim()
  const optionalRepeats = usage.replace(/(?<!\[)(--[\w-]+ \w+)\.\.\./g, "[$1]...")
  const line = `mlops ${optionalRepeats}`
  return TAKES_ENGINE_FLAGS.has(name) ? `${line} -- <engine flags>` : line
}

/** Help for one subcommand. */
export const commandHelp = (
  name: string,
  command: CommandDescriptor.Command<unknown>,
  style: Style
): string => {
  const body = blocks(CommandDescriptor.getHelp(command, CliConfig.defaultConfig), style, "  ")
  return [bold(style, "USAGE"), `  ${usageLine(name, command)}`, "", ...spaced(body)].join("\n")
}

/** Help for `mlops` itself: the commands with their first description line. */
export const rootHelp = (
  version: string,
  description: string,
  commands: ReadonlyArray<{ readonly name: string; readonly summary: string }>,
  style: Style
): string => {
  const width = Math.max(...commands.map((c) => c.name.length))
  return [
    `mlops ${version}: ${description}`,
    "",
    bold(style, "USAGE"),
    "  mlops <command> [options]            (mlops <command> --help for its options)",
    "",
    bold(style, "COMMANDS"),
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    bold(style, "OPTIONS"),
    "  -h, --help     this help",
    "  --version      mlops' version",
    "",
    "Shell completion: mlops completion bash|zsh|fish (e.g. source <(mlops completion bash))"
  ].join("\n")
}

/** A blank line before each header (after the first block). */
const spaced = (lines: ReadonlyArray<string>): Array<string> =>
  lines.flatMap((line, i) => (i > 0 && !line.startsWith(" ") ? ["", line] : [line]))

/** The first sentence of a command's description. */
export const summaryOf = (command: CommandDescriptor.Command<unknown>): string => {
  const plain: Style = { live: false, color: false }
  const lines = blocks(CommandDescriptor.getHelp(command, CliConfig.defaultConfig), plain, "")
  const description = lines[lines.indexOf("DESCRIPTION") + 1] ?? ""
  const end = description.search(/\.(\s|$)/)
  return end === -1 ? description : description.slice(0, end)
}

/** The subcommands of `root`, by name, in the order they were given. */
export const subcommandsOf = <Name extends string, R, E, A>(
  root: Command.Command<Name, R, E, A>
): Array<readonly [string, CommandDescriptor.Command<unknown>]> => {
  const map = Command.getSubcommands(root)
  return [...HashMap.entries(map)]
}

/** `words` (mlops' own, after the program name) ask for help: `--help`/`-h`, or no words at all. */
export const asksForHelp = (words: ReadonlyArray<string>): boolean =>
  words.length === 0 || words.includes("--help") || words.includes("-h")

/** The help text for `words`: a subcommand's when they name one, else the overview. */
export const helpFor = <Name extends string, R, E, A>(
  root: Command.Command<Name, R, E, A>,
  meta: { readonly version: string; readonly description: string },
  words: ReadonlyArray<string>,
  style: Style
): string => {
  // in the order the root's own help lists them
  const listed = blocks(
    Command.getHelp(root, CliConfig.defaultConfig),
    { live: false, color: false },
    ""
  ).join("\n")
  const at = (name: string) => listed.indexOf(`- ${name} `)
  const subcommands = subcommandsOf(root).sort(([a], [b]) => at(a) - at(b))
  const target = subcommands.find(([name]) => name === words[0])
  if (target !== undefined) return commandHelp(target[0], target[1], style)
  return rootHelp(
    meta.version,
    meta.description,
    subcommands.map(([name, command]) => ({ name, summary: summaryOf(command) })),
    style
  )
}
