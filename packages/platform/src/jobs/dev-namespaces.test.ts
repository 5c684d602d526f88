// Jobs per app namespace: a development namespace has its own jobs, idempotency keys,
// consumer (from its own active release), schema and queue removals.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { queuesBundle, queuesYaml } from './test-app.ts'

const SLUG = 'devjobs'

describe(`jobs in development namespaces (${backend})`, () => {
  let h: Harness
  let token: string

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: queuesBundle(SLUG) })).status, 201)
    const dev = await h.request(`/v1/apps/${SLUG}/dev/alice/deployments`, { token, json: queuesBundle(SLUG) })
    assert.equal(dev.status, 201, await dev.text())
  })
  after(() => h.close())

  async function produceInDev(queue: string, payload: unknown, key: string): Promise<any> {
    const res = await h.request(`/v1/apps/${SLUG}/dev/alice/functions/produce/invoke`, {
      token, json: { input: { queue, payload: JSON.stringify(payload), options: JSON.stringify({ idempotencyKey: key }) } },
    })
    assert.equal(res.status, 200)
    return await res.json()
  }

  async function produceInProduction(queue: string, payload: unknown, key: string): Promise<{ status: number; body: any }> {
    const res = await h.request('/_service/functions/produce', {
      host: SLUG, headers: { 'x-service-sdk': '1' },
      json: { queue, payload: JSON.stringify(payload), options: JSON.stringify({ idempotencyKey: key }) },
    })
    return { status: res.status, body: await res.json() }
  }

  async function state(id: string): Promise<{ state: string; code: string | null }> {
    const [row] = await h.t.db.query<{ state: string; code: string | null }>(
      `select state, last_error ->> 'code' as code from platform.jobs where id = $1`, [id])
    return row!
  }

  test('the same key in production and in a development namespace makes two jobs, each consumed in its own namespace', async () => {
    const dev = await produceInDev('work', { mode: 'ok' }, 'shared-key')
    assert.equal(dev.ok, true, JSON.stringify(dev))
    const production = await produceInProduction('work', { mode: 'ok', ms: 1 }, 'shared-key')
    assert.equal(production.status, 200, 'a different payload under the same key is fine in another namespace')
    assert.notEqual(production.body.id, dev.value.id)
    for (let i = 0; i < 3; i++) await h.platform.jobs.runDue()
    assert.equal((await state(dev.value.id)).state, 'succeeded')
    assert.equal((await state(production.body.id)).state, 'succeeded')
    const devRuns = await h.t.db.query<{ job_id: string }>('select job_id from app_devjobs__dev_alice.runs')
    const productionRuns = await h.t.db.query<{ job_id: string }>('select job_id from app_devjobs.runs')
    assert.deepEqual(devRuns.map((r) => r.job_id), [dev.value.id])
    assert.deepEqual(productionRuns.map((r) => r.job_id), [production.body.id])
    // The owner API reads one namespace at a time.
    const listed = async (path: string) => ((await (await h.request(path, { token })).json()) as { jobs: { id: string }[] }).jobs.map((j) => j.id)
    assert.deepEqual(await listed(`/v1/apps/${SLUG}/jobs`), [production.body.id])
    assert.deepEqual(await listed(`/v1/apps/${SLUG}/dev/alice/jobs`), [dev.value.id])
    assert.equal((await h.request(`/v1/apps/${SLUG}/dev/alice/jobs/${dev.value.id}`, { token })).status, 200)
    assert.equal((await h.request(`/v1/apps/${SLUG}/jobs/${dev.value.id}`, { token })).status, 404)
    const signals = (await (await h.request(`/v1/apps/${SLUG}/dev/alice/signals`, { token })).json()) as { signals: Record<string, number> }
    assert.equal(signals.signals['jobs.created'], 1)
    const missing = await h.request(`/v1/apps/${SLUG}/dev/bob/jobs`, { token })
    assert.equal(missing.status, 404)
    assert.equal(((await missing.json()) as { error: { code: string } }).error.code, 'DEV_NAMESPACE_NOT_FOUND')
    // ctx.jobs.get sees only its own namespace's jobs.
    const lookup = await h.request('/_service/functions/lookup', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: { id: dev.value.id } })
    assert.deepEqual(await lookup.json(), { job: null })
  })

  test("removing a queue from a development release dead-letters only that namespace's pending jobs", async () => {
    const dev = await produceInDev('backoff', { mode: 'ok' }, 'later')
    const production = await produceInProduction('backoff', { mode: 'ok' }, 'later')
    const redeploy = await h.request(`/v1/apps/${SLUG}/dev/alice/deployments`, { token, json: queuesBundle(SLUG, queuesYaml({ without: 'backoff' })) })
    assert.equal(redeploy.status, 201)
    assert.deepEqual(await state(dev.value.id), { state: 'dead_lettered', code: 'QUEUE_NOT_ACTIVE' })
    assert.deepEqual(await state(production.body.id), { state: 'queued', code: null })
    const refused = await produceInDev('backoff', { mode: 'ok' }, 'after-removal')
    assert.equal(refused.ok, false)
    assert.equal(refused.error.code, 'QUEUE_NOT_DECLARED')
  })
})
