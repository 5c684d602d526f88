import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { ManualClock } from '../lib/clock.ts'
import { silentLogger } from '../lib/logger.ts'
import { latestDevMailTo, listDevMail } from './dev-mailbox.ts'
import { createMailer, type Mailer } from './mailer.ts'

describe(`development mailbox: storing and listing (${backend})`, () => {
  let t: TestDb
  let clock: ManualClock
  let mailer: Mailer
  before(async () => {
    t = await createTestDb()
    clock = new ManualClock('2026-11-21T12:00:00Z')
    mailer = createMailer({ db: t.db, clock, logger: silentLogger, smtpUrl: null, from: 'Service <no-reply@service.test>' })
  })
  beforeEach(() => t.db.query('delete from platform.dev_mail'))
  after(() => t.cleanup())

  test('a message sent without SMTP is stored with the clock time, the sender and both bodies', async () => {
    await mailer.send({ to: 'ana@acme.test', subject: 'Your sign-in link', text: 'Open https://x.test/a', html: '<p>Open</p>' })
    const [mail, ...rest] = await listDevMail(t.db)
    assert.equal(rest.length, 0)
    assert.ok(mail)
    assert.equal(mail.to, 'ana@acme.test')
    assert.equal(mail.from, 'Service <no-reply@service.test>')
    assert.equal(mail.subject, 'Your sign-in link')
    assert.equal(mail.text, 'Open https://x.test/a')
    assert.equal(mail.html, '<p>Open</p>')
    assert.equal(mail.createdAt.toISOString(), '2026-11-21T12:00:00.000Z')
    assert.match(mail.id, /^[0-9a-f-]{36}$/)
  })

  test('a message without an HTML body stores html as null', async () => {
    await mailer.send({ to: 'ana@acme.test', subject: 'Plain', text: 'hello' })
    assert.equal((await listDevMail(t.db))[0]?.html, null)
  })

  test('messages list newest first, and messages stored in the same instant list last-sent first', async () => {
    await mailer.send({ to: 'a@acme.test', subject: 'first', text: '1' })
    clock.advance(60_000)
    await mailer.send({ to: 'b@acme.test', subject: 'second', text: '2' })
    await mailer.send({ to: 'c@acme.test', subject: 'third', text: '3' })
    clock.set('2026-11-21T11:00:00Z') // an earlier clock time lists last, whatever the insertion order
    await mailer.send({ to: 'd@acme.test', subject: 'backdated', text: '4' })
    clock.set('2026-11-21T12:00:00Z')
    assert.deepEqual((await listDevMail(t.db)).map((m) => m.subject), ['third', 'second', 'first', 'backdated'])
  })

  test('the to filter keeps only messages to that address, ignoring case', async () => {
    await mailer.send({ to: 'ana@acme.test', subject: 'for ana 1', text: '1' })
    await mailer.send({ to: 'bo@acme.test', subject: 'for bo', text: '2' })
    await mailer.send({ to: 'Ana@Acme.test', subject: 'for ana 2', text: '3' })
    assert.deepEqual((await listDevMail(t.db, { to: 'ANA@acme.test' })).map((m) => m.subject), ['for ana 2', 'for ana 1'])
    assert.deepEqual(await listDevMail(t.db, { to: 'nobody@acme.test' }), [])
  })

  test('the list holds 50 messages by default and never more than 200', async () => {
    await t.db.query(
      `insert into platform.dev_mail (to_address, from_address, subject, text_body, created_at)
       select 'bulk@acme.test', 'no-reply@service.test', 'bulk ' || n, 'body', $1::timestamptz + n * interval '1 second'
       from generate_series(1, 230) as n`,
      [clock.now()],
    )
    assert.equal((await listDevMail(t.db)).length, 50)
    assert.equal((await listDevMail(t.db, { limit: 7 })).length, 7)
    assert.equal((await listDevMail(t.db, { limit: 1000 })).length, 200)
    assert.equal((await listDevMail(t.db, { limit: 0 })).length, 1)
    assert.equal((await listDevMail(t.db, { limit: 3 }))[0]?.subject, 'bulk 230')
  })

  test('latestDevMailTo returns the newest message to an address, or undefined', async () => {
    await mailer.send({ to: 'ana@acme.test', subject: 'old link', text: 'https://x.test/old' })
    clock.advance(1000)
    await mailer.send({ to: 'ana@acme.test', subject: 'new link', text: 'https://x.test/new' })
    await mailer.send({ to: 'bo@acme.test', subject: 'other', text: 'https://x.test/other' })
    assert.equal((await latestDevMailTo(t.db, 'ana@acme.test'))?.text, 'https://x.test/new')
    assert.equal(await latestDevMailTo(t.db, 'nobody@acme.test'), undefined)
  })
})
