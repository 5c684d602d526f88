/**
 * A webhook request's body, read with a bound (spec 8: at most 256 KiB): a declared
 * Content-Length over the limit is refused before reading anything, and a body that turns
 * out longer is refused as soon as its bytes pass the limit, so no more than
 * MAX_WEBHOOK_BODY_BYTES + 1 bytes are ever kept. Then the exact text: strict UTF-8, with a
 * leading byte-order mark kept (a signature covers it), and no replacement characters: a
 * body that is not UTF-8 cannot be given as text exactly, so it is refused rather than
 * altered.
 */

/** Longest webhook body, in bytes (spec 8). */
export const MAX_WEBHOOK_BODY_BYTES = 256 * 1024

/**
 * The request's body bytes, or 'too_large' past `maxBytes`.
 *
 * @example
 * const bytes = await readBoundedBody(c.req.raw, MAX_WEBHOOK_BODY_BYTES)
 * if (bytes === 'too_large') return tooLarge()
 */
export async function readBoundedBody(request: Request, maxBytes: number): Promise<Uint8Array | 'too_large'> {
  const declared = request.headers.get('content-length')
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared.trim()) > maxBytes) {
    await request.body?.cancel().catch(() => {})
    return 'too_large'
  }
  if (request.body === null) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel().catch(() => {})
      return 'too_large'
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

const exactUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * The bytes as text, exactly (a byte-order mark stays), or null when they are not UTF-8.
 *
 * @example
 * exactText(new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d])) // '\uFEFF{}'
 * exactText(new Uint8Array([0xff])) // null
 */
export function exactText(bytes: Uint8Array): string | null {
  try {
    return exactUtf8.decode(bytes)
  } catch {
    return null
  }
}
