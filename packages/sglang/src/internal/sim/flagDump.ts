/**
 * What the sim's Python prints for mlops' flag dump: its installed release's catalogue written
 * back as argparse actions (the sim shares our catalogue; as a demo of `--flags-from-host`, not
 * as evidence about SGLang).
 *
 * @internal
 */
import { createHash } from "node:crypto"
import type { Catalogue, FlagSpec } from "../../Catalogue.js"
import type { ParserAction } from "../catalogue/fromParser.js"

const typeFn = (spec: FlagSpec): string | null => {
  switch (spec.type) {
    case "bool":
      return null
    case "int":
    case "list[int]":
      return spec.humanReadable === true ? "sglang.srt.utils.common.human_readable_int" : "int"
    case "float":
    case "list[float]":
      return "float"
    case "str|null":
      return "sglang.srt.utils.common.nullable_str"
    case "json":
      return "json.loads"
    default:
      return "str"
  }
}

const actionOf = (spec: FlagSpec): string =>
  spec.type !== "bool"
    ? "store"
    : spec.negatable
      ? "BooleanOptionalAction"
      : spec.field === null
        ? "DeprecatedAction"
        : spec.const !== undefined
          ? "DeprecatedStoreConstAction"
          : "store_true"

const toAction = (spec: FlagSpec): ParserAction => ({
  option_strings: [spec.flag, ...spec.aliases, ...(spec.negatable ? [`--no-${spec.flag.slice(2)}`] : [])],
  dest: spec.field ?? spec.flag.slice(2).replaceAll("-", "_"),
  action: actionOf(spec),
  type_fn: typeFn(spec),
  nargs: spec.type === "bool" ? 0 : spec.nargs,
  const: spec.const ?? null,
  default: spec.default,
  default_suppressed: false,
  choices: spec.choices,
  required: spec.required === true,
  deprecated: spec.deprecated,
  replaced_by: spec.replacedBy ?? null,
  hidden: spec.hidden === true
})

/** The dump's JSON line for a catalogue and the bytes of the sim's server_args.py. */
export const dumpLine = (catalogue: Catalogue, serverArgsSource: string): string =>
  JSON.stringify({
    sha256: createHash("sha256").update(serverArgsSource).digest("hex"),
    fields: [...catalogue.byField.keys()],
    actions: catalogue.flags.map(toAction)
  })

/** sha256 (hex) of a file's text, as the environment probe reports it. */
export const sha256Of = (text: string): string => createHash("sha256").update(text).digest("hex")
