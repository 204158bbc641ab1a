/**
 * Facts read from a raw argv that may not decode (preflight off): port, model path, and the
 * default deployment name.
 *
 * @internal
 */

const DEFAULT_PORT = 30000

/** `--port N` / `--port=N` read from an argv that may not decode. */
export const portOf = (argv: ReadonlyArray<string>): number => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    const value = word.startsWith("--port=") ? word.slice(7) : word === "--port" ? argv[i + 1] : undefined
    const n = Number(value)
    if (value !== undefined && Number.isInteger(n) && n > 0) return n
  }
  return DEFAULT_PORT
}

/** `--model-path P` / `--model P` (or `=P`). */
export const modelPathOf = (argv: ReadonlyArray<string>): string => {
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word.startsWith("--model-path=") || word.startsWith("--model="))
      return word.slice(word.indexOf("=") + 1)
    if ((word === "--model-path" || word === "--model") && argv[i + 1] !== undefined) return argv[i + 1]!
  }
  return "model"
}

/** The default deployment name: the model directory's name, lower-cased, made a valid name. */
export const defaultName = (argv: ReadonlyArray<string>): string => {
  const base = modelPathOf(argv).replace(/\/+$/, "").split("/").pop() ?? "model"
  const name = base
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "")
  return name === "" ? "sglang" : name.slice(0, 64)
}
