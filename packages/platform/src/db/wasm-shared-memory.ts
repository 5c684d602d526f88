/**
 * Rewrites a WebAssembly binary so that the memory it imports is declared shared. PGlite's
 * Postgres (and each extension library it loads) imports one linear memory; declared shared,
 * that memory can be written by another thread while Postgres runs, which is how the
 * statement timeout raises Postgres' own interrupt flags (`pglite-statement-timeout.ts`).
 * A shared memory must name its maximum: the import's own, else `maxPages`.
 */

const MAGIC = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]
const IMPORT_SECTION = 2
const IMPORT_KIND = { function: 0, table: 1, memory: 2, global: 3, tag: 4 } as const
/** Limits flags: bit 0 has a maximum, bit 1 shared, bit 2 64-bit addresses. */
const HAS_MAX = 1
const SHARED = 2

export class WasmPatchError extends Error {
  override name = 'WasmPatchError'
}

function leb128(value: number): number[] {
  const out: number[] = []
  let rest = value >>> 0
  do {
    let byte = rest & 0x7f
    rest >>>= 7
    if (rest !== 0) byte |= 0x80
    out.push(byte)
  } while (rest !== 0)
  return out
}

/** The imported memory's limits, in 64 KiB pages; null when the binary imports none. */
export function importedMemoryLimits(bytes: Uint8Array): { min: number; max: number | null; shared: boolean } | null {
  const found = findMemoryImport(bytes)
  return found && { min: found.min, max: found.max, shared: (found.flags & SHARED) !== 0 }
}

/**
 * A copy of `bytes` whose imported memory is shared, or `bytes` itself when it already is.
 * Throws WasmPatchError when the binary imports no memory or one this cannot describe.
 *
 * @example
 *   const module = await WebAssembly.compile(shareImportedMemory(readFileSync(wasmPath)))
 */
export function shareImportedMemory(bytes: Uint8Array, maxPages = 32768): Uint8Array {
  const found = findMemoryImport(bytes)
  if (!found) throw new WasmPatchError('the WebAssembly module imports no memory')
  if (found.flags & SHARED) return bytes
  if (found.flags & ~HAS_MAX) throw new WasmPatchError(`unexpected memory limits flags ${found.flags}`)
  const max = found.max ?? maxPages
  const limits = [HAS_MAX | SHARED, ...leb128(found.min), ...leb128(max)]
  const body = [
    ...bytes.subarray(found.sectionBody, found.limitsStart),
    ...limits,
    ...bytes.subarray(found.limitsEnd, found.sectionEnd),
  ]
  const head = [IMPORT_SECTION, ...leb128(body.length)]
  const out = new Uint8Array(found.sectionStart + head.length + body.length + (bytes.length - found.sectionEnd))
  out.set(bytes.subarray(0, found.sectionStart), 0)
  out.set(head, found.sectionStart)
  out.set(body, found.sectionStart + head.length)
  out.set(bytes.subarray(found.sectionEnd), found.sectionStart + head.length + body.length)
  return out
}

interface MemoryImport {
  sectionStart: number
  sectionBody: number
  sectionEnd: number
  limitsStart: number
  limitsEnd: number
  flags: number
  min: number
  max: number | null
}

function findMemoryImport(bytes: Uint8Array): MemoryImport | null {
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) throw new WasmPatchError('not a WebAssembly binary')
  let at = 8
  const byte = (): number => {
    if (at >= bytes.length) throw new WasmPatchError('truncated WebAssembly binary')
    return bytes[at++]!
  }
  const u32 = (): number => {
    let result = 0
    let shift = 0
    for (;;) {
      const b = byte()
      result += (b & 0x7f) * 2 ** shift
      if ((b & 0x80) === 0) return result
      shift += 7
      if (shift > 35) throw new WasmPatchError('malformed LEB128 number')
    }
  }
  const skipName = (): void => {
    const length = u32()
    at += length
  }
  while (at < bytes.length) {
    const sectionStart = at
    const id = byte()
    const size = u32()
    const sectionBody = at
    const sectionEnd = at + size
    if (id !== IMPORT_SECTION) {
      at = sectionEnd
      continue
    }
    const count = u32()
    for (let i = 0; i < count; i++) {
      skipName()
      skipName()
      const kind = byte()
      if (kind === IMPORT_KIND.function) u32()
      else if (kind === IMPORT_KIND.table) {
        byte()
        const flags = byte()
        u32()
        if (flags & HAS_MAX) u32()
      } else if (kind === IMPORT_KIND.global) {
        byte()
        byte()
      } else if (kind === IMPORT_KIND.tag) {
        byte()
        u32()
      } else if (kind === IMPORT_KIND.memory) {
        const limitsStart = at
        const flags = byte()
        const min = u32()
        const max = flags & HAS_MAX ? u32() : null
        return { sectionStart, sectionBody, sectionEnd, limitsStart, limitsEnd: at, flags, min, max }
      } else {
        throw new WasmPatchError(`unknown import kind ${kind}`)
      }
    }
    return null
  }
  return null
}
