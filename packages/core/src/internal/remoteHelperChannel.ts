/**
 * One command served by the remote helper, shaped like an ssh2 exec channel: the readable
 * side is the command's stdout, `stderr` its stderr, writes go to its stdin, `end()` is EOF,
 * `close()` drops it; `exit` (code, or null and a signal name) then `close` are emitted as
 * ssh2 emits them. Underneath is one `direct-streamlocal` channel to the helper's socket,
 * carrying the framing of `remoteHelperScript.ts`.
 *
 * @internal
 */
import { Duplex, PassThrough, type Readable } from "node:stream"

/** What `sshChannels` needs of a channel: ssh2's ClientChannel and this both are one. */
export interface ExecChannel extends Duplex {
  readonly stderr: Readable
  close(): void
}

/** The frame kinds the helper sends (`remoteHelperScript.ts`). */
export const Frame = { stdout: 1, stderr: 2, exit: 3, hold: 4 } as const

const HEADER = 5

/** The first whole frame of `buffer` and the bytes after it; undefined while it is incomplete. */
export const firstFrame = (
  buffer: Buffer
): { readonly kind: number; readonly data: Buffer; readonly rest: Buffer } | undefined => {
  if (buffer.length < HEADER) return undefined
  const end = HEADER + buffer.readUInt32BE(1)
  if (buffer.length < end) return undefined
  return { kind: buffer[0]!, data: buffer.subarray(HEADER, end), rest: buffer.subarray(end) }
}

/** What opens a socket connection to the helper: the command line, length first ("" is a hold). */
export const requestOf = (line: string): Buffer => {
  const text = Buffer.from(line, "utf8")
  const header = Buffer.alloc(4)
  header.writeUInt32BE(text.length)
  return Buffer.concat([header, text])
}

/** ssh2's forwarded stream: a Duplex with `close()` (CHANNEL_CLOSE). */
type Forwarded = Duplex & { close?: () => void }

export class HelperChannel extends Duplex implements ExecChannel {
  readonly stderr = new PassThrough()
  private pending: Buffer = Buffer.alloc(0)
  private ended = false

  constructor(
    private readonly forwarded: Forwarded,
    line: string
  ) {
    super({ autoDestroy: false, emitClose: false })
    forwarded.write(requestOf(line))
    forwarded.on("data", (chunk: Buffer) => this.frames(chunk))
    forwarded.on("error", () => {})
    // the helper closes its end once the command is over; sshd closes a socket channel only
    // when both sides have, so the end of its output is the end of the command
    forwarded.on("end", () => this.finish())
    forwarded.on("close", () => this.finish())
    this.stderr.on("drain", () => forwarded.resume())
  }

  private frames(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk])
    for (let frame = firstFrame(this.pending); frame !== undefined; frame = firstFrame(this.pending)) {
      const { kind, data } = frame
      this.pending = frame.rest
      if (kind === Frame.stdout) {
        if (!this.push(data)) this.forwarded.pause()
      } else if (kind === Frame.stderr) {
        if (!this.stderr.write(data)) this.forwarded.pause()
      } else if (kind === Frame.exit) {
        const text = data.toString("utf8")
        if (text.startsWith("c")) this.emit("exit", Number(text.slice(1)))
        else this.emit("exit", null, text.slice(1))
      }
    }
  }

  private finish(): void {
    if (this.ended) return
    this.ended = true
    // `close` after both outputs were read to their end, as ssh2 does: a reader that awaits
    // `close` has every byte by then
    let open = 2
    const drained = () => {
      if (--open === 0) this.emit("close")
    }
    this.once("end", drained)
    this.stderr.once("end", drained)
    this.push(null)
    this.stderr.end()
    this.forwarded.end()
    this.close()
  }

  override _read(): void {
    this.forwarded.resume()
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.ended) {
      callback()
      return
    }
    this.forwarded.write(chunk, () => callback())
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.ended) this.forwarded.end()
    callback()
  }

  close(): void {
    if (typeof this.forwarded.close === "function") this.forwarded.close()
    else this.forwarded.destroy()
  }
}
