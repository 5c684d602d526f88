/**
 * Integration sync end to end (spec 2.6 `sync`, 3.2, 4.4, 8) with real Deno Functions: a
 * provider app "shop" whose contract declares a sync, consumer apps "desk" and "desk2" with a
 * slot for it, and a sync Function that reports each run to a server in this test (reached on
 * loopback) and does what the test tells it: succeed, fail, answer unauthorized, or hold
 * until released (test-provider.ts). The scheduler is driven by `tick()` under a ManualClock;
 * processes.test.ts runs it in child platform processes.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb } from '../../../test/test-db.ts'
import { manifest, ownerApi, type Harness } from '../../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../../test/captured-log.ts'
import { consumerManifest, createTestConnection, deployApp } from '../../../test/integration-fixture.ts'
import { eventually } from '../../../test/eventually.ts'
import { AUTH, signedInBrowser } from '../../../test/sign-in-flow.ts'
import { ManualClock } from '../../lib/clock.ts'
import { newSecret } from '../../lib/crypto.ts'
import { findUserById } from '../../identity/index.ts'
import { createProviderInvoker } from '../provider-invoker.ts'
import { findConnection, findPublishedIntegration, replaceCredentials } from '../connections/connections.ts'
import { startPlatform } from '../oauth/test-platform.ts'
import { createSyncScheduler } from './scheduler.ts'
import { syncStatus } from './status.ts'
import { providerFiles, startReporter, type SyncBlock, type SyncReporter } from './test-provider.ts'

const API_KEY = 'sk_live_sync_secret_3f9a1c77e0'
const NEW_KEY = 'sk_live_sync_replaced_b84d2e19'

const EVERY_15_MINUTES: SyncBlock = { function: 'syncImpl', schedule: '*/15 * * * *' }

