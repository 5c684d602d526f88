/**
 * Integration sync across real platform processes (issue 13's evidence: "no overlap under a
 * slow run (two processes)"): two child OS processes (test/platform-processes.ts) run the sync
 * scheduler on one PostgreSQL database, ticking every 200 ms, with the real Functions host and
 * a sync Function that reports each run to this test and is held until released
 * (test-provider.ts). Their clock is real time shifted to just before a minute boundary, so the
 * provider's every-minute schedule comes due within seconds while a run is held. PostgreSQL
 * only: PGlite is one process's embedded database.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { manifest, ownerApi, startHarness, type Harness } from '../../../test/harness.ts'
import { platformProcesses, type PlatformProcesses } from '../../../test/platform-processes.ts'
import { consumerManifest, createApp, createTestConnection, deployApp } from '../../../test/integration-fixture.ts'
import { eventually } from '../../../test/eventually.ts'
import { syncStatus } from './status.ts'
import { providerFiles, startReporter, type SyncReporter } from './test-provider.ts'

/** Where the processes' clock stands when the test starts: 20 s before the 12:01 occurrence. */
const START = Date.parse('2026-11-21T12:00:40Z')

describe(`integration sync across platform processes (${backend})`, { skip: backend !== 'postgres' && 'needs PostgreSQL (PGlite is one process)' }, () => {
  let h: Harness
  let reporter: SyncReporter
  let processes: PlatformProcesses | undefined
  let bob: { token: string; userId: string }

  before(async () => {
    reporter = await startReporter()
    h = await startHarness()
    bob = await h.createOwner('bob@acme.test', 'Acme')
    await createApp(h, bob.token, 'shop')
    await deployApp(h, bob.token, 'shop', providerFiles({ port: reporter.port, sync: { function: 'syncImpl', schedule: '* * * * *' } }))
    await createApp(h, bob.token, 'desk')
    await deployApp(h, bob.token, 'desk', {
      'service.yaml': manifest('desk', consumerManifest({ slots: { shop: { integration: 'orders', capabilities: ['orders.read'] } } }), 'private'),
    })
  })

  after(async () => {
    reporter?.release()
    await processes?.close()
    await h?.close()
    await reporter?.close()
  })

  test('two platform processes run a first binding\'s run once, and an occurrence that comes due during a slow run once after it, never two at once', async () => {
    const offsetMs = START - Date.now()
    const now = () => new Date(Date.now() + offsetMs)
    processes = await platformProcesses(h, { clockOffsetMs: offsetMs })
    // The harness (which makes the connection and the binding) reads the processes' time.
    h.clock.set(now())
    const connectionId = await createTestConnection(h, { userId: bob.userId, kind: 'personal', values: { SHOP_API_KEY: 'sk_live_processes_5d1e' } })
    const row = async () => (await h.t.db.query<{ lease_owner: string | null; next_run_at: Date | null }>(
      'select lease_owner, next_run_at from platform.integration_syncs where connection_id = $1', [connectionId]))[0]
    reporter.setMode('hold')
    h.clock.set(now())
    const bound = await ownerApi(h, bob.token, 'PUT', '/v1/apps/desk/integrations/shop/binding', { connectionId })
    assert.equal(bound.status, 200, bound.text)

    const children = await Promise.all([processes.start('sync', 4), processes.start('sync', 4)])
    await eventually(async () => reporter.active === 1, 'the first run reached the reporter', 60_000)
    const held = (await row())!
    const owner = held.lease_owner ?? ''
    assert.ok(children.some((child) => owner.includes(`:${child.process.pid}:`)), `the run is leased by a child process (${owner})`)
    assert.ok(held.next_run_at !== null)

    // The next occurrence comes due while the first run holds the connection; both processes tick past it.
    const occurrence = new Date(held.next_run_at).getTime()
    await eventually(async () => now().getTime() >= occurrence + 2_000, 'the processes\' clock passed the next occurrence', 90_000)
    assert.equal(reporter.reports.length, 1, 'neither process starts a second run while the first holds the lease')
    assert.equal((await syncStatus(h.t.db, { connectionId, now: now() }))?.running, true)

    reporter.setMode('ok')
    reporter.release()
    await eventually(async () => reporter.reports.length === 2, 'the occurrence that came due during the run ran after it', 30_000)
    await eventually(async () => (await row())?.lease_owner === null, 'the second run ended', 30_000)
    await new Promise((resolve) => setTimeout(resolve, 1_000)) // five more ticks of each process
    assert.ok(now().getTime() < occurrence + 60_000, 'the following occurrence is not due yet')
    assert.equal(reporter.reports.length, 2, 'the first run and the waiting occurrence, each once')
    assert.equal(reporter.maxActive, 1, 'never two runs at once')
    assert.deepEqual(reporter.reports.map((report) => report.integration), [
      { connectionId, trigger: 'sync', operation: null }, { connectionId, trigger: 'sync', operation: null },
    ])
    const status = (await syncStatus(h.t.db, { connectionId, now: now() }))!
    assert.equal(status.lastOutcome, 'succeeded')
    assert.deepEqual(status.nextRunAt, new Date(occurrence + 60_000))
  })
})
