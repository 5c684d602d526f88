/**
 * What the HTTP surfaces of Functions do with what an untrusted worker hands them, end to
 * end (real Deno, both backends): header values HTTP cannot carry are dropped instead of
 * failing the request, JSON answers are never sniffed, and a byte stream that breaks off
 * after its first byte leaves its reason in the platform log and the Function's logs with
 * the app's secret values redacted.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { recordingLogger } from './test-bundle.ts'

const SECRET = 'sk_live_hardening_4242'

const FUNCTIONS = `functions:
  - name: plain
    entrypoint: functions/plain.ts
    access: public
    routes:
      - method: GET
        path: /api/plain
  - name: badHeaders
    entrypoint: functions/bad-headers.ts
    access: public
    routes:
      - method: GET
        path: /bad-headers
  - name: breaks
    entrypoint: functions/breaks.ts
    access: public
    routes:
      - method: GET
        path: /breaks
secrets:
  API_KEY: required
`

const FILES = {
  'public/index.html': '<h1>hard</h1>',
  'functions/plain.ts': `
    import { defineFunction, errors, object, optional, string } from '@service/server'
    export default defineFunction({
      input: object({ fail: optional(string()) }),
      handler({ input }) {
        if (input.fail === 'typed') throw errors.conflict('TAKEN', 'already there')
        if (input.fail === 'untyped') throw new Error('boom')
        return { plain: true }
      },
    })`,
  // The worker is made to send header values a Response could never hold (as a forged head would).
  'functions/bad-headers.ts': `
    import { defineFunction, object } from '@service/server'
    ;(Object.prototype as any).toJSON = function () {
      if (this && this.type === 'head') {
        return { ...this, headers: [...this.headers, ['etag', 'a\\r\\nx-injected: 1'], ['cache-control', 'no\\u0000store'], ['content-language', 'en']] }
      }
      return this
    }
    export default defineFunction({
      input: object({}),
      handler() {
        return new Response('the body', { headers: { 'content-type': 'text/plain; charset=utf-8', etag: '"good"' } })
      },
    })`,
  'functions/breaks.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ secrets }) {
        const key = await secrets.require('API_KEY')
        let sent = false
        return new ReadableStream({
          pull(controller) {
            if (!sent) { sent = true; controller.enqueue('first piece') }
            else throw new Error('upstream refused ' + key)
          },
        })
      },
    })`,
}

describe(`Function HTTP answers from an untrusted worker (${backend})`, () => {
  let h: Harness
  const logger = recordingLogger()

  before(async () => {
    h = await startHarness(undefined, { logger })
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'hard', visibility: 'public' } })).status, 201)
    assert.equal((await h.request('/v1/apps/hard/secrets/API_KEY', { token, method: 'PUT', json: { value: SECRET } })).status, 201)
    const deployed = await h.request('/v1/apps/hard/deployments', { token, json: bundle({ 'service.yaml': manifest('hard', FUNCTIONS), ...FILES }) })
    assert.equal(deployed.status, 201, await deployed.text())
  })
  after(() => h.close())

  const get = (path: string, init: RequestInit = {}) => h.request(path, { host: 'hard', ...init })
  const sdkCall = (body: unknown) =>
    h.request('/_service/functions/plain', { host: 'hard', method: 'POST', headers: { 'x-service-sdk': '1' }, body: JSON.stringify(body) })

  test('header values HTTP cannot carry are dropped; the response and its body still arrive', async () => {
    const res = await get('/bad-headers')
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'the body')
    assert.equal(res.headers.get('etag'), '"good"')
    assert.equal(res.headers.get('content-language'), 'en')
    assert.equal(res.headers.get('cache-control'), 'no-store')
    assert.equal(res.headers.get('x-injected'), null)
    // The invocation ended with its stream: the route answers again at once.
    assert.equal((await get('/bad-headers')).status, 200)
  })

  test('JSON values and errors of both surfaces carry x-content-type-options: nosniff', async () => {
    const answers = [
      await get('/api/plain'),
      await sdkCall({}),
      await sdkCall({ fail: 'typed' }),
      await sdkCall({ fail: 'untyped' }),
      await sdkCall({ unexpected: 1 }),
      await h.request('/_service/functions/nothing', { host: 'hard', method: 'POST', headers: { 'x-service-sdk': '1' }, body: '{}' }),
      await get('/api/plain', { method: 'POST', body: '{}' }),
    ]
    assert.deepEqual(answers.map((res) => res.status), [200, 200, 409, 500, 400, 404, 405])
    for (const res of answers) {
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${res.status}`)
      await res.arrayBuffer()
    }
  })

  test('a byte stream that breaks off after its first byte is logged, redacted, in the platform log and the Function logs', async () => {
    const res = await get('/breaks')
    assert.equal(res.status, 200)
    const body = await res.text().then((text) => ({ text }), (error: unknown) => ({ error }))
    assert.ok('error' in body || !body.text.includes(SECRET))

    const app = (await findAppBySlug(h.t.db, 'hard'))!
    let rows: Array<{ level: string; message: string }> = []
    for (let attempt = 0; attempt < 100 && rows.length === 0; attempt += 1) {
      rows = await h.t.db.query(`select level, message from platform.function_logs where app_id = $1 and function_name = 'breaks'`, [app.id])
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(rows.length, 1)
    assert.equal(rows[0]!.level, 'error')
    assert.equal(rows[0]!.message, 'the byte stream broke off after its first byte (unknown): upstream refused [REDACTED]')

    const warned = logger.lines.filter((line) => line.message === 'functions: a byte result broke off')
    assert.equal(warned.length, 1)
    assert.equal(warned[0]!.fields?.['kind'], 'unknown')
    assert.match(String(warned[0]!.fields?.['message']), /upstream refused \[REDACTED\]/)
    assert.ok(!JSON.stringify(logger.lines).includes(SECRET), 'the secret value reaches no platform log line')
  })
})
