/**
 * `mlops flags [--host H | --version V] [QUERY] [--json]`: SGLang's launch_server flags with
 * type, default, choices and the shipped releases that have them; `--releases` lists the
 * releases mlops ships catalogues for. With `--host` the host's own SGLang decides (read from
 * its parser when mlops does not ship that version, or with `--flags-from-host`).
 */
import * as Catalogue from "@mlops/sglang/Catalogue"
import * as Flags from "@mlops/sglang/Flags"
import * as Installed from "@mlops/sglang/Installed"
import { Console, Effect, Option } from "effect"
import type { Parsed } from "../commands/flags.js"
import { type CommandExit, UsageError } from "../commands/shared.js"
import { foundAt } from "../render/located.js"
import { bold, dim, type Style, TerminalStyle, table, yellow } from "../render/style.js"
import { handle, type ProgramEnv, printJson } from "./shared.js"

const short = (value: unknown, width = 40): string => {
  const text = value === null ? "None" : typeof value === "string" ? value : JSON.stringify(value)
  return text.length > width ? `${text.slice(0, width - 1)}…` : text
}

const detail = (style: Style, info: Flags.FlagInfo): string =>
  [
    `${bold(style, info.flag)}${info.aliases.length > 0 ? ` (also ${info.aliases.join(", ")})` : ""}${info.deprecated ? yellow(style, " deprecated") : ""}`,
    ...(info.summary === "" ? [] : [`  ${info.summary}`]),
    `  field: ${info.field ?? "none"}; type: ${info.type}; default: ${short(info.default, 200)}`,
    ...(info.choices === null ? [] : [`  choices: ${info.choices.join(", ")}`]),
    ...(info.replacedBy === null ? [] : [`  use instead: ${info.replacedBy}`]),
    `  releases: ${Flags.formatReleases(info.releases) || "none shipped"}`
  ].join("\n")

const releaseTable = () =>
  table(
    ["VERSION", "DATE", "FLAGS", "COMMIT", "RELEASE POINT"],
    Catalogue.releases.map((r) => [
      r.version,
      r.date,
      String(r.flagCount),
      r.commit.slice(0, 12),
      r.releasePoint
    ])
  )

/** `--engine vllm`: `vllm serve`'s flags for a version (its snapshot) or a host (its own parser). */
const vllmFlags = (parsed: Parsed) =>
  Effect.gen(function* () {
    const style = yield* TerminalStyle
    const [VllmCatalogue, VllmInstalled] = yield* Effect.promise(() =>
      Promise.all([import("@mlops/vllm/Catalogue"), import("@mlops/vllm/Installed")])
    )
    if (parsed.releases) {
      const rows = VllmCatalogue.snapshots.map((s) => [s.name, s.near, s.commit.slice(0, 12)])
      if (parsed.json) return yield* printJson({ snapshots: VllmCatalogue.snapshots })
      return yield* Console.log(table(["SNAPSHOT", "NEAR", "COMMIT"], rows))
    }
    const found = Option.isSome(parsed.host)
      ? yield* VllmInstalled.onHost({ host: parsed.host.value, fromHost: parsed.flagsFromHost })
      : yield* Effect.map(
          VllmCatalogue.forVersion(
            Option.getOrElse(parsed.version, () => VllmCatalogue.latest.snapshot.near)
          ),
          (chosen) => ({
            catalogue: chosen.catalogue,
            warning: chosen.warning,
            source: chosen.warning === null ? "shipped" : "nearest",
            version: Option.getOrElse(parsed.version, () => VllmCatalogue.latest.snapshot.near)
          })
        )
    const text = Option.getOrElse(parsed.query, () => "").toLowerCase()
    const list = found.catalogue.flags.filter(
      (flag) =>
        text === "" ||
        flag.flag.includes(text) ||
        flag.dest.includes(text) ||
        flag.group.toLowerCase().includes(text)
    )
    if (parsed.json)
      return yield* printJson({
        engine: "vllm",
        version: found.version,
        snapshot: found.catalogue.snapshot,
        source: found.source,
        warning: found.warning,
        flags: list
      })
    const fromHost = found.source === "dumped" || found.source === "cached"
    yield* Console.log(
      [
        `${bold(style, `vLLM ${found.version}`)}: ${list.length} of ${found.catalogue.flags.length} flags${fromHost ? " (read from the host's parser)" : ` (${found.catalogue.snapshot.name}, near ${found.catalogue.snapshot.near})`}`,
        ...(found.warning === null ? [] : [`${yellow(style, "!")} ${found.warning}`]),
        ...(list.length === 0
          ? []
          : [
              table(
                ["FLAG", "TYPE", "DEFAULT", "CHOICES", "GROUP"],
                list.map((flag) => [
                  [flag.flag, ...flag.short].join(", "),
                  flag.arity === "single" ? flag.conversion : `${flag.arity} ${flag.conversion}`,
                  short(flag.default, 24),
                  flag.choices === null ? "" : short(flag.choices.join("|"), 40),
                  flag.group
                ])
              )
            ])
      ].join("\n")
    )
  })

