// Inline image attachments (spec 4.3 `{ type: 'image', data, contentType }`) at the sizes
// spec 8 allows, with real Deno Functions and the provider double: the worker stages an
// inline image too large for one context call on the platform in pieces, and the AI call
// refers to the staged bytes. A 15 MiB PNG reaches the provider byte for byte (generateText,
// streamText and generateObject); 15 MiB + 1 byte is AI_IMAGE_TOO_LARGE, five attachments
// AI_ATTACHMENTS_TOO_MANY, more than 20 MiB together AI_ATTACHMENTS_TOO_LARGE, each before
// the provider is asked. The staged bytes are given back when the call ends, also when the
// provider never answers and the invocation times out (the staging store's byte count).
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { manifest, startHarness, type Harness } from '../../test/harness.ts'
import { deployApp } from '../../test/integration-fixture.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { createSchemaCache } from '../data-api/index.ts'
import { createFunctionHost, type FunctionHost } from '../functions/host.ts'
import { silentLogger } from '../lib/logger.ts'
import { createSecretStore } from '../secrets/index.ts'
import { createAi, type Ai } from './ai.ts'
import { startProviderDouble, type ProviderDouble } from './test-provider.ts'
import { base64, png } from './test-fixtures.ts'

const MIB = 1024 * 1024

// Each attachment is a 1x1 PNG padded with zeros to its size, so its bytes are a PNG of exactly that size.
const SEE = `
import { defineFunction, array, number, object, string } from '@service/server'
const HEAD = Uint8Array.from(atob('${base64(png())}'), (c) => c.charCodeAt(0))
function image(size) {
  const data = new Uint8Array(size)
  data.set(HEAD)
  return data
}
export default defineFunction({
  input: object({ method: string(), sizes: array(number()) }),
  async handler({ input, ai }) {
    const attachments = input.sizes.map((size) => ({ type: 'image', data: image(size), contentType: 'image/png' }))
    try {
      if (input.method === 'streamText') {
        const stream = await ai.streamText({ prompt: 'Describe it.', attachments })
        let text = ''
        for await (const piece of stream) text += piece
        return { text }
      }
      if (input.method === 'generateObject') {
        return { object: await ai.generateObject({ prompt: 'Describe it.', schema: object({ colour: string() }), attachments }) }
      }
      return { text: await ai.generateText({ prompt: 'Describe it.', attachments }) }
    } catch (error) {
      return { error: { code: error.code ?? null, status: error.status ?? null, message: String(error.message).slice(0, 300) } }
    }
  },
})`

