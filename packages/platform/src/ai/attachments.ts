/**
 * AI attachments (spec 4.3, 8): checks what a Function attaches and turns it into the AI
 * SDK's file parts. Up to four PNG, JPEG, WEBP or non-animated GIF images (15 MiB each),
 * or one managed PDF (at most 20 pages and 20 MiB); 20 MiB together; no remote URLs; PDFs
 * only as managed file references. A managed file that cannot fit in what the 20 MiB leave
 * is never read whole: its first bytes tell what it is, and so which limit it breaks
 * (AI_PDF_TOO_LARGE, AI_IMAGE_TOO_LARGE, or AI_ATTACHMENTS_TOO_LARGE for one that fits its
 * own limit but not beside the others). Types, animation and page counts come from the
 * bytes through maintained libraries (`file-type`, `sharp` in animation.ts, `pdf-lib`),
 * never from names or declared types. Each violation has its own code (lib/errors.ts,
 * docs/api.md). Inline images too large for one context call are staged on the platform
 * first (staging.ts); `checkStagedImage` refuses one by these same limits before a byte of
 * it is stored, and the call is then checked here like any other.
 */
import { fileTypeFromBuffer } from 'file-type'
import { PDFDocument } from 'pdf-lib'
import type { FilePart } from 'ai'
import { notImplemented, ServiceError } from '../lib/errors.ts'
import { frameCount, UnreadableImageError } from './animation.ts'

const MIB = 1024 * 1024
export const ATTACHMENT_LIMITS = Object.freeze({
  images: 4,
  imageBytes: 15 * MIB,
  pdfBytes: 20 * MIB,
  pdfPages: 20,
  totalBytes: 20 * MIB,
})

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/webp', 'image/gif'])
/** How much of a file too large to read is read to tell its type (what `file-type` asks for). */
export const HEAD_BYTES = 4100

/**
 * A managed file as the files feature gives it (files/index.ts `readManagedFile`): its bytes,
 * or, when it is over `maxBytes`, its size and first `headBytes` bytes only.
 */
export type ManagedFileBytes =
  | {
    readonly tooLarge?: false
    readonly data: Uint8Array
    readonly contentType: string
    readonly name: string
    readonly size: number
    readonly generation?: unknown
  }
  | { readonly tooLarge: true; readonly head: Uint8Array; readonly size: number }

/**
 * Reads a managed file under the invocation's authority; one over `maxBytes` is answered by
 * its first `headBytes` bytes only. Absent until the files feature is wired.
 */
export type ReadAttachmentFile = ((ref: string, options: { readonly maxBytes: number; readonly headBytes: number }) => Promise<ManagedFileBytes>) | undefined

interface Loaded {
  readonly index: number
  readonly data: Uint8Array
  readonly managed: boolean
  readonly declared: string | null
  readonly name: string | null
  readonly detail: 'original' | null
}

/**
 * Checks `attachments` (the call's raw value) and returns the file parts to send.
 *
 * @example
 * const parts = await checkAttachments([{ type: 'file', file: ref, detail: 'original' }], readFile)
 */
