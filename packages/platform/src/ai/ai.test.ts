// ctx.ai end to end (spec 2.10, 4.3, 7, 8) with real Deno Functions and a test double of an
// OpenAI-compatible API that records the exact requests the platform sends: generateText
// with instructions and image parts (detail passed through), streamText (stream: true, text
// reaching the HTTP caller piece by piece), generateObject (response_format json_schema
// from the SDK schema; a mismatching answer is AI_OUTPUT_INVALID), generateImage (PNG,
// revised prompt); provider 429, 5xx and timeouts retryable (503), other answers not; each
// attachment refusal through a Function; a missing setting named; and the key: sent to the
// provider only, never seen by the worker, in errors or in logs.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { manifest, startHarness, type Harness } from '../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../test/captured-log.ts'
import { deployApp } from '../../test/integration-fixture.ts'
import { isRetryable } from '../jobs/dispatcher.ts'
import { silentLogger } from '../lib/logger.ts'
import { createAi, MAX_PROMPT_CHARS, type ReadFileInput } from './ai.ts'
import { startProviderDouble, type ProviderDouble } from './test-provider.ts'
import { base64, gif, jpeg, pdf, png, webp } from './test-fixtures.ts'

const KEY = 'sk-test-ai-platform-key-3f9c2b7e1d'

const FUNCTIONS = `functions:
  - name: ask
    entrypoint: functions/ask.ts
    access: public
  - name: extract
    entrypoint: functions/extract.ts
    access: public
  - name: leak
    entrypoint: functions/leak.ts
    access: public
`

const ASK = `
import { defineFunction, object, string } from '@service/server'
const bytes = (text) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
const toBase64 = (data) => { let s = ''; for (const x of data) s += String.fromCharCode(x); return btoa(s) }
export default defineFunction({
  input: object({ method: string(), options: string() }),
  async handler({ input, ai }) {
    const options = JSON.parse(input.options)
    if (Array.isArray(options.attachments)) {
      options.attachments = options.attachments.map((a) => typeof a.base64 === 'string' ? { type: a.type, contentType: a.contentType, data: bytes(a.base64) } : a)
    }
    if (input.method === 'generateText') return { text: await ai.generateText(options) }
    if (input.method === 'streamText') return await ai.streamText(options)
    if (input.method === 'generateImage') {
      const image = await ai.generateImage(options)
      return { base64: toBase64(image.data), contentType: image.contentType, revisedPrompt: image.revisedPrompt ?? null }
    }
    throw new Error('unknown method')
  },
})`

const EXTRACT = `
import { defineFunction, number, object, string } from '@service/server'
export default defineFunction({
  input: object({ prompt: string() }),
  async handler({ input, ai }) {
    const receipt = await ai.generateObject({ prompt: input.prompt, schema: object({ total: number(), currency: string() }) })
    return { receipt, doubled: receipt.total * 2 }
  },
})`

const LEAK = `
import { defineFunction, object } from '@service/server'
export default defineFunction({
  input: object({}),
  async handler(ctx) {
    const seen = []
    try { seen.push(JSON.stringify(Deno.env.toObject())) } catch (error) { seen.push(String(error)) }
    seen.push(JSON.stringify(Object.keys(ctx)), JSON.stringify(Object.keys(ctx.ai)))
    try { await ctx.ai.generateText({ prompt: 'who am I?' }) } catch (error) {
      seen.push(error.code, error.message, JSON.stringify(error.details ?? null), String(error.stack))
    }
    return { seen: seen.join('\\n') }
  },
})`

