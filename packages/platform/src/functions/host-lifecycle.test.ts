/**
 * The Functions host's pools across deploys, with real Deno (security review, issue #5):
 * a deploy never kills an invocation in flight (the old release's pool drains), a request
 * that read the app before a deploy runs the newer release and never flips the host back
 * to the old one, a late call for a superseded release gets a pool that closes after it,
 * idle pools are closed, and past `maxPools` the least recently used pool goes first. A
 * job attempt running during a deploy is not lost either.
 *
 * A slow Function waits, without timers in the test, for a "gate" secret the test sets
 * once it has done what it must do while the call is in flight.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { createSchemaCache } from '../data-api/index.ts'
import { silentLogger } from '../lib/logger.ts'
import { createSecretStore } from '../secrets/index.ts'
import { createFunctionHost } from './host.ts'
import { recordingLogger } from './test-bundle.ts'

const YAML = `functions:
  - name: slow
    entrypoint: functions/slow.ts
    access: public
  - name: fast
    entrypoint: functions/fast.ts
    access: public
  - name: enqueue
    entrypoint: functions/enqueue.ts
    access: public
  - name: gatedJob
    entrypoint: functions/slow.ts
    access: system
queues:
  - name: gated
    function: gatedJob
    maxAttempts: 1
    timeoutSeconds: 60
secrets:
  GO_A: required
  GO_B: required
  GO_J: required
`

function versionBundle(slug: string, version: number) {
  return bundle({
    'service.yaml': manifest(slug, YAML),
    'public/index.html': '<h1>v</h1>',
    'functions/slow.ts': `
      import { defineFunction, object, string } from '@service/server'
      export default defineFunction({
        input: object({ gate: string() }),
        async handler({ input, secrets, log }) {
          log.info('started ' + input.gate)
          while ((await secrets.get(input.gate)) === null) await new Promise((resolve) => setTimeout(resolve, 20))
          return ${version}
        },
      })`,
    'functions/fast.ts': `
      import { defineFunction, object } from '@service/server'
      export default defineFunction({ input: object({}), async handler() { return ${version} } })`,
    'functions/enqueue.ts': `
      import { defineFunction, object, string } from '@service/server'
      export default defineFunction({ input: object({ gate: string() }), async handler({ input, jobs }) {
        return await jobs.enqueue('gated', { gate: input.gate }, { idempotencyKey: input.gate })
      } })`,
  })
}

describe(`Functions host: pools across deploys (${backend})`, () => {
  let h: Harness
  let token: string

  before(async () => {
    h = await startHarness()
    token = (await h.createOwner('owner@acme.test')).token
    for (const slug of ['versions', 'other']) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
    }
  })
  after(async () => {
    await h.close()
  })

  async function deploy(version: number, slug = 'versions'): Promise<App> {
    const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: versionBundle(slug, version) })
    assert.equal(res.status, 201, await res.text())
    return (await findAppBySlug(h.t.db, slug))!
  }
  const call = (name: string, input: unknown = {}) =>
    h.request(`/_service/functions/${name}`, { host: 'versions', method: 'POST', body: JSON.stringify(input), headers: { 'x-service-sdk': '1' } })
  async function startedLine(gate: string): Promise<void> {
    for (let attempt = 0; attempt < 500; attempt += 1) {
      const rows = await h.t.db.query(`select 1 from platform.function_logs where message = $1`, [`started ${gate}`])
      if (rows.length > 0) return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.fail(`the slow Function never started (${gate})`)
  }
  async function openGate(gate: string): Promise<void> {
    assert.equal((await h.request(`/v1/apps/versions/secrets/${gate}`, { method: 'PUT', token, json: { value: 'open' } })).status, 201)
  }

  test('a call in flight during a deploy finishes on its release; the next call runs the new one', async () => {
    await deploy(1)
    const inflight = call('slow', { gate: 'GO_A' })
    await startedLine('GO_A')
    await deploy(2)
    const fresh = await call('fast')
    assert.equal(fresh.status, 200)
    assert.equal(await fresh.json(), 2)
    await openGate('GO_A')
    const res = await inflight
    assert.equal(res.status, 200, await res.clone().text())
    assert.equal(await res.json(), 1)
  })

  test('a request holding the app from before a deploy runs the newer release and leaves its calls alone', async () => {
    const stale = await deploy(3)
    const fresh = await deploy(4)
    const host = h.platform.functions
    const running = host.run((await host.resolve(fresh, 'slow'))!, { input: { gate: 'GO_B' }, user: null })
    await startedLine('GO_B')
    const late = (await host.resolve(stale, 'fast'))!
    assert.equal(late.releaseId, fresh.activeReleaseId)
    assert.deepEqual(await host.run(late, { input: {}, user: null }), { ok: true, value: 4 })
    assert.equal((await host.resolve(fresh, 'fast'))!.releaseId, fresh.activeReleaseId, 'release 4 stays the one resolved')
    await openGate('GO_B')
    assert.deepEqual(await running, { ok: true, value: 4 })
  })

  test('a job attempt in flight during a deploy succeeds (a maxAttempts: 1 job is not dead-lettered)', async () => {
    await deploy(7)
    const enqueued = await call('enqueue', { gate: 'GO_J' })
    assert.equal(enqueued.status, 200, await enqueued.clone().text())
    const { id } = (await enqueued.json()) as { id: string }
    const attempt = h.platform.jobs.runDue()
    await startedLine('GO_J')
    await deploy(8)
    assert.equal(await (await call('fast')).json(), 8)
    await openGate('GO_J')
    await attempt
    const [job] = await h.t.db.query<{ state: string; attempts: number }>('select state, attempts from platform.jobs where id = $1', [id])
    assert.deepEqual({ ...job }, { state: 'succeeded', attempts: 1 })
  })

  test('a call resolved before a deploy and run after it gets a pool that closes once it ends', async () => {
    const host = h.platform.functions
    const before = (await host.resolve(await deploy(9), 'fast'))!
    const fresh = await deploy(10)
    assert.deepEqual(await host.run((await host.resolve(fresh, 'fast'))!, { input: {}, user: null }), { ok: true, value: 10 })
    assert.deepEqual(await host.run(before, { input: {}, user: null }), { ok: true, value: 9 })
    assert.deepEqual(host.stats(), { live: 1, draining: 0 }, 'only release 10 keeps a pool')
  })

  test('a pool unused for five minutes is closed; the next call starts another', async () => {
    const host = h.platform.functions
    host.reapIdle()
    assert.deepEqual(host.stats(), { live: 1, draining: 0 }, 'a pool just used stays')
    h.clock.advance(5 * 60 * 1000)
    host.reapIdle()
    assert.deepEqual(host.stats(), { live: 0, draining: 0 })
    assert.equal(await (await call('fast')).json(), 10)
    assert.deepEqual(host.stats(), { live: 1, draining: 0 })
  })

  test('past maxPools the least recently used pool is closed', async () => {
    const bundlesDir = mkdtempSync(join(tmpdir(), 'service-host-cap-'))
    const host = createFunctionHost({
      db: h.t.db, clock: h.clock, logger: silentLogger, schemas: createSchemaCache(), bundlesDir, maxPools: 1,
      secrets: createSecretStore({ db: h.t.db, clock: h.clock, key: new Uint8Array(32).fill(1) }),
    })
    try {
      const versions = (await findAppBySlug(h.t.db, 'versions'))!
      const other = await deploy(1, 'other')
      assert.deepEqual(await host.run((await host.resolve(versions, 'fast'))!, { input: {}, user: null }), { ok: true, value: 10 })
      h.clock.advance(1000)
      assert.deepEqual(await host.run((await host.resolve(other, 'fast'))!, { input: {}, user: null }), { ok: true, value: 1 })
      assert.deepEqual(host.stats(), { live: 1, draining: 0 })
      assert.deepEqual(await host.run((await host.resolve(versions, 'fast'))!, { input: {}, user: null }), { ok: true, value: 10 })
      assert.deepEqual(host.stats(), { live: 1, draining: 0 })
    } finally {
      await host.close()
      rmSync(bundlesDir, { recursive: true, force: true })
    }
  })

  test('with spare workers, each new pool takes a Deno process started before it, and no two pools share one', async () => {
    const bundlesDir = mkdtempSync(join(tmpdir(), 'service-host-spares-'))
    const logger = recordingLogger()
    const host = createFunctionHost({
      db: h.t.db, clock: h.clock, logger, schemas: createSchemaCache(), bundlesDir, spareWorkers: 1,
      secrets: createSecretStore({ db: h.t.db, clock: h.clock, key: new Uint8Array(32).fill(1) }),
    })
    const started = (message: string) => logger.lines.filter((line) => line.message === message).map((line) => line.fields?.pid)
    try {
      const [firstSpare] = started('spare functions worker started')
      assert.ok(firstSpare !== undefined, 'the spare starts with the host')
      const versions = (await findAppBySlug(h.t.db, 'versions'))!
      const other = (await findAppBySlug(h.t.db, 'other'))!
      assert.deepEqual(await host.run((await host.resolve(versions, 'fast'))!, { input: {}, user: null }), { ok: true, value: 10 })
      assert.deepEqual(await host.run((await host.resolve(other, 'fast'))!, { input: {}, user: null }), { ok: true, value: 1 })
      const spares = started('spare functions worker started')
      const workers = logger.lines.filter((line) => line.message === 'functions worker started')
      assert.equal(workers.length, 2)
      assert.ok(workers.every((line) => typeof line.fields?.spare === 'string'), 'both pools took a spare')
      assert.deepEqual(workers.map((line) => line.fields?.pid), spares.slice(0, 2))
      assert.notEqual(workers[0]?.fields?.spare, workers[1]?.fields?.spare)
    } finally {
      await host.close()
      rmSync(bundlesDir, { recursive: true, force: true })
    }
  })
})