export async function checkAttachments(attachments: unknown, readFile: ReadAttachmentFile): Promise<FilePart[]> {
  if (attachments === undefined) return []
  if (!Array.isArray(attachments)) throw invalid('attachments must be an array')
  if (attachments.length > ATTACHMENT_LIMITS.images) throw tooMany(attachments.length)
  const shapes = attachments.map((attachment, index) => shapeOf(attachment, index))
  // Managed files are read within what the inline bytes leave of the 20 MiB, so a larger one is never read.
  let budget = ATTACHMENT_LIMITS.totalBytes
  for (const shape of shapes) if (shape.kind === 'inline') budget -= shape.loaded.data.byteLength
  const loaded: Loaded[] = []
  for (const shape of shapes) {
    if (shape.kind === 'inline') {
      loaded.push(shape.loaded)
      continue
    }
    const item = await loadManaged(shape, readFile, { maxBytes: Math.max(budget, 0), count: shapes.length })
    budget -= item.data.byteLength
    loaded.push(item)
  }

  const parts: FilePart[] = []
  let total = 0
  let pdfs = 0
  for (const item of loaded) {
    const size = item.data.byteLength
    const detected = await detectType(item.data)
    if (detected === 'application/pdf') {
      if (!item.managed) {
        throw new ServiceError('AI_PDF_NOT_MANAGED', `Attachment ${item.index} is a PDF; attach PDFs as managed files ({ type: 'file', file: <file ref> })`, {
          details: { index: item.index },
        })
      }
      const pages = await pdfPageCount(item)
      if (pages > ATTACHMENT_LIMITS.pdfPages) {
        throw new ServiceError('AI_PDF_TOO_MANY_PAGES', `Attachment ${item.index} is a PDF of ${pages} pages; at most ${ATTACHMENT_LIMITS.pdfPages} are allowed`, {
          details: { index: item.index, pages, limit: ATTACHMENT_LIMITS.pdfPages },
        })
      }
      if (size > ATTACHMENT_LIMITS.pdfBytes) throw pdfTooLarge(item.index, size)
      pdfs += 1
    } else if (detected !== null && IMAGE_TYPES.has(detected)) {
      if (item.declared !== null && item.declared !== detected) {
        throw new ServiceError('AI_ATTACHMENT_TYPE_MISMATCH', `Attachment ${item.index} says ${item.declared} but its bytes are ${detected}`, {
          details: { index: item.index, declared: item.declared, detected },
        })
      }
      if (size > ATTACHMENT_LIMITS.imageBytes) throw imageTooLarge(item.index, size)
      if ((detected === 'image/gif' || detected === 'image/webp') && (await frames(item, detected)) > 1) throw animated(item.index, detected)
    } else if (detected === 'image/apng') {
      throw animated(item.index, 'image/apng')
    } else {
      throw unsupported(item.index, detected)
    }
    total += size
    parts.push({
      type: 'file',
      data: item.data,
      mediaType: detected,
      ...(item.name !== null && detected === 'application/pdf' ? { filename: item.name } : {}),
      // OpenAI's chat format has `detail` for images only (image_url.detail); a PDF part has no such field.
      ...(item.detail !== null && detected !== 'application/pdf' ? { providerOptions: { openaiCompatible: { detail: item.detail } } } : {}),
    })
  }
  if (pdfs > 0 && loaded.length > 1) throw pdfNotAlone(loaded.length)
  if (total > ATTACHMENT_LIMITS.totalBytes) throw tooLargeAltogether(total)
  return parts
}

/**
 * What the worker declares before it stages an inline image's bytes on the platform
 * (staging.ts): the image's place in its call, size and declared type, how many attachments
 * the call has and how many bytes its inline images hold together.
 */
export interface StagedImage {
  readonly index: number
  readonly size: number
  readonly contentType: string
  readonly count: number
  readonly inlineBytes: number
}

/**
 * Checks an inline image before a byte of it is staged, by the rules `checkAttachments`
 * applies to the whole call (the same limits and codes), and against what the invocation
 * already holds staged (`held`), which never passes four images or 20 MiB. The call itself
 * is checked again by `checkAttachments` once its staged bytes are in place, so the worker's
 * declaration only lets a refusal come early; it never lets anything through.
 *
 * @example
 * const image = checkStagedImage({ index: 0, size, contentType: 'image/png', count: 1, inlineBytes: size }, { count: 0, bytes: 0 })
 */
export function checkStagedImage(value: unknown, held: { readonly count: number; readonly bytes: number }): StagedImage {
  const record = typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
  const { index, size, contentType, count, inlineBytes } = record
  const whole = (n: unknown, least: number): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= least
  if (!whole(count, 1) || !whole(index, 0) || index >= count || !whole(size, 1) || !whole(inlineBytes, size)) {
    throw invalid('a staged attachment needs index, size, count and inlineBytes')
  }
  if (typeof contentType !== 'string') throw invalid(`attachment ${index} needs a contentType`, index)
  if (count > ATTACHMENT_LIMITS.images) throw tooMany(count)
  checkDeclaredType(index, contentType)
  if (size > ATTACHMENT_LIMITS.imageBytes) throw imageTooLarge(index, size)
  if (inlineBytes > ATTACHMENT_LIMITS.totalBytes) throw tooLargeAltogether(inlineBytes)
  if (held.count + 1 > ATTACHMENT_LIMITS.images) throw tooMany(held.count + 1)
  if (held.bytes + size > ATTACHMENT_LIMITS.totalBytes) throw tooLargeTogether(index, size)
  return { index, size, contentType, count, inlineBytes }
}

