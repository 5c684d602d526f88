// Push deliveries survive the death of the process sending them (issue 17): notifications
// accepted by ctx.notifications.send are queued in PostgreSQL; a real child platform process
// claims them and POSTs them to the push service on loopback, which holds every answer; the
// process is killed (SIGKILL) before any delivery is recorded; a second process, once the
// leases expire, sends each again and each is delivered (answered 201) exactly once, the
// message decrypting to its own notification. PostgreSQL only: PGlite is one process's database.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { signIn } from '../../test/data-fixture.ts'
import { platformProcesses, type PlatformProcesses } from '../../test/platform-processes.ts'
import { eventually } from '../../test/eventually.ts'
import { pushBundle } from './test-app.ts'
import { browserKeys, decryptPush, startPushService, subscriptionJson, type TestPushService } from './test-push-service.ts'

const SENDS = 5

describe(`push deliveries across a killed process (${backend})`, { skip: backend !== 'postgres' && 'needs PostgreSQL (PGlite is one process)' }, () => {
  let h: Harness
  let service: TestPushService
  let processes: PlatformProcesses

  before(async () => {
    service = await startPushService()
    h = await startHarness(undefined, { push: { allowLoopbackHttp: true } })
    processes = await platformProcesses(h)
    const { token } = await h.createOwner('owner@pushkill.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'pushkill', visibility: 'public' } })).status, 201)
    assert.equal((await h.request('/v1/apps/pushkill/deployments', { token, json: pushBundle('pushkill') })).status, 201)
  })
  after(async () => {
    await processes?.close()
    await h?.close()
    await service?.close()
  })

  test('sends accepted before a kill are each delivered once by the process after it', { timeout: 120_000 }, async () => {
    const ann = await signIn(h, 'pushkill', 'ann@pushkill.test')
    const keys = browserKeys()
    const subscribed = await h.request('/_service/push/subscriptions', {
      host: 'pushkill', headers: { 'x-service-sdk': '1' }, token: ann.accessToken, json: subscriptionJson(service.endpoint('held'), keys),
    })
    assert.equal(subscribed.status, 201)
    // The first process's POSTs are received and never answered.
    service.answer('held', ...Array.from({ length: SENDS }, () => 'hold' as const))
    const ids: string[] = []
    for (let index = 0; index < SENDS; index += 1) {
      const res = await h.request('/_service/functions/notify', {
        host: 'pushkill', headers: { 'x-service-sdk': '1' },
        json: { notification: JSON.stringify({ userId: ann.userId, title: `Message ${index}`, body: 'kept' }) },
      })
      const sent = (await res.json()) as { id: string; subscriptions: number }
      assert.equal(sent.subscriptions, 1)
      ids.push(sent.id)
    }
    // Accepted: durable before any worker runs.
    const queued = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.push_deliveries where state = 'waiting'`)
    assert.equal(queued[0]!.n, SENDS)

    const doomed = await processes.start('push', 8)
    await service.waitFor(SENDS, 30_000)
    doomed.process.kill('SIGKILL')
    await doomed.exited
    const running = await h.t.db.query<{ state: string }>('select state from platform.push_deliveries')
    assert.deepEqual(running.map((row) => row.state), Array.from({ length: SENDS }, () => 'running'), 'nothing was recorded delivered')

    await processes.start('push', 8)
    await eventually(async () => {
      const rows = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.push_deliveries where state = 'delivered'`)
      return rows[0]!.n === SENDS
    }, 'every delivery recorded delivered', 30_000)
    // A moment more: nothing is sent again.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const answered = service.received.slice(SENDS)
    assert.equal(answered.length, SENDS, 'the second process sent each notification once')
    const delivered = answered.map((push) => (JSON.parse(decryptPush(push.body, keys)) as { id: string }).id)
    assert.deepEqual([...delivered].sort(), [...ids].sort())
    const rows = await h.t.db.query<{ attempts: number; last_error: { code: string } | null; payload: unknown }>(
      'select attempts, last_error, payload from platform.push_deliveries')
    for (const row of rows) {
      assert.equal(row.attempts, 2, 'the killed attempt counted once')
      assert.equal(row.last_error?.code, 'PUSH_LEASE_EXPIRED')
      assert.equal(row.payload, null)
    }
  })
})
