/**
 * Whether a GIF or WEBP image is animated, read from its bytes. `file-type` tells the
 * format (and APNG from PNG) but not whether a GIF or WEBP has more than one frame, and no
 * maintained library for that is among the platform's dependencies; these readers walk
 * only the container's block structure (GIF89a blocks, RIFF chunks), stop at the answer
 * and never decode pixels. A structure they cannot follow counts as not animated: the
 * provider then sees the image as it is, and every byte of it was already size-checked.
 */

/**
 * Counts a GIF's image descriptors, stopping at two.
 *
 * @example
 * gifIsAnimated(bytes) // true for a GIF with two or more frames
 */
export function gifIsAnimated(bytes: Uint8Array): boolean {
  if (bytes.length < 13) return false
  let at = 13
  const packed = bytes[10]!
  if (packed & 0x80) at += 3 * 2 ** ((packed & 0x07) + 1)
  let frames = 0
  while (at < bytes.length) {
    const marker = bytes[at]!
    if (marker === 0x3b) break // trailer
    if (marker === 0x21) {
      // Extension: introducer, label, then data sub-blocks.
      at = skipSubBlocks(bytes, at + 2)
    } else if (marker === 0x2c) {
      frames += 1
      if (frames > 1) return true
      if (at + 10 > bytes.length) break
      const local = bytes[at + 9]!
      at += 10
      if (local & 0x80) at += 3 * 2 ** ((local & 0x07) + 1)
      at = skipSubBlocks(bytes, at + 1) // LZW minimum code size, then image data
    } else {
      break
    }
    if (at < 0) break
  }
  return false
}

function skipSubBlocks(bytes: Uint8Array, start: number): number {
  let at = start
  while (at < bytes.length) {
    const size = bytes[at]!
    at += 1
    if (size === 0) return at
    at += size
  }
  return -1
}

/** Whether a WEBP declares animation (VP8X flag) or carries an animation frame (ANMF chunk). */
export function webpIsAnimated(bytes: Uint8Array): boolean {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let at = 12 // after "RIFF", size, "WEBP"
  while (at + 8 <= bytes.length) {
    const fourcc = String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!)
    const size = view.getUint32(at + 4, true)
    if (fourcc === 'VP8X' && at + 8 < bytes.length && (bytes[at + 8]! & 0x02) !== 0) return true
    if (fourcc === 'ANMF' || fourcc === 'ANIM') return true
    at += 8 + size + (size % 2)
  }
  return false
}
