// ctx.ai attachments that are managed files, end to end on each storage (local disk, and S3
// against s3rver): real Deno Functions upload with ctx.files and attach the reference; the
// platform reads the bytes through the files feature's readManagedFile under the
// invocation's own authority. The exact provider request for an image (detail: original)
// and a PDF; page, size and animation limits on stored bytes (a PDF over 20 MiB, four images
// over 20 MiB together); a file that cannot fit refused unread; another person's and another
// app's references refused before any provider request.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { manifest, startHarness, type Harness } from '../../test/harness.ts'
import { signIn, type SignedIn } from '../../test/data-fixture.ts'
import { deployApp } from '../../test/integration-fixture.ts'
import { startS3Server, type TestS3Server } from '../../test/s3-server.ts'
import { createS3Storage } from '../files/index.ts'
import { startProviderDouble, type ProviderDouble } from './test-provider.ts'
import { base64, gif, pdf, png } from './test-fixtures.ts'

const MIB = 1024 * 1024

const ATTACH = `
import { defineFunction, array, boolean, number, object, string } from '@service/server'
const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
export default defineFunction({
  input: object({ action: string(), base64: string(), name: string(), contentType: string(), padTo: number(), ref: string(), refs: array(string()), detail: boolean() }),
  async handler({ input, files, ai }) {
    if (input.action === 'upload') {
      let data = bytes(input.base64)
      if (input.padTo > data.length) {
        const padded = new Uint8Array(input.padTo)
        padded.set(data)
        data = padded
      }
      return { ref: await files.upload({ data, name: input.name, contentType: input.contentType }) }
    }
    try {
      const refs = input.refs.length > 0 ? input.refs : [input.ref]
      const text = await ai.generateText({ prompt: 'Read this.', attachments: refs.map((ref) => ({ type: 'file', file: ref, ...(input.detail ? { detail: 'original' } : {}) })) })
      return { text }
    } catch (error) {
      return { error: { code: error.code ?? null, status: error.status ?? null, message: error.message } }
    }
  },
})`

const FUNCTIONS = `functions:
  - name: attach
    entrypoint: functions/attach.ts
    access: public
`

interface Storage {
  readonly name: string
  open(): Promise<{ files?: Parameters<typeof startHarness>[1] extends infer O ? O extends { files?: infer F } ? F : never : never; close(): Promise<void> }>
}

const STORAGES: Storage[] = [
  { name: 'local disk', open: async () => ({ close: async () => {} }) },
  {
    name: 'S3 (s3rver)',
    open: async () => {
      const server: TestS3Server = await startS3Server()
      return { files: { storage: createS3Storage(server.options) }, close: () => server.close() }
    },
  },
]

