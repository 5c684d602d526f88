/**
 * The Functions host with memory budgets (security finding 6, issue 11), on the storage
 * backend under test: a Function that touches 3 x 256 MiB of ArrayBuffers past a 128 MiB
 * budget fails with the memory failure the HTTP layer answers as 502
 * FUNCTION_MEMORY_EXCEEDED, the app's next call works, and a queue consumer that does the
 * same is retried like a crashed attempt, then dead-lettered when its attempts run out.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { createSchemaCache } from '../data-api/index.ts'
import { createJobs } from '../jobs/index.ts'
import { silentLogger } from '../lib/logger.ts'
import { createSecretStore } from '../secrets/index.ts'
import { failureResponse } from './failures.ts'
import { createFunctionHost, type FunctionHost } from './host.ts'

const SLUG = 'hungry'
const YAML = `functions:
  - name: buffers
    entrypoint: functions/buffers.ts
    access: public
  - name: pid
    entrypoint: functions/pid.ts
    access: public
  - name: produce
    entrypoint: functions/produce.ts
    access: public
  - name: heavyJob
    entrypoint: functions/buffers.ts
    access: system
queues:
  - name: heavy
    function: heavyJob
    maxAttempts: 2
    retryDelaySeconds: 5
    timeoutSeconds: 20
`

const FILES = {
  'service.yaml': manifest(SLUG, YAML),
  'public/index.html': '<h1>hungry</h1>',
  'functions/buffers.ts': `
    import { defineFunction, object } from '@service/server'
    const held: Uint8Array[] = []
    export default defineFunction({
      input: object({}),
      async handler() {
        for (let index = 0; index < 3; index += 1) {
          held.push(new Uint8Array(256 * 1024 * 1024).fill(1))
          await new Promise((resolve) => setTimeout(resolve, 0))
        }
        await new Promise(() => {})
      },
    })`,
  'functions/pid.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => ({ pid: Deno.pid }) })`,
  'functions/produce.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ key: string() }), async handler({ input, jobs }) {
      return await jobs.enqueue('heavy', {}, { idempotencyKey: input.key })
    } })`,
}

describe(`Functions host memory budgets (${backend})`, { skip: !existsSync('/proc/self/status') && 'no /proc: only the heap limit applies' }, () => {
  let h: Harness
  let app: App
  let host: FunctionHost
  const bundlesDir = mkdtempSync(join(tmpdir(), 'service-host-memory-'))

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const deployed = await h.request(`/v1/apps/${SLUG}/deployments`, { token, json: bundle(FILES) })
    assert.equal(deployed.status, 201, await deployed.text())
    app = (await findAppBySlug(h.t.db, SLUG))!
    host = createFunctionHost({
      db: h.t.db, clock: h.clock, logger: silentLogger, schemas: createSchemaCache(), bundlesDir, poolSize: 1,
      memoryBudgetMb: 128, maxHeapMb: 64,
      secrets: createSecretStore({ db: h.t.db, clock: h.clock, key: new Uint8Array(32).fill(1) }),
    })
  })
  after(async () => {
    await host.close()
    await h.close()
    rmSync(bundlesDir, { recursive: true, force: true })
  })

  test('a Function over its memory budget fails as FUNCTION_MEMORY_EXCEEDED and the next call runs on a fresh worker', async () => {
    const before = await host.run((await host.resolve(app, 'pid'))!, { input: {}, user: null })
    assert.equal(before.ok, true)
    const result = await host.run((await host.resolve(app, 'buffers'))!, { input: {}, user: null })
    assert.equal(result.ok, false)
    if (result.ok) return
    assert.deepEqual(failureResponse(result.error, { environment: 'production' }), {
      status: 502,
      body: { error: { code: 'FUNCTION_MEMORY_EXCEEDED', message: 'The Function went over its memory limit' } },
    })
    const next = await host.run((await host.resolve(app, 'pid'))!, { input: {}, user: null })
    assert.equal(next.ok, true, JSON.stringify(next))
    assert.notEqual((next as { value: { pid: number } }).value.pid, (before as { value: { pid: number } }).value.pid)
  })

  test('a queue consumer over its memory budget is retried like a crashed attempt, then dead-lettered', async () => {
    const jobs = createJobs({ db: h.t.db, clock: h.clock, logger: silentLogger, functions: host, production: true })
    const produced = await h.request('/_service/functions/produce', { host: SLUG, headers: { 'x-service-sdk': '1' }, json: { key: 'heavy-1' } })
    assert.equal(produced.status, 200, await produced.clone().text())
    const { id } = (await produced.json()) as { id: string }
    const job = async () => {
      const [row] = await h.t.db.query<{ state: string; attempts: number; run_at: Date; last_error: { code: string } | null }>(
        'select state, attempts, run_at, last_error from platform.jobs where id = $1', [id])
      assert.ok(row)
      return row
    }

    assert.equal(await jobs.runDue(), 1)
    const first = await job()
    assert.deepEqual({ state: first.state, attempts: first.attempts, code: first.last_error?.code }, { state: 'retry_wait', attempts: 1, code: 'FUNCTION_MEMORY_EXCEEDED' })
    h.clock.set(new Date(first.run_at))
    assert.equal(await jobs.runDue(), 1)
    const second = await job()
    assert.deepEqual({ state: second.state, attempts: second.attempts, code: second.last_error?.code }, { state: 'dead_lettered', attempts: 2, code: 'FUNCTION_MEMORY_EXCEEDED' })
    await jobs.stop()
  })
})
