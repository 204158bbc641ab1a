/**
 * A minimal POSIX tar (ustar) writer for `Sync.push`: regular files, directories and
 * symlinks, with a pax extended header (`x`) for a path or link target longer than the
 * 100-byte ustar fields. Owner 0:0 without names (the host extracts with `--no-same-owner`).
 *
 * @internal
 */

export type TarMember =
  | {
      readonly kind: "file"
      readonly path: string
      readonly mode: number
      readonly mtimeSec: number
      readonly data: Uint8Array
    }
  | { readonly kind: "dir"; readonly path: string; readonly mode: number; readonly mtimeSec: number }
  | { readonly kind: "link"; readonly path: string; readonly target: string; readonly mtimeSec: number }

const BLOCK = 512
const encoder = new TextEncoder()

/** The largest size a ustar size field holds (11 octal digits). */
export const MAX_MEMBER_BYTES = 8 ** 11 - 1

const octal = (value: number, width: number): string => {
  const digits = Math.max(0, Math.floor(value)).toString(8)
  if (digits.length > width - 1) throw new Error(`tar: ${value} does not fit a ${width}-byte field`)
  return `${digits.padStart(width - 1, "0")}\0`
}

const put = (block: Uint8Array, offset: number, width: number, text: string | Uint8Array) => {
  const bytes = typeof text === "string" ? encoder.encode(text) : text
  block.set(bytes.subarray(0, width), offset)
}

const headerBlock = (fields: {
  readonly name: Uint8Array
  readonly mode: number
  readonly size: number
  readonly mtimeSec: number
  readonly type: string
  readonly linkname: Uint8Array
}): Uint8Array => {
  const block = new Uint8Array(BLOCK)
  put(block, 0, 100, fields.name)
  put(block, 100, 8, octal(fields.mode, 8))
  put(block, 108, 8, octal(0, 8))
  put(block, 116, 8, octal(0, 8))
  put(block, 124, 12, octal(fields.size, 12))
  put(block, 136, 12, octal(fields.mtimeSec, 12))
  put(block, 148, 8, "        ")
  put(block, 156, 1, fields.type)
  put(block, 157, 100, fields.linkname)
  put(block, 257, 6, "ustar\0")
  put(block, 263, 2, "00")
  let sum = 0
  for (const byte of block) sum += byte
  put(block, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `)
  return block
}

const padding = (size: number): Uint8Array => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK)

/** One pax record: `<length> <key>=<value>\n`, the length counting itself. */
const paxRecord = (key: string, value: string): string => {
  const body = ` ${key}=${value}\n`
  const bodyBytes = encoder.encode(body).length
  let length = bodyBytes + 1
  while (String(length).length + bodyBytes !== length) length = String(length).length + bodyBytes
  return `${length}${body}`
}

/** The blocks of one member (a pax header first when a name does not fit). */
export const memberBlocks = (member: TarMember): ReadonlyArray<Uint8Array> => {
  const path = member.kind === "dir" ? `${member.path}/` : member.path
  const name = encoder.encode(path)
  const target = member.kind === "link" ? encoder.encode(member.target) : new Uint8Array()
  const out: Array<Uint8Array> = []
  const records = [
    ...(name.length > 100 ? [paxRecord("path", path)] : []),
    ...(target.length > 100 && member.kind === "link" ? [paxRecord("linkpath", member.target)] : [])
  ]
  if (records.length > 0) {
    const data = encoder.encode(records.join(""))
    out.push(
      headerBlock({
        name: encoder.encode("PaxHeaders/entry"),
        mode: 0o644,
        size: data.length,
        mtimeSec: member.mtimeSec,
        type: "x",
        linkname: new Uint8Array()
      }),
      data,
      padding(data.length)
    )
  }
  const size = member.kind === "file" ? member.data.length : 0
  out.push(
    headerBlock({
      name,
      mode: member.kind === "link" ? 0o777 : member.mode,
      size,
      mtimeSec: member.mtimeSec,
      type: member.kind === "file" ? "0" : member.kind === "dir" ? "5" : "2",
      linkname: target
    })
  )
  if (member.kind === "file") out.push(member.data, padding(size))
  return out
}

/** The two zero blocks that end an archive. */
export const END_OF_ARCHIVE: Uint8Array = new Uint8Array(BLOCK * 2)
