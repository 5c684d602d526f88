// AI attachment checks (spec 4.3, 8) on real bytes: each limit and each refusal has its own
// code; types, animation and page counts come from the bytes, never from names or declared
// types. Managed files come through a stand-in for the files feature's readManagedFile
// (the Deno tests in ai.test.ts and managed-attachments.test.ts cover the same checks
// through a real Function and real storage).
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ServiceError } from '../lib/errors.ts'
import { checkAttachments, type ManagedFileBytes } from './attachments.ts'
import { gif, jpeg, pdf, png, webp } from './test-fixtures.ts'

const MIB = 1024 * 1024

/** Files too large to read (over readManagedFile's maxBytes: only their first headBytes were read). */
const refusedReads: string[] = []

function managed(files: Record<string, Uint8Array>, names: Record<string, string> = {}) {
  return async (ref: string, options: { maxBytes: number; headBytes: number }): Promise<ManagedFileBytes> => {
    const data = files[ref]
    if (data === undefined) throw new ServiceError('NOT_FOUND', 'no such file')
    if (data.length > options.maxBytes) {
      refusedReads.push(ref)
      return { tooLarge: true, head: data.slice(0, options.headBytes), size: data.length }
    }
    // A misleading name and stored type: neither may decide anything.
    return { data, contentType: 'image/png', name: names[ref] ?? 'photo.png', size: data.length, generation: 1 }
  }
}

async function refused(attachments: unknown, code: string, files: Record<string, Uint8Array> = {}): Promise<ServiceError> {
  try {
    await checkAttachments(attachments, managed(files))
  } catch (error) {
    assert.ok(error instanceof ServiceError, String(error))
    assert.equal(error.code, code, error.message)
    return error
  }
  assert.fail(`expected ${code}`)
}

