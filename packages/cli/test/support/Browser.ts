/**
 * A real browser for what a person looks at: Debian's headless Chromium takes a screenshot of
 * a local page, in a network namespace of its own with no interface up (`unshare -n`: it can
 * reach nothing, not even loopback), and the PNG is read back here to look at its pixels.
 */
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import { Effect } from "effect"

/** Screenshot `htmlPath` at `width`×`height`; the PNG's bytes. */
export const screenshot = (htmlPath: string, width: number, height: number): Effect.Effect<Buffer, Error> =>
  Effect.async<Buffer, Error>((resume) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mlops-chromium-"))
    const out = path.join(dir, "shot.png")
    execFile(
      "unshare",
      [
        "-n",
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${path.join(dir, "profile")}`,
        `--window-size=${width},${height}`,
        `--screenshot=${out}`,
        `file://${htmlPath}`
      ],
      { timeout: 60_000 },
      (error, _stdout, stderr) => {
        if (error !== null || !fs.existsSync(out))
          resume(Effect.fail(new Error(`chromium took no screenshot: ${error?.message ?? ""}\n${stderr}`)))
        else resume(Effect.succeed(fs.readFileSync(out)))
        fs.rmSync(dir, { recursive: true, force: true })
      }
    )
  })

export interface Image {
  readonly width: number
  readonly height: number
  /** RGBA, row by row. */
  readonly rgba: Uint8Array
}

const paeth = (a: number, b: number, c: number) => {
  const p = a + b - c
  const pa = Math.abs(p - a)
  const pb = Math.abs(p - b)
  const pc = Math.abs(p - c)
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c
}

/** An 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes), decoded per the PNG spec. */
export const decodePng = (png: Buffer): Image => {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error("not a PNG")
  let offset = 8
  let width = 0
  let height = 0
  let colorType = 0
  const data: Array<Buffer> = []
  while (offset < png.length) {
    const length = png.readUInt32BE(offset)
    const type = png.toString("latin1", offset + 4, offset + 8)
    const body = png.subarray(offset + 8, offset + 8 + length)
    if (type === "IHDR") {
      width = body.readUInt32BE(0)
      height = body.readUInt32BE(4)
      const depth = body[8]
      colorType = body[9]!
      if (depth !== 8 || (colorType !== 2 && colorType !== 6) || body[12] !== 0)
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${body[12]}`)
    } else if (type === "IDAT") data.push(body)
    offset += 12 + length
  }
  const channels = colorType === 6 ? 4 : 3
  const raw = zlib.inflateSync(Buffer.concat(data))
  const stride = width * channels
  const rows = new Uint8Array(height * stride)
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1))
    for (let x = 0; x < stride; x++) {
      const left = x >= channels ? rows[y * stride + x - channels]! : 0
      const up = y > 0 ? rows[(y - 1) * stride + x]! : 0
      const upLeft = y > 0 && x >= channels ? rows[(y - 1) * stride + x - channels]! : 0
      const v = line[x]!
      rows[y * stride + x] =
        (filter === 0
          ? v
          : filter === 1
            ? v + left
            : filter === 2
              ? v + up
              : filter === 3
                ? v + ((left + up) >> 1)
                : v + paeth(left, up, upLeft)) & 255
    }
  }
  const rgba = new Uint8Array(width * height * 4)
  for (let i = 0; i < width * height; i++) {
    rgba[i * 4] = rows[i * channels]!
    rgba[i * 4 + 1] = rows[i * channels + 1]!
    rgba[i * 4 + 2] = rows[i * channels + 2]!
    rgba[i * 4 + 3] = channels === 4 ? rows[i * channels + 3]! : 255
  }
  return { width, height, rgba }
}

export interface Blob {
  readonly size: number
  readonly x: number
  readonly y: number
}

/**
 * The connected regions (4-neighbours) of pixels within `tolerance` of `hex`, at least
 * `minSize` pixels, with their centres, left to right.
 */
export const blobs = (image: Image, hex: string, minSize = 20, tolerance = 3): ReadonlyArray<Blob> => {
  const n = Number.parseInt(hex.slice(1), 16)
  const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255]
  const { width, height, rgba } = image
  const match = (i: number) =>
    Math.abs(rgba[i * 4]! - r) <= tolerance &&
    Math.abs(rgba[i * 4 + 1]! - g) <= tolerance &&
    Math.abs(rgba[i * 4 + 2]! - b) <= tolerance
  const seen = new Uint8Array(width * height)
  const found: Array<Blob> = []
  for (let start = 0; start < width * height; start++) {
    if (seen[start] || !match(start)) continue
    const stack = [start]
    seen[start] = 1
    let size = 0
    let sx = 0
    let sy = 0
    while (stack.length > 0) {
      const i = stack.pop()!
      size++
      sx += i % width
      sy += Math.floor(i / width)
      const x = i % width
      for (const j of [i - width, i + width, x > 0 ? i - 1 : -1, x < width - 1 ? i + 1 : -1])
        if (j >= 0 && j < width * height && !seen[j] && match(j)) {
          seen[j] = 1
          stack.push(j)
        }
    }
    if (size >= minSize) found.push({ size, x: sx / size, y: sy / size })
  }
  return found.sort((a, b) => a.x - b.x)
}