describe(`integration sync (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let reporter: SyncReporter
  let alice: { token: string; userId: string } // administrator of Acme, owns the provider app
  let bob: { token: string; userId: string } // member of Acme, owns the consumer app and the connection
  let connectionId: string
  const masterKey = new Uint8Array(randomBytes(32))

  const at = (iso: string) => h.clock.set(iso)
  async function tick(platform = h) {
    const done = await platform.platform.sync.tick()
    await platform.platform.sync.idle()
    return done
  }
  const status = () => syncStatus(h.t.db, { connectionId, now: h.clock.now() })
  const bind = async (app = 'desk', id = connectionId) =>
    assert.equal((await ownerApi(h, bob.token, 'PUT', `/v1/apps/${app}/integrations/shop/binding`, { connectionId: id })).status, 200)
  const unbind = async (app = 'desk') => assert.equal((await ownerApi(h, bob.token, 'DELETE', `/v1/apps/${app}/integrations/shop/binding`)).status, 204)
  const deployProvider = (sync: SyncBlock) => deployApp(h, alice.token, 'shop', providerFiles({ port: reporter.port, sync }))

  before(async () => {
    reporter = await startReporter()
    log = capturedLog('debug')
    h = await startPlatform(await createTestDb(), {
      allowNet: ['127.0.0.1'], masterKey, clock: new ManualClock('2026-11-21T12:00:00Z'), operatorKey: newSecret('svc_operator_'), logger: log.logger,
    })
    alice = await h.createOwner('alice@acme.test', 'Acme')
    bob = await h.createOwner('bob@acme.test', 'Acme')
    assert.equal((await h.request('/v1/apps', { token: alice.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployProvider(EVERY_15_MINUTES)
    for (const desk of ['desk', 'desk2']) {
      assert.equal((await h.request('/v1/apps', { token: bob.token, json: { slug: desk, visibility: 'private' } })).status, 201)
      await deployApp(h, bob.token, desk, {
        'service.yaml': manifest(desk, consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'] } } }), 'private'),
      })
    }
    connectionId = await createTestConnection(h, { userId: bob.userId, kind: 'personal', label: 'Bob\'s shop', values: { SHOP_API_KEY: API_KEY } })
  })
  after(async () => {
    reporter.release()
    await h.close()
    await reporter.close()
  })

  test('a connection syncs only while bound: a first run shortly after the first binding, then at each occurrence, never after the last binding goes', async () => {
    assert.deepEqual(await tick(), { started: 0, skipped: 0 })
    assert.equal(await status(), null, 'an unbound connection has no sync')
    at('2026-11-21T12:20:00Z')
    assert.equal((await tick()).started, 0, '12:15 passed while unbound')
    at('2026-11-21T12:22:00Z')
    await bind()
    at('2026-11-21T12:22:10Z')
    assert.equal((await tick()).started, 1, 'the first binding runs at the next tick, not at the next occurrence')
    assert.equal((await tick()).started, 0, 'the first run runs once')
    assert.equal(reporter.reports.length, 1)
    let s = (await status())!
    assert.equal(s.lastOutcome, 'succeeded')
    assert.deepEqual(s.lastStartedAt, new Date('2026-11-21T12:22:10Z'))
    assert.deepEqual(s.nextRunAt, new Date('2026-11-21T12:30:00Z'), 'then the schedule')
    at('2026-11-21T12:29:59Z')
    assert.equal((await tick()).started, 0)
    assert.equal(reporter.reports.length, 1)

    at('2026-11-21T12:30:00Z')
    assert.equal((await tick()).started, 1)
    assert.equal((await tick()).started, 0, 'an occurrence runs once')
    assert.equal(reporter.reports.length, 2)
    s = (await status())!
    assert.deepEqual(s.lastFinishedAt, new Date('2026-11-21T12:30:00Z'))
    assert.deepEqual(s.nextRunAt, new Date('2026-11-21T12:45:00Z'))
    at('2026-11-21T12:45:30Z')
    assert.equal((await tick()).started, 1)
    assert.equal(reporter.reports.length, 3)

    // Bound into a second app, then unbound from the first: it still syncs, once per occurrence.
    at('2026-11-21T12:46:00Z')
    await bind('desk2')
    assert.equal((await tick()).started, 0, 'a second binding is not a first binding')
    at('2026-11-21T12:50:00Z')
    await unbind('desk')
    at('2026-11-21T13:00:00Z')
    assert.deepEqual(await tick(), { started: 1, skipped: 0 })
    assert.equal(reporter.reports.length, 4)
    // The last binding removed and made again before the next occurrence: the sync never stopped.
    at('2026-11-21T13:02:00Z')
    await unbind('desk2')
    at('2026-11-21T13:03:00Z')
    await bind('desk2')
    assert.deepEqual(await tick(), { started: 0, skipped: 0 }, 'no first run: the schedule continues')
    assert.deepEqual((await status())?.nextRunAt, new Date('2026-11-21T13:15:00Z'))
    at('2026-11-21T13:05:00Z')
    await unbind('desk2')
    at('2026-11-21T13:15:00Z')
    assert.deepEqual(await tick(), { started: 0, skipped: 1 })
    at('2026-11-21T13:30:00Z')
    assert.deepEqual(await tick(), { started: 0, skipped: 0 })
    assert.equal(reporter.reports.length, 4, 'no run after the last binding went')
    s = (await status())!
    assert.equal(s.nextRunAt, null, 'stopped')
    assert.equal(s.lastOutcome, 'succeeded', 'the last sync is still shown')

    // The connection's page shows its managers the last sync.
    const browser = await signedInBrowser(h, 'bob@acme.test')
    const page = await (await browser.fetch(`${AUTH}/connections/${connectionId}`)).text()
    assert.match(page, /<span id="last-sync">2026-11-21 13:00:00 UTC, succeeded <span class="muted">\(stopped until the connection is active and bound into an app\)<\/span><\/span>/)

    // Bound again after the sync stopped: a new first binding.
    at('2026-11-21T13:31:00Z')
    await bind()
    assert.equal((await tick()).started, 1, 'a binding made after the sync stopped runs at once')
    assert.equal((await tick()).started, 0)
    assert.equal(reporter.reports.length, 5)
    assert.deepEqual((await status())?.nextRunAt, new Date('2026-11-21T13:45:00Z'))
  })

  test('the sync Function gets input {}, ctx.integration { connectionId, trigger: sync }, the credential only through ctx.secrets, and may emit', async () => {
    const [report] = reporter.reports
    assert.deepEqual(report, {
      input: {}, integration: { connectionId, trigger: 'sync', operation: null }, key: API_KEY, env: 'denied',
      emitted: 0, // allowed (no slot subscribes, so no delivery)
    })
    assert.ok(!log.text().includes(API_KEY), 'the credential is not logged')
  })

  test('a failed run is not retried: the next occurrence runs', async () => {
    reporter.setMode('fail')
    at('2026-11-21T13:45:00Z')
    assert.equal((await tick()).started, 1)
    let s = (await status())!
    assert.equal(s.lastOutcome, 'failed')
    assert.deepEqual(s.lastError, { code: 'SHOP_BROKE', message: 'the shop could not list its orders' })
    reporter.setMode('ok')
    for (const minute of ['46', '50', '59']) {
      at(`2026-11-21T13:${minute}:00Z`)
      assert.equal((await tick()).started, 0, `no retry at 13:${minute}`)
    }
    at('2026-11-21T14:00:00Z')
    assert.equal((await tick()).started, 1)
    s = (await status())!
    assert.equal(s.lastOutcome, 'succeeded')
    assert.equal(s.lastError, null)
    assert.equal((await findConnection(h.t.db, connectionId))?.status, 'active', 'a failure is not a rejection')
  })

  test('errors.unauthorized marks the connection Reconnect required and stops its sync until someone reconnects it', async () => {
    reporter.setMode('unauthorized')
    at('2026-11-21T14:15:00Z')
    assert.equal((await tick()).started, 1)
    const connection = (await findConnection(h.t.db, connectionId))!
    assert.equal(connection.status, 'reconnect_required')
    assert.equal((await status())?.lastOutcome, 'unauthorized')
    reporter.setMode('ok')
    const runs = reporter.reports.length
    for (const time of ['14:30', '14:45']) {
      at(`2026-11-21T${time}:00Z`)
      assert.equal((await tick()).started, 0, `no run at ${time} while Reconnect required`)
    }
    assert.equal(reporter.reports.length, runs)
    assert.equal((await status())?.nextRunAt, null)

    at('2026-11-21T14:50:00Z')
    const actor = (await findUserById(h.t.db, bob.userId))!
    await replaceCredentials({ db: h.t.db, clock: h.clock, keyring: h.platform.connectionKeyring }, {
      actor, id: connectionId, integration: await findPublishedIntegration(h.t.db, { app: 'shop', integration: 'orders', actor }), values: { SHOP_API_KEY: NEW_KEY },
    })
    assert.equal((await tick()).started, 0, 'reconnecting does not run at once')
    assert.deepEqual((await status())?.nextRunAt, new Date('2026-11-21T15:00:00Z'))
    at('2026-11-21T15:00:00Z')
    assert.equal((await tick()).started, 1)
    assert.equal(reporter.reports.at(-1)?.key, NEW_KEY)
    assert.equal((await status())?.lastOutcome, 'succeeded')
  })

  test('never two runs of one connection: a due occurrence waits for the run in progress, then runs once; an expired lease is taken over', async () => {
    reporter.setMode('hold')
    at('2026-11-21T15:15:00Z')
    const runs = reporter.reports.length
    assert.equal((await h.platform.sync.tick()).started, 1)
    await eventually(async () => reporter.active === 1, 'the held run reached the reporter', 30_000)
    at('2026-11-21T15:30:00Z')
    assert.equal((await h.platform.sync.tick()).started, 0, 'the 15:30 occurrence does not overlap the 15:15 run')
    assert.equal((await status())?.running, true)
    // Held past the Function's own timeoutSeconds (1): a sync run has the full 15 minutes (spec 8).
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    reporter.setMode('ok')
    reporter.release()
    await h.platform.sync.idle()
    assert.equal((await status())?.lastOutcome, 'succeeded', 'not timed out at the Function\'s own 1 second')
    assert.equal(reporter.maxActive, 1)
    assert.equal((await tick()).started, 1, 'the occurrence that came due during the run runs once after it')
    assert.equal((await tick()).started, 0)
    assert.equal(reporter.reports.length, runs + 2)

    // A run past its timeout and grace (its process presumed dead) no longer holds the connection.
    reporter.setMode('hold')
    at('2026-11-21T15:45:00Z')
    assert.equal((await h.platform.sync.tick()).started, 1)
    await eventually(async () => reporter.active === 1, 'the held run reached the reporter', 30_000)
    at('2026-11-21T16:01:00Z')
    assert.equal((await h.platform.sync.tick()).started, 1, 'taken over once the lease (15 minutes + 60 s) expired')
    await eventually(async () => reporter.active === 2, 'the second run reached the reporter', 30_000)
    reporter.setMode('ok')
    reporter.release()
    await h.platform.sync.idle()
    assert.equal(log.withMessage('integration sync: the run ended after its lease was taken over').length, 1)
    assert.equal((await status())?.running, false)
  })

  test('a binding that is only suspended does not count; an inactive provider app stops the sync, which catches up once when it is active again', async () => {
    at('2026-11-21T16:40:00Z')
    assert.equal((await tick()).started, 1, 'the 16:30 occurrence the lease test left due')
    const runs = reporter.reports.length
    const narrowed = await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'people', usePeople: ['alice@acme.test'] })
    assert.equal(narrowed.status, 200, narrowed.text)
    at('2026-11-21T16:45:00Z')
    assert.deepEqual(await tick(), { started: 0, skipped: 1 }, 'bob, who bound the slot, may not use the integration now')
    assert.equal((await ownerApi(h, alice.token, 'PUT', '/v1/apps/shop/integration-audience', { useScope: 'organisation' })).status, 200)
    at('2026-11-21T17:00:00Z')
    assert.equal((await tick()).started, 1, 'restored with the audience')
    assert.equal(reporter.reports.length, runs + 1)

    await h.t.db.query(`update platform.apps set status = 'suspended' where slug = 'shop'`)
    at('2026-11-21T17:15:00Z')
    assert.deepEqual(await tick(), { started: 0, skipped: 1 })
    assert.equal((await status())?.nextRunAt, null, 'stopped while the provider app is not active')
    at('2026-11-21T17:30:00Z')
    assert.deepEqual(await tick(), { started: 0, skipped: 0 })
    await h.t.db.query(`update platform.apps set status = 'active' where slug = 'shop'`)
    at('2026-11-21T17:50:00Z')
    assert.equal((await tick()).started, 1, 'the latest missed occurrence (17:45) runs once')
    assert.equal((await tick()).started, 0)
    assert.deepEqual((await status())?.nextRunAt, new Date('2026-11-21T18:00:00Z'))
    assert.equal(reporter.reports.length, runs + 2)
  })

  test('occurrences follow the contract\'s schedule in its time zone, a provider deploy\'s new schedule, the DST rules, and coalesce after downtime', async () => {
    at('2026-11-21T18:00:00Z')
    await deployProvider({ function: 'syncImpl', schedule: '30 2 * * *', timezone: 'Europe/Berlin' })
    at('2026-11-21T18:05:00Z')
    assert.equal((await tick()).started, 0)
    assert.deepEqual((await status())?.nextRunAt, new Date('2026-11-22T01:30:00Z'), '02:30 in Berlin is 01:30 UTC in winter')
    const runs = reporter.reports.length
    at('2026-11-22T01:29:59Z')
    assert.equal((await tick()).started, 0)
    at('2026-11-22T01:30:00Z')
    assert.equal((await tick()).started, 1)

    // Down from the 22nd to the 27th of March: one run, the latest occurrence of the last 24 hours.
    at('2027-03-27T12:00:00Z')
    assert.equal((await tick()).started, 1)
    assert.equal((await tick()).started, 0)
    assert.equal(reporter.reports.length, runs + 2)
    // On the 28th 02:30 does not exist in Berlin (02:00 -> 03:00): the run is at 03:00 CEST.
    assert.deepEqual((await status())?.nextRunAt, new Date('2027-03-28T01:00:00Z'))
    at('2027-03-28T00:59:00Z')
    assert.equal((await tick()).started, 0)
    at('2027-03-28T01:00:00Z')
    assert.equal((await tick()).started, 1)
    assert.deepEqual((await status())?.nextRunAt, new Date('2027-03-29T00:30:00Z'), '02:30 CEST')
  })

  test('on a daily schedule a first binding runs at the next tick, not at the next day\'s occurrence, exactly once however many schedulers tick, then at each occurrence', async () => {
    at('2027-03-28T09:00:00Z')
    const second = await createTestConnection(h, { userId: bob.userId, kind: 'personal', label: 'Bob\'s second shop', values: { SHOP_API_KEY: NEW_KEY } })
    await bind('desk2', second)
    const secondStatus = () => syncStatus(h.t.db, { connectionId: second, now: h.clock.now() })
    // Two more processes of the deployment: schedulers of their own (own lease owner, own capacity) over the same database.
    const others = [1, 2].map(() => createSyncScheduler({
      db: h.t.db, clock: h.clock, logger: log.logger, keyring: h.platform.connectionKeyring,
      invokeProvider: createProviderInvoker({ db: h.t.db, host: () => h.platform.functions }),
    }))
    const schedulers = [h.platform.sync, ...others]
    const tickAll = async () => {
      const ticks = await Promise.all(schedulers.flatMap((scheduler) => [scheduler.tick(), scheduler.tick()]))
      await Promise.all(schedulers.map((scheduler) => scheduler.idle()))
      return ticks.reduce((sum, done) => sum + done.started, 0)
    }
    try {
      const runs = reporter.reports.length
      at('2027-03-28T09:00:15Z')
      assert.equal(await tickAll(), 1, 'one scheduler claims the first run')
      assert.equal(await tickAll(), 0, 'and it runs once')
      assert.deepEqual(reporter.reports.slice(runs).map((report) => report.integration.connectionId), [second])
      const s = (await secondStatus())!
      assert.deepEqual(s.lastStartedAt, new Date('2027-03-28T09:00:15Z'))
      assert.equal(s.lastOutcome, 'succeeded')
      assert.deepEqual(s.nextRunAt, new Date('2027-03-29T00:30:00Z'), 'then the daily schedule (02:30 CEST)')
      at('2027-03-28T12:00:00Z')
      assert.equal(await tickAll(), 0)

      at('2027-03-29T00:30:00Z')
      assert.equal(await tickAll(), 2, 'each connection runs once at the occurrence')
      assert.deepEqual(reporter.reports.slice(runs + 1).map((report) => report.integration.connectionId).sort(), [connectionId, second].sort())
      assert.deepEqual((await secondStatus())?.nextRunAt, new Date('2027-03-30T00:30:00Z'))
    } finally {
      await Promise.all(others.map((scheduler) => scheduler.stop()))
    }
  })
})