export const flags = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  parsed.engine === "vllm" ? handle(parsed.json, {}, vllmFlags(parsed)) : sglangFlags(parsed)

const sglangFlags = (parsed: Parsed): Effect.Effect<void, CommandExit, ProgramEnv> =>
  handle(
    parsed.json,
    {},
    Effect.gen(function* () {
      const style = yield* TerminalStyle
      if (parsed.releases) {
        if (parsed.json) return yield* printJson({ releases: Catalogue.releases })
        return yield* Console.log(releaseTable())
      }
      if (Option.isSome(parsed.host) && Option.isSome(parsed.version)) {
        return yield* new UsageError({ message: "give --host <alias> or --version <V>, not both" })
      }
      const found = Option.isSome(parsed.host)
        ? yield* Installed.onHost({ host: parsed.host.value, fromHost: parsed.flagsFromHost })
        : yield* Catalogue.forVersion(Option.getOrElse(parsed.version, () => Catalogue.latest.version)).pipe(
            Effect.map((m) => ({
              catalogue: m.catalogue,
              warning: m.warning,
              source: m.exact ? "shipped" : "nearest",
              located: undefined
            }))
          )
      const text = Option.getOrElse(parsed.query, () => "")
      const list = Flags.list(found.catalogue, text)
      const others = Flags.elsewhere(found.catalogue, text)
      if (parsed.json) {
        return yield* printJson({
          version: found.catalogue.version,
          source: found.source,
          ...(found.located === undefined
            ? {}
            : {
                python: {
                  interpreter: found.located.interpreter,
                  source: found.located.source,
                  setting: found.located.setting,
                  engineVersion: found.located.engineVersion,
                  versionSource: found.located.versionSource
                }
              }),
          warning: found.warning,
          flags: list,
          otherReleases: others
        })
      }
      const otherLines =
        others.length === 0
          ? []
          : [
              `not in ${found.catalogue.version}, in other releases:`,
              ...others.map((o) => `  ${o.flag}  ${dim(style, Flags.formatReleases(o.releases))}`)
            ]
      const header = `${bold(style, `SGLang ${found.catalogue.version}`)}: ${list.length} of ${found.catalogue.flags.length} flags${found.source === "dumped" || found.source === "cached" ? " (read from the host's parser)" : ""}`
      const warning = found.warning === null ? [] : [`${yellow(style, "!")} ${found.warning}`]
      const installed =
        found.located === undefined
          ? []
          : [
              // `flags` has no --python: the host's entry pins it
              `  the host's SGLang ${foundAt(found.located, "hosts.json")}`
            ]
      if (list.length <= 3 && Option.isSome(parsed.query)) {
        return yield* Console.log(
          [header, ...installed, ...warning, ...list.map((info) => detail(style, info)), ...otherLines].join(
            "\n"
          )
        )
      }
      const rows = list.map((info) => [
        info.flag,
        info.type,
        short(info.default, 24),
        info.choices === null ? "" : short(info.choices.join("|"), 40),
        Flags.formatReleases(info.releases)
      ])
      yield* Console.log(
        [
          header,
          ...installed,
          ...warning,
          ...(rows.length === 0 ? [] : [table(["FLAG", "TYPE", "DEFAULT", "CHOICES", "RELEASES"], rows)]),
          ...otherLines
        ].join("\n")
      )
    })
  )
