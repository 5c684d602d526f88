import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import postgres from 'postgres'
import { randomHex } from '../lib/crypto.ts'
import { bundle, manifest, startHarness } from '../../test/harness.ts'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { capturedLog } from '../../test/captured-log.ts'
import type { Db } from './db.ts'
import { migratePlatform, platformMigrations } from './migrate.ts'
import { openPglite } from './pglite.ts'
import { openPostgres } from './postgres.ts'

/** A database that can be closed and opened again: a PGlite directory or a server database. */
async function reopenable(): Promise<{ open(): Promise<Db>; destroy(): Promise<void> }> {
  const url = process.env.DATABASE_URL
  if (!url) {
    const dir = mkdtempSync(join(tmpdir(), 'svc-pglite-'))
    return { open: () => openPglite({ dataDir: dir }), destroy: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const name = `svc_test_${randomHex(6)}`
  const admin = postgres(url, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const target = new URL(url)
  target.pathname = `/${name}`
  return {
    open: async () => openPostgres({ url: target.toString(), maxConnections: 2 }),
    async destroy() {
      const db = openPostgres({ url: target.toString(), maxConnections: 1 })
      const prefixes = await db.query<{ role_prefix: string }>('select role_prefix from platform.namespaces').catch(() => [])
      await db.close()
      await admin.unsafe(`drop database ${name} with (force)`)
      for (const { role_prefix } of prefixes) {
        for (const role of ['owner', 'user', 'system']) await admin.unsafe(`drop role if exists "${role_prefix}_${role}"`)
      }
      await admin.end()
    },
  }
}

describe(`storage (${backend})`, () => {
  test('two platforms migrating the same database at once apply each migration exactly once, and log each once', async () => {
    const store = await reopenable()
    const first = await store.open()
    const second = backend === 'postgres' ? await store.open() : first
    const log = capturedLog('info')
    try {
      const results = await Promise.all([migratePlatform(first, { logger: log.logger }), migratePlatform(second, { logger: log.logger })])
      const all = platformMigrations().map((m) => m.version)
      assert.deepEqual([...results[0], ...results[1]].sort((a, b) => a - b), all)
      const logged = log.withMessage('platform migration applied')
      assert.deepEqual(logged.map((l) => l.version).sort((a, b) => Number(a) - Number(b)), all)
      assert.deepEqual(logged.map((l) => l.name).sort(), platformMigrations().map((m) => m.name).sort())
      const rows = await first.query<{ version: number }>('select version from platform.schema_migrations order by version')
      assert.deepEqual(rows.map((r) => r.version), all)
      assert.deepEqual(await migratePlatform(first), [])
    } finally {
      await first.close()
      if (second !== first) await second.close()
      await store.destroy()
    }
  })

  test('apps, releases and app data survive a restart of the platform', async () => {
    const store = await reopenable()
    try {
      const db = await store.open()
      await migratePlatform(db)
      const noCleanup: TestDb = { db, cleanup: () => db.close() }
      let h = await startHarness(noCleanup)
      const { token } = await h.createOwner('ana@acme.test')
      assert.equal((await h.request('/v1/apps', { token, json: { slug: 'keep', visibility: 'public' } })).status, 201)
      const deployed = await h.request('/v1/apps/keep/deployments', {
        token,
        json: bundle({
          'service.yaml': manifest('keep'),
          'public/index.html': 'kept',
          'database/migrations/0001_t.sql': "create table t (id int primary key); insert into t values (7);",
        }),
      })
      assert.equal(deployed.status, 201)
      await h.close()

      const reopened = await store.open()
      assert.deepEqual(await migratePlatform(reopened), [])
      h = await startHarness({ db: reopened, cleanup: () => reopened.close() })
      const page = await h.request('/', { host: 'keep' })
      assert.equal(await page.text(), 'kept')
      const me = await h.request('/v1/apps/keep/releases', { token })
      assert.equal(((await me.json()) as { releases: unknown[] }).releases.length, 1)
      const [row] = await reopened.query<{ id: number }>('select id from app_keep.t')
      assert.equal(row!.id, 7)
      await h.close()
    } finally {
      await store.destroy()
    }
  })
})

describe(`value conventions (${backend})`, () => {
  test('a string bound to a jsonb parameter is JSON text on both backends', async () => {
    const t = await createTestDb()
    try {
      const [row] = await t.db.query<{ kind: string; value: unknown }>(
        'select jsonb_typeof($1::jsonb) as kind, $1::jsonb as value', [JSON.stringify({ a: [1, 2] })])
      assert.equal(row!.kind, 'object')
      assert.deepEqual(row!.value, { a: [1, 2] })
    } finally {
      await t.cleanup()
    }
  })
})
