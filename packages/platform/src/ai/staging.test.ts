// Staged inline image bytes (staging.ts) against a worker that does not keep to the rules:
// each image is checked with the spec's codes before a byte of it is stored, an invocation
// never holds more than four images or 20 MiB however it declares them, pieces cannot pass
// the declared size, a call may refer only to its own invocation's complete images, and
// everything is given back on release and when the invocation ends. Through createAi, a
// refused call gives its staged images back as an answered one does. (The Deno Functions in
// inline-attachments.test.ts stage for real.)
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { silentLogger } from '../lib/logger.ts'
import { createAi } from './ai.ts'
import { createAttachmentStaging } from './staging.ts'
import { jpeg, png } from './test-fixtures.ts'

const MIB = 1024 * 1024

function invocation() {
  const abort = new AbortController()
  return { call: { invocation: {}, signal: abort.signal }, end: () => abort.abort() }
}

function image(size: number, index = 0, rest: { count?: number; inlineBytes?: number; contentType?: string } = {}) {
  return { index, size, contentType: rest.contentType ?? 'image/png', count: rest.count ?? 1, inlineBytes: rest.inlineBytes ?? size }
}

describe('staged inline image bytes', () => {
  test('an image is refused with the spec code before a byte of it is stored', () => {
    const staging = createAttachmentStaging()
    const { call } = invocation()
    const cases: Array<[unknown, string]> = [
      [image(15 * MIB + 1), 'AI_IMAGE_TOO_LARGE'],
      [image(MIB, 0, { count: 5, inlineBytes: 5 * MIB }), 'AI_ATTACHMENTS_TOO_MANY'],
      [image(MIB, 0, { count: 2, inlineBytes: 20 * MIB + 1 }), 'AI_ATTACHMENTS_TOO_LARGE'],
      [image(MIB, 0, { contentType: 'application/pdf' }), 'AI_PDF_NOT_MANAGED'],
      [image(MIB, 0, { contentType: 'image/tiff' }), 'AI_ATTACHMENT_TYPE_UNSUPPORTED'],
      [image(MIB, 1), 'AI_ATTACHMENT_INVALID'],
      [{ ...image(MIB), inlineBytes: 10 }, 'AI_ATTACHMENT_INVALID'],
      ['not a declaration', 'AI_ATTACHMENT_INVALID'],
      [{ ...image(MIB), contentType: undefined }, 'AI_ATTACHMENT_INVALID'],
    ]
    for (const [declared, code] of cases) {
      assert.throws(() => staging.begin(call, declared), { code }, JSON.stringify(declared))
      assert.equal(staging.bytes(), 0)
    }
  })

  test('an invocation holds at most four images and 20 MiB, whatever each declaration says', () => {
    const staging = createAttachmentStaging()
    const first = invocation()
    for (let index = 0; index < 4; index += 1) staging.begin(first.call, image(5 * MIB))
    assert.equal(staging.bytes(), 20 * MIB)
    assert.throws(() => staging.begin(first.call, image(1)), { code: 'AI_ATTACHMENTS_TOO_MANY' })

    const second = invocation()
    staging.begin(second.call, image(15 * MIB))
    assert.throws(() => staging.begin(second.call, image(5 * MIB + 1)), { code: 'AI_ATTACHMENTS_TOO_LARGE', details: { index: 0, size: 5 * MIB + 1, limit: 20 * MIB } })
    assert.equal(staging.bytes(), 35 * MIB, 'refusals reserve nothing; each invocation has its own room')
    first.end()
    second.end()
    assert.equal(staging.bytes(), 0)
  })

  test('the process holds at most maxTotalBytes over all invocations: beyond, begin is refused AI_ATTACHMENTS_BUSY (503), and room comes back as invocations end', () => {
    const staging = createAttachmentStaging({ maxTotalBytes: 25 * MIB })
    const first = invocation()
    const second = invocation()
    staging.begin(first.call, image(15 * MIB))
    assert.throws(() => staging.begin(second.call, image(15 * MIB)), (error: any) => error.code === 'AI_ATTACHMENTS_BUSY' && error.status === 503)
    assert.equal(staging.bytes(), 15 * MIB, 'the refused image reserved nothing')
    staging.begin(second.call, image(10 * MIB))
    first.end()
    assert.equal(staging.bytes(), 10 * MIB)
    staging.begin(invocation().call, image(15 * MIB))
    assert.equal(staging.bytes(), 25 * MIB)
  })

  test('pieces fill the declared size and no more; a call gets the bytes only once they are complete and only in its own invocation', () => {
    const staging = createAttachmentStaging()
    const own = invocation()
    const other = invocation()
    const bytes = png({ padTo: 1000 })
    const { id } = staging.begin(own.call, image(1000))
    staging.chunk(own.call, id, bytes.subarray(0, 600))
    assert.throws(() => staging.resolve(own.call, [{ type: 'image', staged: id, contentType: 'image/png' }], []), { code: 'AI_ATTACHMENT_INVALID', message: /600 of 1000/ })
    assert.throws(() => staging.chunk(own.call, id, bytes.subarray(0, 401)), { code: 'AI_ATTACHMENT_INVALID' })
    assert.throws(() => staging.chunk(other.call, id, bytes.subarray(600)), { code: 'AI_ATTACHMENT_INVALID' })
    staging.chunk(own.call, id, bytes.subarray(600))

    assert.throws(() => staging.resolve(other.call, [{ type: 'image', staged: id, contentType: 'image/png' }], []), { code: 'AI_ATTACHMENT_INVALID', message: /does not hold/ })
    assert.throws(() => staging.resolve(own.call, [{ type: 'image', staged: id, contentType: 'image/png', data: 'x' }], []), { code: 'AI_ATTACHMENT_INVALID', message: /unknown field "data"/ })
    const used: string[] = []
    const resolved = staging.resolve(own.call, [{ type: 'file', file: 'ref' }, { type: 'image', staged: id, contentType: 'image/png' }], used) as unknown[]
    assert.deepEqual(resolved, [{ type: 'file', file: 'ref' }, { type: 'image', data: bytes, contentType: 'image/png' }])
    assert.deepEqual(used, [id])

    staging.release(own.call.invocation, [id, 'unknown', 7])
    assert.equal(staging.bytes(), 0)
    own.end()
    other.end()
  })

  test('an invocation that ends gives back everything it staged, complete or not, and stages nothing after', () => {
    const staging = createAttachmentStaging()
    const { call, end } = invocation()
    const { id } = staging.begin(call, image(3 * MIB))
    staging.chunk(call, id, new Uint8Array(MIB))
    staging.begin(call, image(2 * MIB))
    assert.equal(staging.bytes(), 5 * MIB)
    end()
    assert.equal(staging.bytes(), 0)
    assert.throws(() => staging.begin(call, image(1)), { code: 'AI_ATTACHMENT_INVALID' })
    assert.throws(() => staging.chunk(call, id, new Uint8Array(1)), { code: 'AI_ATTACHMENT_INVALID' })
    assert.equal(staging.bytes(), 0)
  })

  test('through ctx.ai, a call refused for its staged image (bytes of another type) gives the image back before the provider is asked', async () => {
    // The provider address is never dialled: the attachment check refuses first.
    const ai = createAi({ settings: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: null, textModel: 'm', imageModel: null, timeoutMs: 1000 }, logger: silentLogger })
    const { call: base, end } = invocation()
    const call = { ...base, appId: 'app', devName: '', identity: null, user: null, job: null, args: [] as unknown[] }
    const data = jpeg()
    const declared = image(data.byteLength)
    const { id } = await ai.answer({ ...call, method: 'attachment.begin', args: [declared] }) as { id: string }
    await ai.answer({ ...call, method: 'attachment.chunk', args: [id, data] })
    assert.equal(ai.stagedBytes(), data.byteLength)
    await assert.rejects(
      ai.answer({ ...call, method: 'generateText', args: [{ prompt: 'Read it', attachments: [{ type: 'image', staged: id, contentType: 'image/png' }] }] }),
      { code: 'AI_ATTACHMENT_TYPE_MISMATCH' },
    )
    assert.equal(ai.stagedBytes(), 0)
    end()
  })
})
