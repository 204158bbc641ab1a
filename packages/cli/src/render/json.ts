/**
 * `--json` output: plain JSON values. Tagged errors keep their `_tag`, gain their `message`,
 * and every other field; Sets become arrays, Maps objects, bigints strings.
 */

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const replacer = (_key: string, value: unknown): unknown => {
  if (value instanceof Set) return [...value]
  if (value instanceof Map) return Object.fromEntries(value)
  if (typeof value === "bigint") return value.toString()
  if (value instanceof Error) {
    const fields: Record<string, unknown> = {}
    for (const key of Object.keys(value)) fields[key] = (value as unknown as Record<string, unknown>)[key]
    const tag = isRecord(value) && typeof value._tag === "string" ? value._tag : value.name
    return { _tag: tag, message: value.message, ...fields }
  }
  return value
}

/** A JSON-safe copy of `value`. */
export const encode = (value: unknown): unknown => JSON.parse(JSON.stringify(value, replacer) ?? "null")

/** One line of NDJSON. */
export const line = (value: unknown): string => JSON.stringify(value, replacer)
