/**
 * Outbound app email across a killed platform process, on one PostgreSQL: messages accepted
 * by ctx.email.send, a real child platform process (test/platform-processes.ts, worker
 * `email`) sending them to a test SMTP server on loopback that holds each message at the end
 * of DATA without answering, the process killed (SIGKILL) before any 250, another process
 * started: every message is delivered exactly once (one copy of each Message-ID at the
 * server), and each attempt cut by the kill is counted once (EMAIL_LEASE_EXPIRED). PostgreSQL
 * only: PGlite is one process's embedded database (the in-process restart test in
 * outbound.test.ts runs on both).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { platformProcesses, type PlatformProcesses } from '../../test/platform-processes.ts'
import { emailBundle } from './test-app.ts'
import { startTestSmtpServer, type TestSmtpServer } from './test-smtp-server.ts'

const SLUG = 'killmail'
const COUNT = 12

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe(`outbound email across platform processes (${backend})`, { skip: backend !== 'postgres' && 'needs PostgreSQL (PGlite is one process)' }, () => {
  let h: Harness
  let smtp: TestSmtpServer
  let processes: PlatformProcesses

  before(async () => {
    smtp = await startTestSmtpServer()
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: emailBundle(SLUG, { inbound: false }) })
    assert.equal(res.status, 201, await res.text())
    processes = await platformProcesses(h, { smtpUrl: smtp.url })
  })
  after(async () => {
    await processes?.close()
    await h?.close()
    await smtp?.close()
  })

  test('a process killed before the SMTP server answers: another delivers every accepted message exactly once', async () => {
    // The child processes use the real clock; so do these rows.
    h.clock.set(new Date())
    const ids: string[] = []
    for (let i = 0; i < COUNT; i++) {
      const res = await h.request('/_service/functions/send', {
        host: SLUG, headers: { 'x-service-sdk': '1' },
        json: { message: JSON.stringify({ from: 'support', to: `r${i}@example.com`, subject: `Message ${i}`, text: `Body ${i}` }) },
      })
      const body = await res.json() as { id: string }
      assert.equal(res.status, 200, JSON.stringify(body))
      ids.push(body.id)
    }
    smtp.hold()
    const doomed = await processes.start('email', 4)
    await waitFor('messages held at the SMTP server', () => smtp.heldCount() >= 2)
    doomed.process.kill('SIGKILL')
    await doomed.exited
    const cut = await h.t.db.query<{ id: string }>(`select id from platform.email_outbox where state = 'sending'`)
    assert.ok(cut.length >= 2, 'the kill interrupted attempts in flight')
    // The killed client's transactions never got their 250: the server forgets them.
    smtp.dropHeld()
    smtp.release()
    assert.equal(smtp.received.length, 0)

    const survivor = await processes.start('email', 4)
    await waitFor('every message sent', async () => {
      const rows = await h.t.db.query<{ state: string }>(`select state from platform.email_outbox where id = any($1::uuid[])`, [ids])
      return rows.every((row) => row.state === 'sent')
    })
    survivor.process.kill('SIGTERM')
    await survivor.exited

    const messageIds = smtp.received.map((mail) => mail.parsed.messageId)
    assert.deepEqual([...messageIds].sort(), ids.map((id) => `<${id}@${SLUG}.localhost>`).sort(), 'each accepted message arrived exactly once')
    const rows = await h.t.db.query<{ id: string; attempts: number; last_error: { code: string } | null }>(
      `select id, attempts, last_error from platform.email_outbox where id = any($1::uuid[])`, [ids])
    for (const { id } of cut) {
      const row = rows.find((r) => r.id === id)!
      assert.equal(row.attempts, 2, 'the attempt cut by the kill counts once, its retry once more')
      assert.equal(row.last_error?.code, 'EMAIL_LEASE_EXPIRED')
    }
    for (const row of rows.filter((r) => !cut.some((c) => c.id === r.id))) assert.equal(row.attempts, 1)
  })
})
