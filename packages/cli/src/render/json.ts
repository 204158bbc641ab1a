/**
 * `--json` output: plain JSON values. Tagged errors keep their `_tag`, gain their `message`,
 * and every other field; Sets become arrays, Maps objects, bigints strings.
 */

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

// A function (not an arrow) so that `this[key]` is the value before its own `toJSON` ran:
// Effect's errors have a `toJSON` that leaves out `message`.
function replacer(this: unknown, key: string, value: unknown): unknown {
  const original = isRecord(this) ? this[key] : value
  if (original instanceof Error) {
    const fields: Record<string, unknown> = {}
    for (const name of Object.keys(original))
      fields[name] = (original as unknown as Record<string, unknown>)[name]
    const tag = isRecord(original) && typeof original._tag === "string" ? original._tag : original.name
    return { _tag: tag, message: original.message, ...fields }
  }
  if (value instanceof Set) return [...value]
  if (value instanceof Map) return Object.fromEntries(value)
  if (typeof value === "bigint") return value.toString()
  return value
}

/** A JSON-safe copy of `value`. */
export const encode = (value: unknown): unknown => JSON.parse(JSON.stringify(value, replacer) ?? "null")

/** One line of NDJSON. */
export const line = (value: unknown): string => JSON.stringify(value, replacer)
