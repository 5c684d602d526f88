import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Hono } from 'hono'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { renderError } from '../http/server.ts'
import { ManualClock } from '../lib/clock.ts'
import { silentLogger } from '../lib/logger.ts'
import { createMailer } from './mailer.ts'
import { devMailRoutes } from './routes.ts'

interface MessageJson {
  id: string
  to: string
  from: string
  subject: string
  text: string
  html: string | null
  createdAt: string
}

/** The routes mounted the way the platform mounts them, with the platform's error renderer. */
function mailApp(t: TestDb, production: boolean): Hono {
  const app = new Hono()
  app.onError(renderError(silentLogger, production))
  app.route('/_dev/mail', devMailRoutes({ db: t.db, production }))
  return app
}

describe(`/_dev/mail routes (${backend})`, () => {
  let t: TestDb
  let app: Hono
  before(async () => {
    t = await createTestDb()
    app = mailApp(t, false)
    const clock = new ManualClock('2026-11-21T12:00:00Z')
    const mailer = createMailer({ db: t.db, clock, logger: silentLogger, smtpUrl: null, from: 'no-reply@service.test' })
    await mailer.send({ to: 'bo@acme.test', subject: 'Welcome', text: 'Hello Bo' })
    clock.advance(60_000)
    await mailer.send({
      to: 'ana@acme.test',
      subject: '<script>alert(1)</script>',
      text: 'Sign in: https://localhost:8787/sign-in?token=abc&next=%2F.\n<img src=x onerror=alert(2)> javascript:alert(3)',
      html: '<p onclick="alert(4)">Sign in</p>',
    })
  })
  after(() => t.cleanup())

  test('GET /_dev/mail lists every message newest first as JSON', async () => {
    const res = await app.request('/_dev/mail')
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('cache-control'), 'no-store')
    const body = (await res.json()) as { messages: MessageJson[] }
    assert.deepEqual(body.messages.map((m) => m.to), ['ana@acme.test', 'bo@acme.test'])
    const [newest, oldest] = body.messages
    assert.equal(newest?.subject, '<script>alert(1)</script>')
    assert.equal(newest?.from, 'no-reply@service.test')
    assert.equal(newest?.html, '<p onclick="alert(4)">Sign in</p>')
    assert.equal(newest?.createdAt, '2026-11-21T12:01:00.000Z')
    assert.match(newest?.id ?? '', /^[0-9a-f-]{36}$/)
    assert.deepEqual(oldest && { text: oldest.text, html: oldest.html }, { text: 'Hello Bo', html: null })
  })

  test('?to= filters by recipient and ?limit= bounds the list', async () => {
    const filtered = (await (await app.request('/_dev/mail?to=bo@acme.test')).json()) as { messages: MessageJson[] }
    assert.deepEqual(filtered.messages.map((m) => m.subject), ['Welcome'])
    const limited = (await (await app.request('/_dev/mail?limit=1')).json()) as { messages: MessageJson[] }
    assert.deepEqual(limited.messages.map((m) => m.to), ['ana@acme.test'])
    const clamped = await app.request('/_dev/mail?limit=100000')
    assert.equal(clamped.status, 200)
  })

  test('a limit that is not a positive whole number is a 400', async () => {
    for (const limit of ['abc', '0', '-1', '1.5']) {
      const res = await app.request(`/_dev/mail?limit=${limit}`)
      assert.equal(res.status, 400, limit)
      assert.equal(((await res.json()) as { error: { code: string } }).error.code, 'BAD_REQUEST')
    }
  })

  test('GET /_dev/mail/view renders the messages as HTML with everything untrusted escaped', async () => {
    const res = await app.request('/_dev/mail/view')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/)
    assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/)
    const html = await res.text()
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'))
    assert.ok(!html.includes('<script'), 'no script element reaches the page')
    assert.ok(html.includes('&lt;img src=x onerror=alert(2)&gt;'))
    assert.ok(!html.includes('<img'))
    assert.ok(!html.includes('onclick'), 'the HTML body is never rendered')
    assert.ok(html.includes('Hello Bo'))
    assert.ok(html.indexOf('ana@acme.test') < html.indexOf('bo@acme.test'), 'newest first')
    assert.ok(html.includes('2026-11-21T12:01:00.000Z'))
  })

  test('the HTML view makes http(s) links clickable and nothing else', async () => {
    const html = await (await app.request('/_dev/mail/view?to=ana@acme.test')).text()
    const link = 'https://localhost:8787/sign-in?token=abc&amp;next=%2F'
    assert.ok(html.includes(`<a href="${link}" rel="noopener noreferrer">${link}</a>.`), 'the sentence\'s full stop stays outside the link')
    assert.ok(!html.includes('href="javascript:'))
    assert.ok(!html.includes('Hello Bo'), 'the to filter applies to the page too')
  })

  test('an empty mailbox page says so', async () => {
    const html = await (await app.request('/_dev/mail/view?to=nobody@acme.test')).text()
    assert.match(html, /No messages yet/)
  })
})

describe(`/_dev/mail in production mode (${backend})`, () => {
  let t: TestDb
  before(async () => {
    t = await createTestDb()
  })
  after(() => t.cleanup())

  test('both routes answer 404 NOT_FOUND in the error shape', async () => {
    for (const app of [mailApp(t, true), new Hono().route('/_dev/mail', devMailRoutes({ db: t.db, production: true }))]) {
      for (const path of ['/_dev/mail', '/_dev/mail/view', '/_dev/mail?to=ana@acme.test']) {
        const res = await app.request(path)
        assert.equal(res.status, 404, path)
        const body = (await res.json()) as { error: { code: string; message: string } }
        assert.equal(body.error.code, 'NOT_FOUND')
        assert.ok(body.error.message.length > 0)
      }
    }
  })
})