type Shape =
  | { readonly kind: 'inline'; readonly loaded: Loaded }
  | { readonly kind: 'managed'; readonly index: number; readonly ref: string; readonly detail: 'original' | null }

function shapeOf(attachment: unknown, index: number): Shape {
  if (typeof attachment !== 'object' || attachment === null || Array.isArray(attachment)) {
    throw invalid(`attachment ${index} must be an object`, index)
  }
  const record = attachment as Record<string, unknown>
  if (typeof record.url === 'string' || typeof record.image_url === 'object' || record.type === 'url' || record.type === 'image_url') {
    throw urlRefused(index)
  }
  if (record.type === 'image') {
    for (const key of Object.keys(record)) {
      if (!['type', 'data', 'contentType'].includes(key)) throw invalid(`attachment ${index} has an unknown field "${key.slice(0, 64)}"`, index)
    }
    if (typeof record.data === 'string' && looksLikeUrl(record.data)) throw urlRefused(index)
    if (!(record.data instanceof Uint8Array)) throw invalid(`attachment ${index} needs data as bytes (a Uint8Array)`, index)
    if (typeof record.contentType !== 'string') throw invalid(`attachment ${index} needs a contentType`, index)
    checkDeclaredType(index, record.contentType)
    return { kind: 'inline', loaded: { index, data: record.data, managed: false, declared: record.contentType, name: null, detail: null } }
  }
  if (record.type === 'file') {
    for (const key of Object.keys(record)) {
      if (!['type', 'file', 'detail'].includes(key)) throw invalid(`attachment ${index} has an unknown field "${key.slice(0, 64)}"`, index)
    }
    if (typeof record.file !== 'string' || record.file.length === 0) throw invalid(`attachment ${index} needs file: a managed file reference`, index)
    if (looksLikeUrl(record.file)) throw urlRefused(index)
    if (record.detail !== undefined && record.detail !== 'original') throw invalid(`attachment ${index}: detail may only be 'original'`, index)
    return { kind: 'managed', index, ref: record.file, detail: record.detail === 'original' ? 'original' : null }
  }
  throw invalid(`attachment ${index} must have type 'file' or 'image'`, index)
}

/** An inline image's declared type: PDFs go as managed files, and only the four image types are taken. */
function checkDeclaredType(index: number, contentType: string): void {
  if (contentType === 'application/pdf') {
    throw new ServiceError('AI_PDF_NOT_MANAGED', `Attachment ${index} is a PDF; attach PDFs as managed files ({ type: 'file', file: <file ref> })`, { details: { index } })
  }
  if (!IMAGE_TYPES.has(contentType)) {
    throw new ServiceError('AI_ATTACHMENT_TYPE_UNSUPPORTED', `Attachment ${index} says ${contentType.slice(0, 100)}; attach PNG, JPEG, WEBP or GIF images`, {
      details: { index, declared: contentType.slice(0, 100) },
    })
  }
}

async function loadManaged(
  shape: Extract<Shape, { kind: 'managed' }>,
  readFile: ReadAttachmentFile,
  options: { readonly maxBytes: number; readonly count: number },
): Promise<Loaded> {
  if (readFile === undefined) throw notImplemented('ctx.files (managed file attachments)')
  const file = await readFile(shape.ref, { maxBytes: options.maxBytes, headBytes: HEAD_BYTES })
  if (file.tooLarge === true) throw await tooLargeToRead(shape.index, file, options.count)
  if (file.data.byteLength > options.maxBytes) throw tooLargeTogether(shape.index, file.data.byteLength)
  return { index: shape.index, data: file.data, managed: true, declared: null, name: file.name, detail: shape.detail }
}

/**
 * The refusal of a managed file too large for what the 20 MiB leave, named from its first
 * bytes: the limit of its own kind when it breaks that, else the PDF's company or the total.
 */
async function tooLargeToRead(index: number, file: { readonly head: Uint8Array; readonly size: number }, count: number): Promise<ServiceError> {
  const detected = await detectType(file.head)
  if (detected === 'application/pdf') {
    if (file.size > ATTACHMENT_LIMITS.pdfBytes) return pdfTooLarge(index, file.size)
    if (count > 1) return pdfNotAlone(count)
  } else if (detected !== null && (IMAGE_TYPES.has(detected) || detected === 'image/apng')) {
    if (file.size > ATTACHMENT_LIMITS.imageBytes) return imageTooLarge(index, file.size)
  } else {
    return unsupported(index, detected)
  }
  return tooLargeTogether(index, file.size)
}