describe('AI attachments', () => {
  test('PNG, JPEG, still WEBP and still GIF images are accepted with the type their bytes have', async () => {
    const parts = await checkAttachments([
      { type: 'image', data: png(), contentType: 'image/png' },
      { type: 'image', data: jpeg(), contentType: 'image/jpeg' },
      { type: 'image', data: webp(), contentType: 'image/webp' },
      { type: 'file', file: 'ref-gif' },
    ], managed({ 'ref-gif': gif(1) }))
    assert.deepEqual(parts.map((part) => part.mediaType), ['image/png', 'image/jpeg', 'image/webp', 'image/gif'])
  })

  test('detail original is kept on a managed image for the provider', async () => {
    const [part] = await checkAttachments([{ type: 'file', file: 'a', detail: 'original' }], managed({ a: png() }))
    assert.deepEqual(part!.providerOptions, { openaiCompatible: { detail: 'original' } })
  })

  test('a fifth image is AI_ATTACHMENTS_TOO_MANY', async () => {
    const image = { type: 'image', data: png(), contentType: 'image/png' }
    await refused([image, image, image, image, image], 'AI_ATTACHMENTS_TOO_MANY')
  })

  test('an image over 15 MiB is AI_IMAGE_TOO_LARGE; exactly 15 MiB passes', async () => {
    assert.equal((await checkAttachments([{ type: 'file', file: 'a' }], managed({ a: png({ padTo: 15 * MIB }) }))).length, 1)
    const error = await refused([{ type: 'file', file: 'a' }], 'AI_IMAGE_TOO_LARGE', { a: png({ padTo: 15 * MIB + 1 }) })
    assert.deepEqual(error.details, { index: 0, size: 15 * MIB + 1, limit: 15 * MIB })
  })

  test('images over 20 MiB together are AI_ATTACHMENTS_TOO_LARGE, the file that does not fit never read', async () => {
    const files = { a: png({ padTo: 10 * MIB }), b: png({ padTo: 10 * MIB + 1 }) }
    const error = await refused([{ type: 'file', file: 'a' }, { type: 'file', file: 'b' }], 'AI_ATTACHMENTS_TOO_LARGE', files)
    assert.deepEqual(error.details, { index: 1, size: 10 * MIB + 1, limit: 20 * MIB })
    assert.deepEqual(refusedReads.splice(0), ['b'])
    // Exactly 20 MiB together passes.
    const fits = { a: png({ padTo: 10 * MIB }), b: png({ padTo: 10 * MIB }) }
    assert.equal((await checkAttachments([{ type: 'file', file: 'a' }, { type: 'file', file: 'b' }], managed(fits))).length, 2)
  })

  test('animated GIF, animated WEBP and APNG are AI_ATTACHMENT_ANIMATED', async () => {
    await refused([{ type: 'image', data: gif(2), contentType: 'image/gif' }], 'AI_ATTACHMENT_ANIMATED')
    await refused([{ type: 'image', data: webp(true), contentType: 'image/webp' }], 'AI_ATTACHMENT_ANIMATED')
    await refused([{ type: 'file', file: 'a' }], 'AI_ATTACHMENT_ANIMATED', { a: png({ animated: true }) })
  })

  test('a GIF or WEBP whose frames cannot be read is AI_ATTACHMENT_INVALID', async () => {
    const broken = new TextEncoder().encode('GIF89a and then nothing a GIF decoder can read')
    const error = await refused([{ type: 'image', data: broken, contentType: 'image/gif' }], 'AI_ATTACHMENT_INVALID')
    assert.deepEqual(error.details, { index: 0, detected: 'image/gif' })
  })

  test('a declared type other than the bytes is AI_ATTACHMENT_TYPE_MISMATCH', async () => {
    const error = await refused([{ type: 'image', data: png(), contentType: 'image/jpeg' }], 'AI_ATTACHMENT_TYPE_MISMATCH')
    assert.deepEqual(error.details, { index: 0, declared: 'image/jpeg', detected: 'image/png' })
  })

  test('bytes of another type, whatever the file is called, are AI_ATTACHMENT_TYPE_UNSUPPORTED', async () => {
    await refused([{ type: 'file', file: 'a' }], 'AI_ATTACHMENT_TYPE_UNSUPPORTED', { a: new TextEncoder().encode('just text, named photo.png') })
    await refused([{ type: 'image', data: png(), contentType: 'image/bmp' }], 'AI_ATTACHMENT_TYPE_UNSUPPORTED')
  })

  test('remote URLs are AI_ATTACHMENT_URL_NOT_ACCEPTED', async () => {
    await refused([{ type: 'image', data: 'https://example.com/cat.png', contentType: 'image/png' }], 'AI_ATTACHMENT_URL_NOT_ACCEPTED')
    await refused([{ type: 'file', file: 'https://example.com/receipt.pdf' }], 'AI_ATTACHMENT_URL_NOT_ACCEPTED')
    await refused([{ type: 'image', url: 'https://example.com/cat.png' }], 'AI_ATTACHMENT_URL_NOT_ACCEPTED')
  })

  test('a managed PDF of 20 pages passes with its name; 21 pages is AI_PDF_TOO_MANY_PAGES', async () => {
    const files = { ok: await pdf(20), long: await pdf(21) }
    const parts = await checkAttachments([{ type: 'file', file: 'ok' }], managed(files, { ok: 'receipt.pdf' }))
    assert.equal(parts[0]!.mediaType, 'application/pdf')
    assert.equal(parts[0]!.filename, 'receipt.pdf')
    const error = await refused([{ type: 'file', file: 'long' }], 'AI_PDF_TOO_MANY_PAGES', files)
    assert.deepEqual(error.details, { index: 0, pages: 21, limit: 20 })
  })

  test('a managed PDF over 20 MiB is AI_PDF_TOO_LARGE without being read whole; exactly 20 MiB passes', async () => {
    assert.equal((await checkAttachments([{ type: 'file', file: 'a' }], managed({ a: await pdf(1, { padTo: 20 * MIB }) }))).length, 1)
    const error = await refused([{ type: 'file', file: 'a' }], 'AI_PDF_TOO_LARGE', { a: await pdf(1, { padTo: 20 * MIB + 1 }) })
    assert.deepEqual(error.details, { index: 0, size: 20 * MIB + 1, limit: 20 * MIB })
    assert.equal(error.status, 413)
    assert.deepEqual(refusedReads.splice(0), ['a'])
  })

  test('a managed file too large to read is refused by what its first bytes are', async () => {
    // An image over 15 MiB that would not fit the 20 MiB either: its own limit.
    const image = await refused([{ type: 'file', file: 'a' }], 'AI_IMAGE_TOO_LARGE', { a: png({ padTo: 25 * MIB }) })
    assert.deepEqual(image.details, { index: 0, size: 25 * MIB, limit: 15 * MIB })
    // A PDF within its 20 MiB that does not fit beside an image: a PDF goes alone.
    const inline = { type: 'image', data: png({ padTo: 2 * MIB }), contentType: 'image/png' }
    await refused([inline, { type: 'file', file: 'b' }], 'AI_PDF_NOT_ALONE', { b: await pdf(1, { padTo: 19 * MIB }) })
    // Bytes of no accepted type: the type, not the size.
    await refused([{ type: 'file', file: 'c' }], 'AI_ATTACHMENT_TYPE_UNSUPPORTED', { c: new Uint8Array(21 * MIB).fill(0x41) })
    assert.deepEqual(refusedReads.splice(0), ['a', 'b', 'c'])
  })

  test('a PDF as inline bytes is AI_PDF_NOT_MANAGED, however it is declared', async () => {
    const bytes = await pdf(1)
    await refused([{ type: 'image', data: bytes, contentType: 'image/png' }], 'AI_PDF_NOT_MANAGED')
    await refused([{ type: 'image', data: bytes, contentType: 'application/pdf' }], 'AI_PDF_NOT_MANAGED')
  })

  test('a PDF beside another attachment is AI_PDF_NOT_ALONE', async () => {
    await refused([{ type: 'file', file: 'a' }, { type: 'image', data: png(), contentType: 'image/png' }], 'AI_PDF_NOT_ALONE', { a: await pdf(1) })
  })

  test('a PDF that cannot be read is AI_PDF_INVALID', async () => {
    await refused([{ type: 'file', file: 'a' }], 'AI_PDF_INVALID', { a: new TextEncoder().encode('%PDF-1.7\nnot really a PDF at all') })
  })

  test('malformed attachments are AI_ATTACHMENT_INVALID', async () => {
    await refused('not a list', 'AI_ATTACHMENT_INVALID')
    await refused([null], 'AI_ATTACHMENT_INVALID')
    await refused([{ type: 'audio' }], 'AI_ATTACHMENT_INVALID')
    await refused([{ type: 'image', data: 'aGVsbG8=', contentType: 'image/png' }], 'AI_ATTACHMENT_INVALID')
    await refused([{ type: 'file', file: 'a', detail: 'high' }], 'AI_ATTACHMENT_INVALID')
    await refused([{ type: 'file', file: 'a', extra: 1 }], 'AI_ATTACHMENT_INVALID')
  })

  test('without the files feature a managed attachment is NOT_IMPLEMENTED naming it', async () => {
    await assert.rejects(checkAttachments([{ type: 'file', file: 'a' }], undefined), (error: ServiceError) => {
      assert.equal(error.code, 'NOT_IMPLEMENTED')
      assert.match(error.message, /ctx\.files/)
      return true
    })
  })
})
