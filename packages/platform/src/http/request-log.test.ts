/**
 * The request log: one structured line per request (method, host, path, status, duration,
 * request id) at the level LOG_LEVEL lets through, the id returned as `x-request-id`, and
 * nothing from query strings (sign-in codes, reveal keys) in any log line.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../config.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../test/captured-log.ts'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe(`the request log (${backend})`, () => {
  let t: TestDb
  before(async () => {
    t = await createTestDb()
  })
  after(() => t.cleanup())

  /** A harness on the shared test database whose log is captured at `level`. */
  async function withLog(level: 'debug' | 'info' | 'warn', run: (h: Harness, log: CapturedLog) => Promise<void>): Promise<void> {
    const log = capturedLog(level)
    const h = await startHarness({ db: t.db, cleanup: async () => {} }, { logger: log.logger })
    try {
      await run(h, log)
    } finally {
      await h.close()
    }
  }

  test('a request writes exactly one line with method, host, path, status, duration and request id, the id also in x-request-id', async () => {
    await withLog('info', async (h, log) => {
      const res = await h.request('/v1/apps', { method: 'GET' })
      assert.equal(res.status, 401)
      const lines = log.withMessage('request')
      assert.equal(lines.length, 1, log.text())
      const [line] = lines
      const id = res.headers.get('x-request-id')
      assert.match(id ?? '', UUID)
      assert.equal(line!.level, 'info')
      assert.deepEqual(
        { requestId: line!.requestId, method: line!.method, host: line!.host, path: line!.path, status: line!.status },
        { requestId: id, method: 'GET', host: 'localhost:8787', path: '/v1/apps', status: 401 },
      )
      assert.equal(typeof line!.durationMs, 'number')
      assert.ok((line!.durationMs as number) >= 0)
    })
  })

  test('an app origin and an unknown host are logged too, each request with its own id', async () => {
    await withLog('info', async (h, log) => {
      const app = await h.request('/', { host: 'nosuchapp' })
      const unknown = await h.platform.fetch(new Request('http://elsewhere.example/x'))
      assert.equal(unknown.status, 404)
      const lines = log.withMessage('request')
      assert.deepEqual(lines.map((l) => [l.host, l.path, l.status]), [
        ['nosuchapp.localhost:8787', '/', app.status],
        ['elsewhere.example', '/x', 404],
      ])
      assert.deepEqual(lines.map((l) => l.requestId), [app.headers.get('x-request-id'), unknown.headers.get('x-request-id')])
      assert.notEqual(lines[0]!.requestId, lines[1]!.requestId)
    })
  })

  test('a well-formed incoming x-request-id is kept; a malformed one is replaced by a new id', async () => {
    await withLog('info', async (h, log) => {
      const kept = await h.request('/v1/apps', { headers: { 'x-request-id': 'proxy-7f3a:42' } })
      assert.equal(kept.headers.get('x-request-id'), 'proxy-7f3a:42')
      for (const bad of ['two words', 'x'.repeat(129), '"quoted"', 'line\u0085break']) {
        const replaced = await h.request('/v1/apps', { headers: { 'x-request-id': bad } })
        assert.match(replaced.headers.get('x-request-id') ?? '', UUID, `replaces ${JSON.stringify(bad)}`)
      }
      const ids = log.withMessage('request').map((l) => l.requestId)
      assert.equal(ids[0], 'proxy-7f3a:42')
      assert.ok(ids.slice(1).every((id) => UUID.test(String(id))))
    })
  })

  test('query strings are never logged: sign-in codes and keys in a URL stay out of every line', async () => {
    await withLog('debug', async (h, log) => {
      await h.request('/confirm?t=SECRET_SIGN_IN_TOKEN&code=SECRET_CODE', { host: 'auth' })
      await h.request('/invitations/00000000-0000-4000-8000-000000000000?k=SECRET_INVITE_KEY', { host: 'auth' })
      await h.request('/v1/apps?token=SECRET_IN_QUERY', { headers: { authorization: 'Bearer svc_owner_SECRET_BEARER', cookie: 'svc_session=SECRET_COOKIE' } })
      const lines = log.withMessage('request')
      assert.deepEqual(lines.map((l) => l.path), ['/confirm', '/invitations/00000000-0000-4000-8000-000000000000', '/v1/apps'])
      assert.doesNotMatch(log.text(), /SECRET/, 'no query value, token or cookie in any log line')
    })
  })

  test('LOG_LEVEL=warn drops the info request lines; debug adds the health checks, which info leaves out', async () => {
    const level = (value: string) => loadConfig({ LOG_LEVEL: value }).logLevel
    await withLog(level('warn') as 'warn', async (h, log) => {
      assert.equal((await h.request('/v1/apps')).status, 401)
      assert.equal((await h.request('/v1/health')).status, 200)
      assert.deepEqual(log.lines, [])
    })
    await withLog(level('info') as 'info', async (h, log) => {
      await h.request('/v1/health')
      await h.request('/v1/apps')
      assert.deepEqual(log.withMessage('request').map((l) => [l.level, l.path]), [['info', '/v1/apps']])
    })
    await withLog(level('debug') as 'debug', async (h, log) => {
      await h.request('/v1/health')
      assert.deepEqual(log.withMessage('request').map((l) => [l.level, l.path, l.status]), [['debug', '/v1/health', 200]])
    })
  })
})