for (const storage of STORAGES) {
  describe(`ctx.ai with managed file attachments on ${storage.name} (${backend})`, () => {
    let h: Harness
    let double: ProviderDouble
    let closeStorage: () => Promise<void>
    let ann: SignedIn
    let bob: SignedIn
    let annElsewhere: SignedIn

    before(async () => {
      double = await startProviderDouble()
      const opened = await storage.open()
      closeStorage = opened.close
      h = await startHarness(undefined, {
        ai: { baseUrl: double.baseUrl, apiKey: 'sk-managed-test', textModel: 'vision-model', imageModel: null, timeoutMs: 5000 },
        ...(opened.files ? { files: opened.files } : {}),
      })
      const owner = await h.createOwner('owner@ai-files.test')
      for (const slug of ['receipts', 'elsewhere']) {
        assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug, visibility: 'public' } })).status, 201)
        await deployApp(h, owner.token, slug, { 'service.yaml': manifest(slug, FUNCTIONS), 'functions/attach.ts': ATTACH })
      }
      ann = await signIn(h, 'receipts', 'ann@ai-files.test')
      bob = await signIn(h, 'receipts', 'bob@ai-files.test')
      annElsewhere = await signIn(h, 'elsewhere', 'ann@ai-files.test')
    })
    after(async () => {
      await h.close()
      await double.close()
      await closeStorage()
    })

    async function attach(as: SignedIn, input: Partial<Record<string, unknown>>, slug = 'receipts'): Promise<any> {
      const full = { action: 'ask', base64: '', name: 'x', contentType: 'application/octet-stream', padTo: 0, ref: '', refs: [], detail: false, ...input }
      const res = await h.request('/_service/functions/attach', { host: slug, headers: { 'x-service-sdk': '1' }, token: as.accessToken, json: full })
      const text = await res.text()
      assert.equal(res.status, 200, text)
      return JSON.parse(text)
    }
    async function upload(as: SignedIn, bytes: Uint8Array, options: { name: string; contentType: string; padTo?: number; slug?: string }): Promise<string> {
      const body = await attach(as, { action: 'upload', base64: base64(bytes), name: options.name, contentType: options.contentType, padTo: options.padTo ?? 0 }, options.slug)
      assert.equal(typeof body.ref, 'string', JSON.stringify(body))
      return body.ref
    }
    async function refused(as: SignedIn, ref: string | string[], code: string, slug = 'receipts'): Promise<any> {
      const before = double.requests.length
      const body = await attach(as, typeof ref === 'string' ? { ref } : { refs: ref }, slug)
      assert.equal(body.error?.code, code, JSON.stringify(body))
      assert.equal(double.requests.length, before, 'no provider request')
      return body.error
    }

    test('a managed image with detail original reaches the provider as its bytes, whatever its name and stored type', async () => {
      const ref = await upload(ann, png(), { name: 'scan.pdf', contentType: 'application/pdf' })
      double.answer({ kind: 'chat', content: 'A red pixel.' })
      assert.deepEqual(await attach(ann, { ref, detail: true }), { text: 'A red pixel.' })
      assert.deepEqual(double.requests[double.requests.length - 1]!.body, {
        model: 'vision-model',
        messages: [{
          role: 'user',
          content: [
            { type: 'text', text: 'Read this.' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${base64(png())}`, detail: 'original' } },
          ],
        }],
      })
    })

    test('a managed PDF of 20 pages is sent as a file part with its name; 21 pages is AI_PDF_TOO_MANY_PAGES', async () => {
      const receipt = await pdf(20)
      const ref = await upload(ann, receipt, { name: 'receipt.pdf', contentType: 'application/pdf' })
      double.answer({ kind: 'chat', content: 'Total 12.50' })
      assert.deepEqual(await attach(ann, { ref, detail: true }), { text: 'Total 12.50' })
      assert.deepEqual(double.requests[double.requests.length - 1]!.body.messages[0].content[1], {
        type: 'file', file: { filename: 'receipt.pdf', file_data: `data:application/pdf;base64,${base64(receipt)}` },
      })
      const long = await upload(ann, await pdf(21), { name: 'long.pdf', contentType: 'application/pdf' })
      const error = await refused(ann, long, 'AI_PDF_TOO_MANY_PAGES')
      assert.equal(error.status, 400)
    })

    test('a stored animated GIF is AI_ATTACHMENT_ANIMATED; a stored image over 15 MiB is AI_IMAGE_TOO_LARGE', async () => {
      await refused(ann, await upload(ann, gif(3), { name: 'still.gif', contentType: 'image/gif' }), 'AI_ATTACHMENT_ANIMATED')
      const big = await upload(ann, png(), { name: 'big.png', contentType: 'image/png', padTo: 15 * MIB + 1 })
      assert.equal((await refused(ann, big, 'AI_IMAGE_TOO_LARGE')).status, 413)
    })

    test('a stored PDF of 20 MiB and one byte is AI_PDF_TOO_LARGE', async () => {
      const huge = await upload(ann, await pdf(1), { name: 'huge.pdf', contentType: 'application/pdf', padTo: 20 * MIB + 1 })
      const error = await refused(ann, huge, 'AI_PDF_TOO_LARGE')
      assert.equal(error.status, 413)
      assert.match(error.message, /PDF of 20971521 bytes; a PDF may have at most 20971520/)
    })

    test('four stored images under 15 MiB each but over 20 MiB together are AI_ATTACHMENTS_TOO_LARGE', async () => {
      const size = Math.round(5.1 * MIB)
      const refs: string[] = []
      for (let index = 0; index < 4; index += 1) refs.push(await upload(ann, png(), { name: `page-${index}.png`, contentType: 'image/png', padTo: size }))
      const error = await refused(ann, refs, 'AI_ATTACHMENTS_TOO_LARGE')
      assert.equal(error.status, 413)
      // The fourth is the one that does not fit beside the first three.
      assert.match(error.message, /^Attachment 3 does not fit: all attachments together may hold at most 20971520 bytes/)
    })

    test("another person's file and another app's file are not readable as attachments", async () => {
      const mine = await upload(ann, png(), { name: 'mine.png', contentType: 'image/png' })
      await refused(bob, mine, 'FILE_NOT_FOUND')
      const foreign = await upload(annElsewhere, png(), { name: 'foreign.png', contentType: 'image/png', slug: 'elsewhere' })
      await refused(ann, foreign, 'FILE_NOT_FOUND')
      // The same person's reference is good in its own app.
      double.answer({ kind: 'chat', content: 'ok' })
      assert.deepEqual(await attach(annElsewhere, { ref: foreign }, 'elsewhere'), { text: 'ok' })
    })
  })
}
