/**
 * What the serving layer asks of an argv before (or without) decoding it: the model and the
 * port. A lenient scan with vLLM's spellings, so a command line the parser refuses still names
 * its model and port in the refusal.
 *
 * @internal
 */
import * as Catalogue from "../../Catalogue.js"
import { flagOfWord } from "./flags.js"

/** The positional model (or `--model X`), skipping flags and their values. */
export const modelOf = (argv: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === "--model") return argv[i + 1]
    if (word.startsWith("--model=")) return word.slice("--model=".length)
    if (!word.startsWith("-")) return word
    if (word.includes("=")) continue
    const flag = flagOfWord(Catalogue.latest, word)
    if (flag === undefined || flag.arity === "switch" || flag.arity === "toggle") continue
    if (flag.arity === "many") while (i + 1 < argv.length && !argv[i + 1]!.startsWith("-")) i++
    else if (flag.arity !== "maybe" || !(argv[i + 1] ?? "-").startsWith("-")) i++
  }
  return undefined
}

/** `--port N` (last one wins), else vLLM's 8000. */
export const portOf = (argv: ReadonlyArray<string>): number => {
  let port = 8000
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const value = word === "--port" ? argv[i + 1] : word.startsWith("--port=") ? word.slice(7) : undefined
    if (value !== undefined && /^\d+$/.test(value)) port = Number(value)
  }
  return port
}

/** The name clients use: the first `--served-model-name` (either spelling, `=` or not), else the model. */
export const servedNameOf = (argv: ReadonlyArray<string>): string | undefined => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const [flag, inline] = word.includes("=")
      ? [word.slice(0, word.indexOf("=")), word.slice(word.indexOf("=") + 1)]
      : [word, undefined]
    if (flag !== "--served-model-name" && flag !== "--served_model_name") continue
    const value = inline ?? argv[i + 1]
    if (value !== undefined && value !== "" && !value.startsWith("-")) return value
  }
  return modelOf(argv)
}
