/**
 * Byte bookkeeping for LogTail: split on `\n` bytes (never inside a UTF-8 sequence, so each
 * line decodes on its own), hold the partial tail, track offsets.
 *
 * @internal
 */
import { Effect } from "effect"
import type { LogLine } from "../LogTail.js"

export interface FollowState {
  /** End of the last complete line emitted: where a reconnect resumes. */
  offset: number
  /** How far the file has been read (offset + pending bytes). */
  readEnd: number
  /** Bytes after `offset` without a newline yet. */
  pending: Uint8Array
}

export const makeState = (offset: number): FollowState => ({
  offset,
  readEnd: offset,
  pending: new Uint8Array()
})

export const restartAt = (state: FollowState, offset: number): void => {
  state.offset = offset
  state.readEnd = offset
  state.pending = new Uint8Array()
}

const NEWLINE = 0x0a
const CR = 0x0d

export const decodeLine = (bytes: Uint8Array): string => {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.length - 1 : bytes.length
  return new TextDecoder("utf-8", { fatal: false }).decode(bytes.subarray(0, end))
}

/** Append freshly read bytes; return the complete lines they finish. */
export const consume = (state: FollowState, bytes: Uint8Array): Array<LogLine> => {
  const buffer = new Uint8Array(state.pending.length + bytes.length)
  buffer.set(state.pending, 0)
  buffer.set(bytes, state.pending.length)
  state.readEnd += bytes.length
  const lines: Array<LogLine> = []
  let start = 0
  for (let i = 0; i < buffer.length; i++) {
    if (buffer[i] !== NEWLINE) continue
    const offset = state.offset + start
    lines.push({
      _tag: "LogLine",
      text: decodeLine(buffer.subarray(start, i)),
      offset,
      nextOffset: state.offset + i + 1
    })
    start = i + 1
  }
  state.offset += start
  state.pending = buffer.slice(start)
  return lines
}

/**
 * The last `count` complete lines of a file of `size` bytes, reading backwards `chunkBytes`
 * at a time until enough newlines are seen (or the start of the file).
 */
export const readLastLines = <E>(
  read: (offset: number, length: number) => Effect.Effect<Uint8Array, E>,
  size: number,
  count: number,
  chunkBytes: number
): Effect.Effect<ReadonlyArray<LogLine>, E> =>
  Effect.gen(function* () {
    if (count <= 0 || size === 0) return []
    let start = size
    let data = new Uint8Array()
    let newlines = 0
    // count + 1 newlines guarantee `count` complete lines plus the boundary before them.
    while (start > 0 && newlines <= count) {
      const from = Math.max(0, start - chunkBytes)
      const chunk = yield* read(from, start - from)
      const next = new Uint8Array(chunk.length + data.length)
      next.set(chunk, 0)
      next.set(data, chunk.length)
      data = next
      start = from
      for (const byte of chunk) if (byte === NEWLINE) newlines++
    }
    const lastNewline = data.lastIndexOf(NEWLINE)
    if (lastNewline < 0) return []
    const lines: Array<LogLine> = []
    let end = lastNewline
    while (lines.length < count) {
      const previous = end === 0 ? -1 : data.lastIndexOf(NEWLINE, end - 1)
      if (previous < 0 && start > 0) break
      const lineStart = previous + 1
      lines.push({
        _tag: "LogLine",
        text: decodeLine(data.subarray(lineStart, end)),
        offset: start + lineStart,
        nextOffset: start + end + 1
      })
      if (previous < 0) break
      end = previous
    }
    return lines.reverse()
  })
