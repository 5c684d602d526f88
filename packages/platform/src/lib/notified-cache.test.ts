import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { openPostgres } from '../db/postgres.ts'
import type { Db } from '../db/db.ts'
import { ManualClock } from './clock.ts'
import { announceChange, createNotifiedCache, dropLocal } from './notified-cache.ts'

const CHANNEL = 'test_cache_changed'

/** A loader that counts its calls and returns whatever `value` holds now. */
function loader(initial: string | null) {
  const calls = { count: 0, value: initial as string | null }
  return { calls, load: async () => { calls.count++; return calls.value } }
}

async function eventually(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 250; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail(`never happened: ${what}`)
}

describe(`in-process caches dropped by change notices (${backend})`, () => {
  let t: TestDb
  const clock = new ManualClock('2026-11-21T12:00:00Z')
  const cache = (db: Db = t.db, options: { maxEntries?: number } = {}) =>
    createNotifiedCache<string>({ db, clock, channel: CHANNEL, maxEntries: options.maxEntries ?? 100, maxAgeMs: 30_000 })
  before(async () => {
    t = await createTestDb()
  })
  after(() => t.cleanup())

  test('once listening, a value is loaded once and then served from memory; null is never kept', async () => {
    const c = cache()
    await c.listening()
    const { calls, load } = loader('v1')
    assert.equal(await c.get('k', load), 'v1')
    calls.value = 'v2'
    assert.equal(await c.get('k', load), 'v1', 'served from memory')
    assert.equal(calls.count, 1)
    const missing = loader(null)
    await c.get('none', missing.load)
    await c.get('none', missing.load)
    assert.equal(missing.calls.count, 2)
    await c.close()
  })

  test('dropLocal after a commit makes the very next lookup in this process read again', async () => {
    const c = cache()
    await c.listening()
    const { calls, load } = loader('before')
    await c.get('k', load)
    calls.value = 'after'
    dropLocal(t.db, CHANNEL)
    assert.equal(await c.get('k', load), 'after')
    await c.close()
  })

  test('a change announced in a committed transaction reaches the cache through its LISTEN', async () => {
    const c = cache()
    await c.listening()
    const { calls, load } = loader('before')
    await c.get('k', load)
    calls.value = 'after'
    await t.db.transaction((tx) => announceChange(tx, CHANNEL, 'k'))
    await eventually(async () => (await c.get('k', load)) === 'after', 'the notice dropped the entry')
    await c.close()
  })

  test('a lookup that was reading when a change was announced does not keep what it read', async () => {
    const c = cache()
    await c.listening()
    const calls = { count: 0 }
    const racing = async () => {
      calls.count++
      if (calls.count === 1) dropLocal(t.db, CHANNEL) // the change lands while this read is in flight
      return `read ${calls.count}`
    }
    assert.equal(await c.get('k', racing), 'read 1')
    assert.equal(await c.get('k', racing), 'read 2', 'the first read was not kept')
    assert.equal(await c.get('k', racing), 'read 2')
    await c.close()
  })

  test('entries expire after maxAgeMs and the oldest is evicted beyond maxEntries', async () => {
    const c = cache(t.db, { maxEntries: 2 })
    await c.listening()
    const { calls, load } = loader('v')
    await c.get('a', load)
    await c.get('b', load)
    await c.get('c', load)
    assert.equal(calls.count, 3)
    await c.get('c', load)
    await c.get('b', load)
    assert.equal(calls.count, 3, 'b and c are kept')
    await c.get('a', load)
    assert.equal(calls.count, 4, 'a was evicted')
    clock.advance(30_000)
    await c.get('a', load)
    assert.equal(calls.count, 5, 'a expired')
    await c.close()
  })

  test('a closed cache keeps nothing and dropLocal no longer reaches it', async () => {
    const c = cache()
    await c.listening()
    await c.close()
    const { calls, load } = loader('v')
    await c.get('k', load)
    await c.get('k', load)
    assert.equal(calls.count, 2)
  })

  test('a cache empties itself when its lost LISTEN connection is re-established (notices may have been missed)', { skip: backend !== 'postgres' && 'PostgreSQL only: PGlite has no connection to lose' }, async () => {
    const c = cache()
    await c.listening()
    const { calls, load } = loader('before')
    await c.get('k', load)
    calls.value = 'changed while nobody listened'
    const killed = await t.db.query<{ pid: number }>(
      `select pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and query ilike 'listen %'`)
    assert.ok(killed.length > 0, 'found the LISTEN connection')
    await t.db.query('select pg_terminate_backend(pid) from pg_stat_activity where pid = any($1::int[])', [killed.map((k) => k.pid)])
    await eventually(async () => (await c.get('k', load)) === 'changed while nobody listened', 'the re-established LISTEN emptied the cache')
    await c.close()
  })

  test('another process (a second connection pool) drops its entries when this one announces a change', { skip: backend !== 'postgres' && 'PostgreSQL only: PGlite is one process' }, async () => {
    const other = openPostgres({ url: t.url!, maxConnections: 2 })
    try {
      const c = cache(other)
      await c.listening()
      const { calls, load } = loader('before')
      await c.get('k', load)
      calls.value = 'after'
      dropLocal(t.db, CHANNEL) // this process's drop does not reach the other pool's cache
      assert.equal(await c.get('k', load), 'before')
      await t.db.transaction((tx) => announceChange(tx, CHANNEL, 'k'))
      await eventually(async () => (await c.get('k', load)) === 'after', 'the other process heard the notice')
      await c.close()
    } finally {
      await other.close()
    }
  })
})
