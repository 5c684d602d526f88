/**
 * Bounds on `ctx.log` and the secrets behind its redaction, with real Deno (security
 * review, issue #5): an invocation stores at most 1,000 lines and then one saying how
 * many were dropped; lines are kept 14 days; the namespace's redactor is cached but a
 * secret set or removed takes effect on the very next line; the values of one namespace
 * hold at most 256 KiB together; and the worker's console output (read a line at a time)
 * never carries a secret printed inside an object or as a multi-line value.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { LOG_RETENTION_DAYS, purgeFunctionLogs, writeFunctionLogs } from './context-log.ts'
import { MAX_LOG_LINES_PER_INVOCATION } from './host.ts'
import { recordingLogger } from './test-bundle.ts'

const YAML = `functions:
  - name: chatty
    entrypoint: functions/chatty.ts
    access: public
  - name: echo
    entrypoint: functions/echo.ts
    access: public
  - name: console
    entrypoint: functions/console.ts
    access: public
secrets:
  KEY: required
  PEM: required
`

const FILES = {
  'public/index.html': '<h1>n</h1>',
  'functions/chatty.ts': `
    import { defineFunction, number, object } from '@service/server'
    export default defineFunction({ input: object({ lines: number() }), handler({ input, log }) {
      for (let i = 0; i < input.lines; i++) log.info('line ' + i)
      return 'done'
    } })`,
  'functions/echo.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ text: string() }), handler({ input, log }) { log.info(input.text); return 'ok' } })`,
  'functions/console.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), async handler({ secrets }) {
      const key = await secrets.require('KEY')
      const pem = await secrets.require('PEM')
      console.error({ key })
      console.error([key], new Map([[key, 1]]))
      console.log(pem)
      console.log({ pem })
      console.log('console done')
      return 'printed'
    } })`,
}

const KEY = 'sk_live_"q"\\b/ü 42'
const PEM = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nVJTUt9Us8cKjMzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu\n-----END PRIVATE KEY-----'

describe(`ctx.log limits and secret redaction costs (${backend})`, () => {
  let h: Harness
  let token: string
  let app: App
  const logger = recordingLogger()

  before(async () => {
    h = await startHarness(undefined, { logger })
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'noisy', visibility: 'public' } })).status, 201)
    const deployed = await h.request('/v1/apps/noisy/deployments', { token, json: bundle({ 'service.yaml': manifest('noisy', YAML), ...FILES }) })
    assert.equal(deployed.status, 201, await deployed.text())
    app = (await findAppBySlug(h.t.db, 'noisy'))!
  })
  after(async () => {
    await h.close()
  })

  async function run(name: string, input: unknown): Promise<unknown> {
    const host = h.platform.functions
    return await host.run((await host.resolve(app, name))!, { input, user: null, requestId: `req-${name}-${Math.random()}`, awaitLogs: true })
  }
  const putSecret = (name: string, value: string) => h.request(`/v1/apps/noisy/secrets/${name}`, { method: 'PUT', token, json: { value } })
  const linesOf = async (requestId?: string) =>
    await h.t.db.query<{ level: string; message: string; fields: unknown }>(
      `select level, message, fields from platform.function_logs where app_id = $1 and ($2::text is null or request_id = $2) order by created_at, seq`,
      [app.id, requestId ?? null])

  test('one invocation stores at most 1,000 lines, then one line saying how many were dropped', async () => {
    const res = await h.request('/_service/functions/chatty', { host: 'noisy', method: 'POST', body: JSON.stringify({ lines: 5000 }), headers: { 'x-service-sdk': '1' } })
    assert.equal(res.status, 200)
    // The call answered; its lines are written in batches after. Wait for the last one.
    let lines: Awaited<ReturnType<typeof linesOf>> = []
    for (let attempt = 0; attempt < 500; attempt += 1) {
      lines = await linesOf()
      if (lines.some((line) => line.level === 'warn')) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(lines.length, MAX_LOG_LINES_PER_INVOCATION + 1)
    assert.deepEqual(lines.slice(0, 3).map((line) => line.message), ['line 0', 'line 1', 'line 2'], 'in call order')
    assert.equal(lines[MAX_LOG_LINES_PER_INVOCATION - 1]!.message, `line ${MAX_LOG_LINES_PER_INVOCATION - 1}`)
    const last = lines[MAX_LOG_LINES_PER_INVOCATION]!
    assert.equal(last.level, 'warn')
    assert.match(last.message, /^4000 more log lines were dropped/)
    assert.deepEqual(last.fields, { dropped: 4000 })
    // Nothing arrives later.
    assert.deepEqual(await run('chatty', { lines: 1 }), { ok: true, value: 'done' })
    assert.equal((await linesOf()).filter((line) => line.message.startsWith('line ')).length, MAX_LOG_LINES_PER_INVOCATION + 1)
  })

  test('a value set or removed is redacted, or not, from the very next line', async () => {
    const marker = 'tok_abcdef1234'
    const echo = async () => {
      const requestId = `req-echo-${Math.random()}`
      const host = h.platform.functions
      await host.run((await host.resolve(app, 'echo'))!, { input: { text: `using ${marker}` }, user: null, requestId, awaitLogs: true })
      return (await linesOf(requestId)).map((line) => line.message)
    }
    assert.deepEqual(await echo(), [`using ${marker}`])
    assert.equal((await putSecret('KEY', marker)).status, 201)
    assert.deepEqual(await echo(), ['using [REDACTED]'])
    assert.equal((await h.request('/v1/apps/noisy/secrets/KEY', { method: 'DELETE', token })).status, 204)
    assert.deepEqual(await echo(), [`using ${marker}`])
  })

  test('the values of one namespace hold at most 256 KiB together', async () => {
    const big = (tag: string) => tag + 'x'.repeat(64 * 1024 - tag.length)
    for (const name of ['B1', 'B2', 'B3', 'B4']) assert.equal((await putSecret(name, big(name))).status, 201, 'exactly 256 KiB is allowed')
    const over = await putSecret('B5', big('B5'))
    assert.equal(over.status, 400)
    const body = (await over.json()) as { error: { code: string; message: string } }
    assert.equal(body.error.code, 'VALIDATION_FAILED')
    assert.match(body.error.message, /at most 262144 bytes together/)
    assert.ok(!JSON.stringify(body).includes('x'.repeat(64)))
    const listed = (await (await h.request('/v1/apps/noisy/secrets', { token })).json()) as { secrets: { name: string }[] }
    assert.ok(!listed.secrets.some((secret) => secret.name === 'B5'), 'nothing half written')
    for (const name of ['B1', 'B2', 'B3', 'B4']) assert.equal((await h.request(`/v1/apps/noisy/secrets/${name}`, { method: 'DELETE', token })).status, 204)
  })

  test('console output never carries a secret printed inside an object or across lines', async () => {
    assert.equal((await putSecret('KEY', KEY)).status, 201)
    assert.equal((await putSecret('PEM', PEM)).status, 201)
    assert.deepEqual(await run('console', {}), { ok: true, value: 'printed' })
    // Console output reaches the platform log through the worker's stderr, a moment after the result.
    const output = () => logger.lines.filter((line) => line.message === 'function output').map((line) => String(line.fields?.['line']))
    for (let attempt = 0; attempt < 500 && !output().some((line) => line.includes('console done')); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.ok(output().some((line) => line.includes('[REDACTED]')), output().join('\n'))
    const pieces = ['sk_live', ...PEM.split('\n')]
    const leaked = output().filter((line) => pieces.some((piece) => line.includes(piece)))
    assert.deepEqual(leaked, [])
  })

  test('lines older than 14 days are purged; newer ones stay', async () => {
    const source = { appId: app.id, devName: '', releaseId: app.activeReleaseId!, functionName: 'echo', requestId: 'req-retention' }
    await writeFunctionLogs(h.t.db, { clock: h.clock, source, lines: [{ level: 'info', args: ['old line'] }] })
    h.clock.advance(LOG_RETENTION_DAYS * 24 * 60 * 60 * 1000 + 1000)
    await writeFunctionLogs(h.t.db, { clock: h.clock, source, lines: [{ level: 'info', args: ['new line'] }] })
    const kept = await linesOf()
    assert.ok(await purgeFunctionLogs(h.t.db, h.clock) >= 1)
    const left = (await linesOf()).map((line) => line.message)
    assert.deepEqual(left, ['new line'])
    assert.ok(kept.length > 1)
  })
})