describe(`ctx.ai with real Deno Functions and an OpenAI-compatible double (${backend})`, () => {
  let h: Harness
  let double: ProviderDouble
  let log: CapturedLog
  const previousKey = process.env.AI_API_KEY

  before(async () => {
    // As in production, the platform's own environment holds the key.
    process.env.AI_API_KEY = KEY
    double = await startProviderDouble()
    log = capturedLog('debug')
    h = await startHarness(undefined, {
      logger: log.logger,
      ai: { baseUrl: double.baseUrl, apiKey: KEY, textModel: 'test-text-model', imageModel: 'test-image-model', timeoutMs: 3000 },
    })
    const owner = await h.createOwner('ann@acme.test')
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug: 'writer', visibility: 'public' } })).status, 201)
    await deployApp(h, owner.token, 'writer', {
      'service.yaml': manifest('writer', FUNCTIONS),
      'functions/ask.ts': ASK,
      'functions/extract.ts': EXTRACT,
      'functions/leak.ts': LEAK,
    })
  })
  after(async () => {
    await h.close()
    await double.close()
    if (previousKey === undefined) delete process.env.AI_API_KEY
    else process.env.AI_API_KEY = previousKey
  })

  function call(name: string, input: unknown): Promise<Response> {
    return h.request(`/_service/functions/${name}`, { host: 'writer', json: input, headers: { 'x-service-sdk': '1' } })
  }
  async function ask(method: string, options: unknown): Promise<{ status: number; body: any }> {
    const res = await call('ask', { method, options: JSON.stringify(options) })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  async function refused(method: string, options: unknown, code: string, status: number): Promise<any> {
    const before = double.requests.length
    const result = await ask(method, options)
    assert.equal(result.body?.error?.code, code, JSON.stringify(result.body))
    assert.equal(result.status, status)
    assert.equal(double.requests.length, before, 'a refused call never reaches the provider')
    return result.body.error
  }
  function last() {
    return double.requests[double.requests.length - 1]!
  }

  test('generateText sends the model, instructions and prompt with the key, and returns the text', async () => {
    double.answer({ kind: 'chat', content: 'Bonjour.' })
    const result = await ask('generateText', { instructions: 'Answer in French.', prompt: 'Say hello.' })
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.deepEqual(result.body, { text: 'Bonjour.' })
    const request = last()
    assert.equal(request.method, 'POST')
    assert.equal(request.path, '/v1/chat/completions')
    assert.equal(request.authorization, `Bearer ${KEY}`)
    assert.deepEqual(request.body, {
      model: 'test-text-model',
      messages: [{ role: 'system', content: 'Answer in French.' }, { role: 'user', content: 'Say hello.' }],
    })
  })

  test('image attachments become image parts with data URLs of the detected type', async () => {
    double.answer({ kind: 'chat', content: 'A red pixel and a JPEG.' })
    const result = await ask('generateText', {
      prompt: 'Describe these.',
      attachments: [{ type: 'image', base64: base64(png()), contentType: 'image/png' }, { type: 'image', base64: base64(jpeg()), contentType: 'image/jpeg' }],
    })
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.deepEqual(last().body, {
      model: 'test-text-model',
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text: 'Describe these.' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${base64(png())}` } },
          { type: 'image_url', image_url: { url: `data:image/jpeg;base64,${base64(jpeg())}` } },
        ],
      }],
    })
  })

  test('streamText asks the provider to stream and the caller reads the first piece before the model writes the rest', async () => {
    double.answer({ kind: 'stream', pieces: ['Once ', 'upon ', 'a time.'], holdAfterFirst: true })
    const res = await call('ask', { method: 'streamText', options: JSON.stringify({ prompt: 'Tell a story.', instructions: 'Be brief.' }) })
    assert.equal(res.status, 200)
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    const first = await reader.read()
    assert.equal(decoder.decode(first.value), 'Once ', 'the first piece arrives while the provider still holds the rest')
    double.release()
    let rest = ''
    for (let next = await reader.read(); !next.done; next = await reader.read()) rest += decoder.decode(next.value, { stream: true })
    assert.equal(rest, 'upon a time.')
    assert.deepEqual(last().body, {
      model: 'test-text-model',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Tell a story.' }],
      stream: true,
    })
  })

  test('a caller that stops reading a streamed answer closes the provider request', async () => {
    const before = double.abandoned()
    double.answer({ kind: 'stream', pieces: ['Chapter one. ', 'Chapter two.'], holdAfterFirst: true })
    const res = await call('ask', { method: 'streamText', options: JSON.stringify({ prompt: 'A long story.' }) })
    const reader = res.body!.getReader()
    assert.equal(new TextDecoder().decode((await reader.read()).value), 'Chapter one. ')
    await reader.cancel()
    // The invocation ends with the cancelled stream, and its open provider stream with it.
    while (double.abandoned() === before) await new Promise((resolve) => setTimeout(resolve, 20))
    assert.equal(double.abandoned(), before + 1)
    double.release()
  })

  test('streamText refused by the provider with 429 fails the call as retryable AI_PROVIDER_UNAVAILABLE', async () => {
    double.answer({ kind: 'status', status: 429, message: 'Rate limit reached' })
    const result = await ask('streamText', { prompt: 'Tell a story.' })
    assert.equal(result.status, 503)
    assert.equal(result.body.error.code, 'AI_PROVIDER_UNAVAILABLE')
    assert.equal(last().body.stream, true)
  })

  test('generateObject asks for JSON matching the schema and returns the parsed object', async () => {
    double.answer({ kind: 'chat', content: '{"total":12.5,"currency":"EUR"}' })
    const res = await call('extract', { prompt: 'Total of: coffee 12.50 EUR' })
    const body = await res.json() as any
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.deepEqual(body, { receipt: { total: 12.5, currency: 'EUR' }, doubled: 25 })
    assert.deepEqual(last().body, {
      model: 'test-text-model',
      response_format: {
        type: 'json_schema',
        json_schema: {
          schema: {
            type: 'object',
            properties: { total: { type: 'number' }, currency: { type: 'string' } },
            required: ['total', 'currency'],
            additionalProperties: false,
          },
          strict: true,
          name: 'response',
        },
      },
      messages: [{ role: 'user', content: 'Total of: coffee 12.50 EUR' }],
    })
  })

  test('generateObject with an answer that does not match the schema is AI_OUTPUT_INVALID, not a silent pass', async () => {
    double.answer({ kind: 'chat', content: '{"total":"twelve","currency":"EUR"}' })
    const mismatch = await call('extract', { prompt: 'Total?' })
    assert.equal(mismatch.status, 502)
    assert.equal((await mismatch.json() as any).error.code, 'AI_OUTPUT_INVALID')
    double.answer({ kind: 'chat', content: 'The total is 12.50 EUR' })
    const notJson = await call('extract', { prompt: 'Total?' })
    assert.equal(notJson.status, 502)
    assert.equal((await notJson.json() as any).error.code, 'AI_OUTPUT_INVALID')
  })

  test('provider 429 and 500 are retryable AI_PROVIDER_UNAVAILABLE; 400 is AI_PROVIDER_FAILED', async () => {
    double.answer({ kind: 'status', status: 429, message: 'Rate limit reached' })
    const limited = await ask('generateText', { prompt: 'Hi' })
    assert.equal(limited.body.error.code, 'AI_PROVIDER_UNAVAILABLE')
    assert.equal(limited.status, 503)
    assert.equal(limited.body.error.details.status, 429)
    double.answer({ kind: 'status', status: 500, message: 'The server had an error' })
    const broken = await ask('generateText', { prompt: 'Hi' })
    assert.equal(broken.body.error.code, 'AI_PROVIDER_UNAVAILABLE')
    assert.equal(broken.status, 503)
    double.answer({ kind: 'status', status: 400, message: 'This model does not take images' })
    const refusedByProvider = await ask('generateText', { prompt: 'Hi' })
    assert.equal(refusedByProvider.body.error.code, 'AI_PROVIDER_FAILED')
    assert.equal(refusedByProvider.status, 502)
    assert.match(refusedByProvider.body.error.message, /This model does not take images/)
    // The jobs engine retries only 503-style failures (spec 7.1).
    assert.equal(isRetryable({ kind: 'service', code: 'AI_PROVIDER_UNAVAILABLE', status: 503, message: '' } as never), true)
    assert.equal(isRetryable({ kind: 'service', code: 'AI_PROVIDER_FAILED', status: 502, message: '' } as never), false)
  })

  test('a provider that does not answer within AI_TIMEOUT_MS is retryable AI_PROVIDER_UNAVAILABLE', async () => {
    double.answer({ kind: 'hang' })
    const result = await ask('generateText', { prompt: 'Hi' })
    assert.equal(result.status, 503)
    assert.equal(result.body.error.code, 'AI_PROVIDER_UNAVAILABLE')
    assert.deepEqual(result.body.error.details, { reason: 'timeout', timeoutMs: 3000 })
  })

  test('generateImage sends the image model and prompt and returns PNG bytes with the revised prompt', async () => {
    double.answer({ kind: 'image', b64: base64(png()), revisedPrompt: 'A white lighthouse at dusk' })
    const result = await ask('generateImage', { prompt: 'A lighthouse' })
    assert.equal(result.status, 200, JSON.stringify(result.body))
    assert.deepEqual(result.body, { base64: base64(png()), contentType: 'image/png', revisedPrompt: 'A white lighthouse at dusk' })
    const request = last()
    assert.equal(request.path, '/v1/images/generations')
    assert.equal(request.authorization, `Bearer ${KEY}`)
    assert.deepEqual(request.body, { model: 'test-image-model', prompt: 'A lighthouse', n: 1, response_format: 'b64_json' })
    double.answer({ kind: 'image', b64: base64(png()) })
    assert.deepEqual((await ask('generateImage', { prompt: 'A lighthouse' })).body, { base64: base64(png()), contentType: 'image/png', revisedPrompt: null })
  })

  test('an image answer that is not a PNG is AI_PROVIDER_FAILED', async () => {
    double.answer({ kind: 'image', b64: base64(jpeg()) })
    const result = await ask('generateImage', { prompt: 'A lighthouse' })
    assert.equal(result.status, 502)
    assert.equal(result.body.error.code, 'AI_PROVIDER_FAILED')
    assert.match(result.body.error.message, /image\/jpeg/)
  })

  test('each attachment refusal reaches the Function with its own code, before any provider request', async () => {
    const image = { type: 'image', base64: base64(png()), contentType: 'image/png' }
    await refused('generateText', { prompt: 'x', attachments: [image, image, image, image, image] }, 'AI_ATTACHMENTS_TOO_MANY', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(png()), contentType: 'image/jpeg' }] }, 'AI_ATTACHMENT_TYPE_MISMATCH', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(new TextEncoder().encode('plain text')), contentType: 'image/png' }] }, 'AI_ATTACHMENT_TYPE_UNSUPPORTED', 415)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(gif(2)), contentType: 'image/gif' }] }, 'AI_ATTACHMENT_ANIMATED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(webp(true)), contentType: 'image/webp' }] }, 'AI_ATTACHMENT_ANIMATED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(png({ animated: true })), contentType: 'image/png' }] }, 'AI_ATTACHMENT_ANIMATED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', data: 'https://example.com/cat.png', contentType: 'image/png' }] }, 'AI_ATTACHMENT_URL_NOT_ACCEPTED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'file', file: 'https://example.com/r.pdf' }] }, 'AI_ATTACHMENT_URL_NOT_ACCEPTED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(await pdf(1)), contentType: 'image/png' }] }, 'AI_PDF_NOT_MANAGED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'image', base64: base64(await pdf(1)), contentType: 'application/pdf' }] }, 'AI_PDF_NOT_MANAGED', 400)
    await refused('generateText', { prompt: 'x', attachments: [{ type: 'file', file: 'f', detail: 'high' }] }, 'AI_ATTACHMENT_INVALID', 400)
    await refused('generateText', { prompt: '' }, 'AI_INPUT_INVALID', 400)
    await refused('generateText', { prompt: 'x', temperature: 2 }, 'AI_INPUT_INVALID', 400)
  })

  test('still GIF and WEBP images pass the checks and reach the provider', async () => {
    double.answer({ kind: 'chat', content: 'ok' })
    const result = await ask('generateText', {
      prompt: 'x',
      attachments: [{ type: 'image', base64: base64(gif(1)), contentType: 'image/gif' }, { type: 'image', base64: base64(webp()), contentType: 'image/webp' }],
    })
    assert.equal(result.status, 200, JSON.stringify(result.body))
    const parts = last().body.messages[0].content
    assert.deepEqual(parts.map((part: any) => part.image_url?.url.slice(0, 22)), [undefined, 'data:image/gif;base64,', 'data:image/webp;base64'])
  })

  test('the key is sent to the provider only: not in the worker, its errors or the platform log', async () => {
    // Like OpenAI's 401, the provider's error message repeats the key it was given.
    double.answer({ kind: 'status', status: 401, message: `Incorrect API key provided: ${KEY}.` })
    const res = await call('leak', {})
    const body = await res.json() as any
    assert.equal(res.status, 200, JSON.stringify(body))
    assert.equal(last().authorization, `Bearer ${KEY}`)
    assert.match(body.seen, /AI_PROVIDER_FAILED/)
    assert.match(body.seen, /Incorrect API key provided: \[REDACTED\]/)
    assert.equal(body.seen.includes(KEY), false, body.seen)
    assert.equal(body.seen.includes(KEY.slice(0, 16)), false)
    assert.ok(log.lines.length > 0)
    assert.equal(log.text().includes(KEY), false)
  })
})

describe('ctx.ai without a provider', () => {
  test('every call is AI_NOT_CONFIGURED naming AI_BASE_URL; then the model setting', async () => {
    const call = { appId: 'a', devName: '', identity: null, user: null, job: null, signal: new AbortController().signal, invocation: {} }
    const none = createAi({ settings: { baseUrl: null, apiKey: null, textModel: null, imageModel: null, timeoutMs: 1000 }, logger: silentLogger })
    for (const method of ['generateText', 'streamText', 'generateImage']) {
      await assert.rejects(none.answer({ ...call, method, args: [{ prompt: 'x' }] }), (error: any) => {
        assert.equal(error.code, 'AI_NOT_CONFIGURED')
        assert.deepEqual(error.details, { setting: 'AI_BASE_URL' })
        return true
      })
    }
    const noImageModel = createAi({ settings: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: null, textModel: 'm', imageModel: null, timeoutMs: 1000 }, logger: silentLogger })
    await assert.rejects(noImageModel.answer({ ...call, method: 'generateImage', args: [{ prompt: 'x' }] }), (error: any) => {
      assert.equal(error.code, 'AI_NOT_CONFIGURED')
      assert.deepEqual(error.details, { setting: 'AI_IMAGE_MODEL' })
      assert.match(error.message, /AI_IMAGE_MODEL/)
      return true
    })
    const noModel = createAi({ settings: { baseUrl: 'http://127.0.0.1:9/v1', apiKey: null, textModel: null, imageModel: null, timeoutMs: 1000 }, logger: silentLogger })
    await assert.rejects(noModel.answer({ ...call, method: 'generateObject', args: [{ prompt: 'x', schema: { type: 'object' } }] }), (error: any) => {
      assert.equal(error.code, 'AI_NOT_CONFIGURED')
      assert.deepEqual(error.details, { setting: 'AI_TEXT_MODEL' })
      return true
    })
  })
})

describe('ctx.ai input checks', () => {
  test('each malformed call is AI_INPUT_INVALID (or BAD_REQUEST for an unknown method) before any provider is needed', async () => {
    const ai = createAi({ settings: { baseUrl: null, apiKey: null, textModel: null, imageModel: null, timeoutMs: 1000 }, logger: silentLogger })
    const call = { appId: 'a', devName: '', identity: null, user: null, job: null, signal: new AbortController().signal, invocation: {} }
    const cases: Array<[string, unknown[]]> = [
      ['generateText', []],
      ['generateText', ['just a prompt']],
      ['generateText', [{ prompt: 'x'.repeat(MAX_PROMPT_CHARS + 1) }]],
      ['generateText', [{ prompt: 'x', instructions: '' }]],
      ['generateText', [{ prompt: 42 }]],
      ['streamText', [{ prompt: '   ' }]],
      ['generateObject', [{ prompt: 'x' }]],
      ['generateObject', [{ prompt: 'x', schema: [] }]],
      ['generateObject', [{ prompt: 'x', schema: { type: 'object' }, instructions: 'no' }]],
      ['generateImage', [{ prompt: 'x', size: '1024x1024' }]],
      ['generateImage', [{}]],
    ]
    for (const [method, args] of cases) {
      await assert.rejects(ai.answer({ ...call, method, args }), (error: any) => {
        assert.equal(error.code, 'AI_INPUT_INVALID', `${method} ${JSON.stringify(args).slice(0, 80)}: ${error.message}`)
        assert.equal(error.status, 400)
        return true
      })
    }
    await assert.rejects(ai.answer({ ...call, method: 'embed', args: [{}] }), { code: 'BAD_REQUEST' })
    // At the limit the prompt passes the checks (and only then needs the provider).
    await assert.rejects(ai.answer({ ...call, method: 'generateText', args: [{ prompt: 'x'.repeat(MAX_PROMPT_CHARS) }] }), { code: 'AI_NOT_CONFIGURED' })
  })
})

describe('ctx.ai with managed file attachments (the files feature stood in for)', () => {
  let double: ProviderDouble
  before(async () => {
    double = await startProviderDouble()
  })
  after(async () => {
    await double.close()
  })

  test('a managed image with detail original reaches the provider as image_url.detail; a managed PDF as a file part (the chat format has no detail for files); reads carry the invocation', async () => {
    const reads: unknown[] = []
    const receipt = await pdf(2)
    const files: Record<string, { data: Uint8Array; name: string }> = { 'ref-img': { data: png(), name: 'scan.pdf' }, 'ref-pdf': { data: receipt, name: 'receipt.pdf' } }
    const ai = createAi({
      settings: { baseUrl: double.baseUrl, apiKey: KEY, textModel: 'm', imageModel: null, timeoutMs: 3000 },
      logger: silentLogger,
      readFile: async (input: ReadFileInput<string>) => {
        reads.push(input)
        const file = files[input.ref]!
        return { data: file.data, contentType: 'text/plain', name: file.name, size: file.data.length, generation: 1 }
      },
    })
    const call = { appId: 'app-1', devName: 'd1', identity: 'system-identity', user: null, job: { id: 'job-1' }, signal: new AbortController().signal, invocation: {} }
    double.answer({ kind: 'chat', content: 'ok' }, { kind: 'chat', content: 'ok' })
    await ai.answer({ ...call, method: 'generateText', args: [{ prompt: 'Read it', attachments: [{ type: 'file', file: 'ref-img', detail: 'original' }] }] })
    await ai.answer({ ...call, method: 'generateText', args: [{ prompt: 'Read it', attachments: [{ type: 'file', file: 'ref-pdf', detail: 'original' }] }] })
    assert.deepEqual(reads, [
      { appId: 'app-1', devName: 'd1', identity: 'system-identity', user: null, job: { id: 'job-1' }, ref: 'ref-img', maxBytes: 20 * 1024 * 1024, headBytes: 4100 },
      { appId: 'app-1', devName: 'd1', identity: 'system-identity', user: null, job: { id: 'job-1' }, ref: 'ref-pdf', maxBytes: 20 * 1024 * 1024, headBytes: 4100 },
    ])
    assert.deepEqual(double.requests[0]!.body.messages[0].content[1], {
      type: 'image_url', image_url: { url: `data:image/png;base64,${base64(png())}`, detail: 'original' },
    })
    assert.deepEqual(double.requests[1]!.body.messages[0].content[1], {
      type: 'file', file: { filename: 'receipt.pdf', file_data: `data:application/pdf;base64,${base64(receipt)}` },
    })
  })

  test('a schema with an optional field is sent with strict false', async () => {
    const ai = createAi({ settings: { baseUrl: double.baseUrl, apiKey: null, textModel: 'm', imageModel: null, timeoutMs: 3000 }, logger: silentLogger })
    double.answer({ kind: 'chat', content: '{"a":1}' })
    const schema = { type: 'object', properties: { a: { type: 'number' }, note: { type: 'string' } }, required: ['a'], additionalProperties: false }
    const value = await ai.answer({ appId: 'a', devName: '', identity: null, user: null, job: null, signal: new AbortController().signal, invocation: {}, method: 'generateObject', args: [{ prompt: 'p', schema }] })
    assert.deepEqual(value, { a: 1 })
    const request = double.requests[double.requests.length - 1]!
    assert.equal(request.authorization, undefined, 'no key configured: no authorization header (local servers)')
    assert.equal(request.body.response_format.json_schema.strict, false)
  })
})

describe('ctx.ai streams (platform side)', () => {
  let double: ProviderDouble
  before(async () => {
    double = await startProviderDouble()
  })
  after(async () => {
    await double.close()
  })
  const settings = () => ({ baseUrl: double.baseUrl, apiKey: null, textModel: 'm', imageModel: null, timeoutMs: 3000 })
  const invocation = () => {
    const end = new AbortController()
    return { end, call: { appId: 'a', devName: '', identity: null, user: null, job: null, signal: end.signal, invocation: {} } }
  }

  test('pieces come one per next call, then null; the stream is then gone', async () => {
    const ai = createAi({ settings: settings(), logger: silentLogger })
    const { call } = invocation()
    double.answer({ kind: 'stream', pieces: ['a', 'b', 'c'] })
    const opened = await ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }) as { stream: string; text: string }
    assert.equal(opened.text, 'a')
    assert.equal(await ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), 'b')
    assert.equal(await ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), 'c')
    assert.equal(await ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), null)
    await assert.rejects(ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), { code: 'AI_STREAM_NOT_FOUND' })
  })

  test('another invocation cannot read a stream by its id', async () => {
    const ai = createAi({ settings: settings(), logger: silentLogger })
    const mine = invocation()
    const other = invocation()
    double.answer({ kind: 'stream', pieces: ['a', 'b'] })
    const opened = await ai.answer({ ...mine.call, method: 'streamText', args: [{ prompt: 'p' }] }) as { stream: string }
    await assert.rejects(ai.answer({ ...other.call, method: 'streamText.next', args: [opened.stream] }), { code: 'AI_STREAM_NOT_FOUND' })
    assert.equal(await ai.answer({ ...mine.call, method: 'streamText.next', args: [opened.stream] }), 'b')
  })

  test('a provider connection that breaks mid-stream fails the next read as retryable AI_PROVIDER_UNAVAILABLE', async () => {
    const ai = createAi({ settings: settings(), logger: silentLogger })
    const { call } = invocation()
    double.answer({ kind: 'stream', pieces: ['first', 'never'], breakAfterFirst: true })
    const opened = await ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }) as { stream: string; text: string }
    assert.equal(opened.text, 'first')
    double.release()
    await assert.rejects(ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), (error: any) => {
      assert.equal(error.code, 'AI_PROVIDER_UNAVAILABLE')
      assert.equal(error.status, 503)
      return true
    })
  })

  test('the end of the invocation closes its open provider streams', async () => {
    const ai = createAi({ settings: settings(), logger: silentLogger })
    const { end, call } = invocation()
    const before = double.abandoned()
    double.answer({ kind: 'stream', pieces: ['a', 'b'], holdAfterFirst: true })
    const opened = await ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }) as { stream: string }
    end.abort()
    while (double.abandoned() === before) await new Promise((resolve) => setTimeout(resolve, 20))
    await assert.rejects(ai.answer({ ...call, method: 'streamText.next', args: [opened.stream] }), { code: 'AI_STREAM_NOT_FOUND' })
    double.release()
  })

  test('cancel closes the provider request; a ninth open stream is AI_INPUT_INVALID', async () => {
    const ai = createAi({ settings: settings(), logger: silentLogger })
    const { call } = invocation()
    const before = double.abandoned()
    const ids: string[] = []
    for (let n = 0; n < 8; n += 1) {
      double.answer({ kind: 'stream', pieces: [`s${n}`, 'more'], holdAfterFirst: true })
      ids.push((await ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }) as { stream: string }).stream)
    }
    await assert.rejects(ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }), { code: 'AI_INPUT_INVALID' })
    assert.equal(await ai.answer({ ...call, method: 'streamText.cancel', args: [ids[0]] }), null)
    while (double.abandoned() === before) await new Promise((resolve) => setTimeout(resolve, 20))
    double.answer({ kind: 'stream', pieces: ['ninth'] })
    assert.equal((await ai.answer({ ...call, method: 'streamText', args: [{ prompt: 'p' }] }) as { text: string }).text, 'ninth')
    double.release()
  })
})