/** A GIF's or WEBP's frame count; an image libvips cannot read is AI_ATTACHMENT_INVALID. */
async function frames(item: Loaded, type: string): Promise<number> {
  try {
    return await frameCount(item.data)
  } catch (error) {
    if (!(error instanceof UnreadableImageError)) throw error
    throw new ServiceError('AI_ATTACHMENT_INVALID', `Attachment ${item.index} is a ${type} image that cannot be read`, {
      details: { index: item.index, detected: type },
      cause: error,
    })
  }
}

async function detectType(data: Uint8Array): Promise<string | null> {
  const result = await fileTypeFromBuffer(data)
  return result?.mime ?? null
}

async function pdfPageCount(item: Loaded): Promise<number> {
  try {
    const document = await PDFDocument.load(item.data, { ignoreEncryption: true, updateMetadata: false, throwOnInvalidObject: false })
    return document.getPageCount()
  } catch (error) {
    throw new ServiceError('AI_PDF_INVALID', `Attachment ${item.index} is not a PDF that can be read`, { details: { index: item.index }, cause: error })
  }
}

function looksLikeUrl(value: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) || /^data:/i.test(value)
}

function tooMany(count: number): ServiceError {
  return new ServiceError('AI_ATTACHMENTS_TOO_MANY', `At most ${ATTACHMENT_LIMITS.images} images (or one PDF) may be attached, got ${count}`, {
    details: { limit: ATTACHMENT_LIMITS.images, count },
  })
}

function tooLargeAltogether(total: number): ServiceError {
  return new ServiceError('AI_ATTACHMENTS_TOO_LARGE', `The attachments hold ${total} bytes together; at most ${ATTACHMENT_LIMITS.totalBytes} (20 MiB) are allowed`, {
    details: { size: total, limit: ATTACHMENT_LIMITS.totalBytes },
  })
}

/** An attachment (a managed file, or staged inline bytes) that fits its own limit but not beside the others. */
function tooLargeTogether(index: number, size: number): ServiceError {
  return new ServiceError('AI_ATTACHMENTS_TOO_LARGE', `Attachment ${index} does not fit: all attachments together may hold at most ${ATTACHMENT_LIMITS.totalBytes} bytes (20 MiB)`, {
    details: { index, size, limit: ATTACHMENT_LIMITS.totalBytes },
  })
}

function pdfTooLarge(index: number, size: number): ServiceError {
  return new ServiceError('AI_PDF_TOO_LARGE', `Attachment ${index} is a PDF of ${size} bytes; a PDF may have at most ${ATTACHMENT_LIMITS.pdfBytes} (20 MiB)`, {
    details: { index, size, limit: ATTACHMENT_LIMITS.pdfBytes },
  })
}

function imageTooLarge(index: number, size: number): ServiceError {
  return new ServiceError('AI_IMAGE_TOO_LARGE', `Attachment ${index} is an image of ${size} bytes; an image may have at most ${ATTACHMENT_LIMITS.imageBytes} (15 MiB)`, {
    details: { index, size, limit: ATTACHMENT_LIMITS.imageBytes },
  })
}

function pdfNotAlone(count: number): ServiceError {
  return new ServiceError('AI_PDF_NOT_ALONE', 'A PDF is attached alone: attach up to four images, or one PDF', { details: { count } })
}

function unsupported(index: number, detected: string | null): ServiceError {
  return new ServiceError('AI_ATTACHMENT_TYPE_UNSUPPORTED', `Attachment ${index} is ${detected ?? 'of an unknown type'}; attach PNG, JPEG, WEBP or GIF images, or one managed PDF`, {
    details: { index, detected },
  })
}

function urlRefused(index: number): ServiceError {
  return new ServiceError('AI_ATTACHMENT_URL_NOT_ACCEPTED', `Attachment ${index} is a URL; remote images are not accepted: attach bytes or a managed file`, {
    details: { index },
  })
}

function animated(index: number, type: string): ServiceError {
  return new ServiceError('AI_ATTACHMENT_ANIMATED', `Attachment ${index} is an animated image (${type}); attach a still image`, { details: { index, detected: type } })
}

function invalid(message: string, index?: number): ServiceError {
  return new ServiceError('AI_ATTACHMENT_INVALID', message, index === undefined ? {} : { details: { index } })
}