describe(`ctx.ai inline image attachments up to the spec's sizes (${backend})`, () => {
  let h: Harness
  let double: ProviderDouble
  let ai: Ai<unknown>
  let host: FunctionHost
  let app: App
  const bundlesDir = mkdtempSync(join(tmpdir(), 'service-ai-inline-'))

  before(async () => {
    double = await startProviderDouble()
    const settings = { baseUrl: double.baseUrl, apiKey: 'sk-inline', textModel: 'vision-model', imageModel: null, timeoutMs: 20_000 }
    h = await startHarness(undefined, { ai: settings })
    const owner = await h.createOwner('owner@inline.test')
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug: 'seer', visibility: 'public' } })).status, 201)
    await deployApp(h, owner.token, 'seer', {
      'service.yaml': manifest('seer', 'functions:\n  - name: see\n    entrypoint: functions/see.ts\n    access: system\n    timeoutSeconds: 60\n'),
      'functions/see.ts': SEE,
    })
    app = (await findAppBySlug(h.t.db, 'seer'))!
    // A host of the test's own, so the test holds the AI feature and can read its staging store.
    ai = createAi({ settings, logger: silentLogger })
    host = createFunctionHost({
      db: h.t.db, clock: h.clock, logger: silentLogger, schemas: createSchemaCache(), bundlesDir, poolSize: 1,
      secrets: createSecretStore({ db: h.t.db, clock: h.clock, key: new Uint8Array(32).fill(1) }),
      ai,
    })
  })
  after(async () => {
    await host.close()
    await h.close()
    await double.close()
    rmSync(bundlesDir, { recursive: true, force: true })
  })

  async function see(method: string, sizes: number[], options: { timeoutMs?: number } = {}): Promise<any> {
    const fn = (await host.resolve(app, 'see'))!
    const result = await host.run(fn, { input: { method, sizes }, user: null, ...options })
    assert.equal(result.ok, true, JSON.stringify(result).slice(0, 500))
    return (result as { value: unknown }).value
  }
  /** The images of the provider request, decoded from their data URLs. */
  function imagesOf(request: { body: any }): Uint8Array[] {
    const content = request.body.messages[0].content as Array<{ type: string; image_url?: { url: string } }>
    return content.filter((part) => part.type === 'image_url').map((part) => {
      const url = part.image_url!.url
      assert.ok(url.startsWith('data:image/png;base64,'), url.slice(0, 40))
      return new Uint8Array(Buffer.from(url.slice('data:image/png;base64,'.length), 'base64'))
    })
  }
  async function refused(sizes: number[], code: string, status: number): Promise<any> {
    const asked = double.requests.length
    const value = await see('generateText', sizes)
    assert.equal(value.error?.code, code, JSON.stringify(value).slice(0, 500))
    assert.equal(value.error.status, status)
    assert.equal(double.requests.length, asked, 'a refused call never reaches the provider')
    assert.equal(ai.stagedBytes(), 0, 'nothing stays staged after a refusal')
    return value.error
  }

  test('an inline PNG of 15 MiB reaches the provider whole through generateText, and its staged bytes are given back', async () => {
    double.answer({ kind: 'chat', content: 'A green pixel.' })
    const value = await see('generateText', [15 * MIB])
    assert.deepEqual(value, { text: 'A green pixel.' })
    const [sent] = imagesOf(double.requests.at(-1)!)
    assert.deepEqual(sent, png({ padTo: 15 * MIB }))
    assert.equal(ai.stagedBytes(), 0)
  })

  test('four inline images of 5 MiB each (20 MiB together) and a small one beside large ones reach the provider in order', async () => {
    double.answer({ kind: 'chat', content: 'Four.' }, { kind: 'chat', content: 'Three.' })
    assert.deepEqual(await see('generateText', [5 * MIB, 5 * MIB, 5 * MIB, 5 * MIB]), { text: 'Four.' })
    assert.deepEqual(imagesOf(double.requests.at(-1)!).map((image) => image.byteLength), [5 * MIB, 5 * MIB, 5 * MIB, 5 * MIB])
    assert.deepEqual(await see('generateText', [2 * MIB, 1000, 3 * MIB]), { text: 'Three.' })
    assert.deepEqual(imagesOf(double.requests.at(-1)!), [png({ padTo: 2 * MIB }), png({ padTo: 1000 }), png({ padTo: 3 * MIB })])
    assert.equal(ai.stagedBytes(), 0)
  })

  test('streamText and generateObject take a large inline image the same way', async () => {
    double.answer({ kind: 'stream', pieces: ['A green ', 'pixel.'] }, { kind: 'chat', content: '{"colour":"green"}' })
    assert.deepEqual(await see('streamText', [4 * MIB]), { text: 'A green pixel.' })
    assert.equal(imagesOf(double.requests.at(-1)!)[0]!.byteLength, 4 * MIB)
    assert.deepEqual(await see('generateObject', [4 * MIB]), { object: { colour: 'green' } })
    assert.equal(imagesOf(double.requests.at(-1)!)[0]!.byteLength, 4 * MIB)
    assert.equal(ai.stagedBytes(), 0)
  })

  test('an inline image of 15 MiB and one byte is AI_IMAGE_TOO_LARGE', async () => {
    const error = await refused([15 * MIB + 1], 'AI_IMAGE_TOO_LARGE', 413)
    assert.match(error.message, /Attachment 0 is an image of 15728641 bytes/)
  })

  test('five inline attachments are AI_ATTACHMENTS_TOO_MANY', async () => {
    await refused([MIB, MIB, MIB, MIB, MIB], 'AI_ATTACHMENTS_TOO_MANY', 400)
  })

  test('inline images over 20 MiB together are AI_ATTACHMENTS_TOO_LARGE, each within its own 15 MiB', async () => {
    await refused([10 * MIB, 10 * MIB + 1], 'AI_ATTACHMENTS_TOO_LARGE', 413)
    await refused([5 * MIB, 5 * MIB, 5 * MIB, 5 * MIB + 1], 'AI_ATTACHMENTS_TOO_LARGE', 413)
  })

  test('staged bytes are held while the provider is asked and given back when the invocation times out', async () => {
    double.answer({ kind: 'hang' })
    const running = host.run((await host.resolve(app, 'see'))!, { input: { method: 'generateText', sizes: [12 * MIB] }, user: null, timeoutMs: 6000 })
    const asked = double.requests.length
    const deadline = Date.now() + 5000
    while (double.requests.length === asked && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(double.requests.length, asked + 1, 'the provider was asked')
    assert.equal(ai.stagedBytes(), 12 * MIB, 'the staged image is held while its call runs')
    const result = await running
    assert.equal(result.ok, false)
    assert.equal((result as { error: { kind: string } }).error.kind, 'timeout')
    assert.equal(ai.stagedBytes(), 0, 'the ended invocation holds nothing')
  })
})
