/**
 * Attachment bytes for the AI tests, built in code (no binaries in the repository): still
 * and animated PNG (APNG), GIF and WEBP, a JPEG header, PDFs with a chosen page count
 * (pdf-lib), and padded images of a chosen size.
 */
import { crc32, deflateSync } from 'node:zlib'
import { PDFDocument } from 'pdf-lib'

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  out.set(new TextEncoder().encode(type), 4)
  out.set(data, 8)
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
  return out
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A valid 1x1 RGB PNG; `animated` adds an acTL chunk (an APNG); `padTo` pads after IEND to that many bytes. */
export function png(options: { animated?: boolean; padTo?: number } = {}): Uint8Array {
  const header = new Uint8Array(13)
  const view = new DataView(header.buffer)
  view.setUint32(0, 1)
  view.setUint32(4, 1)
  header.set([8, 2, 0, 0, 0], 8)
  const actl = new Uint8Array(8)
  new DataView(actl.buffer).setUint32(0, 2)
  const image = concat(
    PNG_SIGNATURE,
    chunk('IHDR', header),
    ...(options.animated ? [chunk('acTL', actl)] : []),
    chunk('IDAT', deflateSync(new Uint8Array([0, 255, 0, 0]))),
    chunk('IEND', new Uint8Array()),
  )
  return options.padTo === undefined ? image : concat(image, new Uint8Array(options.padTo - image.length))
}

/** A 1x1 GIF89a with `frames` image descriptors (two or more: animated). */
export function gif(frames = 1): Uint8Array {
  const frame = [
    0x21, 0xf9, 0x04, 0x00, 0x0a, 0x00, 0x00, 0x00, // graphic control extension
    0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0x00, // image descriptor, no local colour table
    0x02, 0x02, 0x44, 0x01, 0x00, // LZW minimum code size, one sub-block, terminator
  ]
  return new Uint8Array([
    ...new TextEncoder().encode('GIF89a'), 1, 0, 1, 0, 0x80, 0, 0, // screen: global colour table of 2
    0, 0, 0, 255, 255, 255,
    ...Array.from({ length: frames }, () => frame).flat(),
    0x3b,
  ])
}

/**
 * A 1x1 WEBP: a still VP8L image, or an animated one of two frames (VP8X with the animation
 * flag, ANIM, and two ANMF frames each holding that VP8L image), as libwebp writes them.
 */
export function webp(animated = false): Uint8Array {
  const riffChunk = (fourcc: string, data: ArrayLike<number>) => {
    const bytes = new Uint8Array(8 + data.length + (data.length % 2))
    bytes.set(new TextEncoder().encode(fourcc), 0)
    new DataView(bytes.buffer).setUint32(4, data.length, true)
    bytes.set(data, 8)
    return bytes
  }
  const still = riffChunk('VP8L', [0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0])
  // ANMF: x/2, y/2, width-1, height-1 (24 bits each: all 0 for 1x1 at the origin), duration 100 ms, flags; then the frame.
  const frame = riffChunk('ANMF', concat(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 0, 0, 0]), still))
  const body = animated
    ? concat(riffChunk('VP8X', [0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0]), riffChunk('ANIM', [0, 0, 0, 0, 0, 0]), frame, frame)
    : still
  const header = new Uint8Array(12)
  header.set(new TextEncoder().encode('RIFF'), 0)
  new DataView(header.buffer).setUint32(4, 4 + body.length, true)
  header.set(new TextEncoder().encode('WEBP'), 8)
  return concat(header, body)
}

/** The start of a JPEG (SOI and a JFIF APP0 segment): enough for type detection. */
export function jpeg(): Uint8Array {
  return new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9])
}

/** A PDF of `pages` blank pages; `padTo` appends a comment to reach that many bytes. */
export async function pdf(pages: number, options: { padTo?: number } = {}): Promise<Uint8Array> {
  const document = await PDFDocument.create()
  for (let page = 0; page < pages; page += 1) document.addPage([200, 200])
  const bytes = await document.save()
  if (options.padTo === undefined) return bytes
  const padding = new Uint8Array(options.padTo - bytes.length).fill(0x20)
  padding[0] = 0x0a
  padding[1] = 0x25 // "%": a comment line after %%EOF
  return concat(bytes, padding)
}

export function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64')
}
