import assert from 'node:assert/strict'
import net from 'node:net'
import { after, before, describe, test } from 'node:test'
import { backend, createTestDb, type TestDb } from '../../test/test-db.ts'
import { openPostgres } from './postgres.ts'
import { first, type Db } from './db.ts'
import { ManualClock } from '../lib/clock.ts'
import { announceChange, createNotifiedCache, dropLocal, PING_EVERY_MS, PING_WITHIN_MS } from './notified-cache.ts'
import { eventually } from '../../test/eventually.ts'

const CHANNEL = 'test_cache_changed'

/** A loader that counts its calls and returns whatever `value` holds now. */
function loader(initial: string | null) {
  const calls = { count: 0, value: initial as string | null }
  return { calls, load: async () => { calls.count++; return calls.value } }
}

/**
 * A TCP proxy to `target` that can freeze: it then holds every byte in both directions without
 * closing a socket (a network that went silent), and forwards them in order once thawed.
 */
async function freezableProxy(target: URL) {
  let frozen = false
  const held: Array<() => void> = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      sockets.add(from)
      from.on('data', (chunk) => (frozen ? held.push(() => to.write(chunk)) : to.write(chunk)))
      from.on('error', () => {})
      from.on('close', () => to.destroy())
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as net.AddressInfo).port)
  return {
    url: url.toString(),
    freeze: () => void (frozen = true),
    thaw() {
      frozen = false
      for (const forward of held.splice(0)) forward()
    },
    held: () => held.length,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

describe(`in-process caches dropped by change notices (${backend})`, () => {
  let t: TestDb
  const clock = new ManualClock('2026-11-21T12:00:00Z')
  const cache = (db: Db = t.db, options: { maxEntries?: number; channel?: string } = {}) =>
    createNotifiedCache<string>({
      db, clock, channel: options.channel ?? CHANNEL, maxEntries: options.maxEntries ?? 100, maxAgeMs: 30_000,
    })
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

  test('an entry stored before the clock stepped back counts as expired, so none outlives maxAgeMs', async () => {
    const c = cache()
    await c.listening()
    const { calls, load } = loader('v')
    await c.get('k', load)
    clock.advance(-60_000)
    await c.get('k', load)
    assert.equal(calls.count, 2, 'the negative age was not served')
    await c.get('k', load)
    assert.equal(calls.count, 2, 'the entry stored at the new time is kept')
    clock.advance(60_000)
    await c.close()
  })

  test('heartbeat pings on the channel do not empty a cache; any other payload does', async () => {
    const c = cache()
    const witness = cache(t.db, { channel: 'test_cache_witness' })
    await c.listening()
    await witness.listening()
    const { calls, load } = loader('v')
    const seen = loader('w')
    await c.get('k', load)
    await witness.get('k', seen.load)
    await t.db.transaction((tx) => announceChange(tx, CHANNEL, 'ping:another-process:7'))
    // Notices reach one listener in commit order: once the witness hears the later one, c heard the ping.
    await t.db.transaction((tx) => announceChange(tx, 'test_cache_witness', 'x'))
    await eventually(async () => { await witness.get('k', seen.load); return seen.calls.count === 2 }, 'the witness heard its notice')
    await c.get('k', load)
    assert.equal(calls.count, 1, 'the ping did not empty the cache')
    await t.db.transaction((tx) => announceChange(tx, CHANNEL, 'pin'))
    await eventually(async () => { await c.get('k', load); return calls.count === 2 }, 'a real notice emptied it')
    await c.close()
    await witness.close()
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

  test('a cache whose LISTEN goes silent (a network frozen without closing sockets) serves no hits within the heartbeat bound, and keeps entries again once it hears', { skip: backend !== 'postgres' && 'PostgreSQL only: PGlite notices never leave the process' }, async () => {
    await t.db.exec(`create table public.cache_rows (id int primary key, value text not null);
                     insert into public.cache_rows values (1, 'valid')`)
    const proxy = await freezableProxy(new URL(t.url!))
    const other = openPostgres({ url: proxy.url, maxConnections: 2 }) // another process, behind that network
    try {
      const c = cache(other)
      await c.listening()
      let reads = 0
      const load = async () => {
        reads++
        return (await first<{ value: string }>(t.db, 'select value from public.cache_rows where id = 1'))!.value
      }
      assert.equal(await c.get('k', load), 'valid')
      assert.equal(await c.get('k', load), 'valid')
      assert.equal(reads, 1, 'kept while the LISTEN hears')

      // The other process's pool connections are open before the network freezes, as a running
      // process's are: the heartbeat's pings then wait on live sockets. (A connection still
      // starting when the network froze may wait out the driver's connect timeout, 30 s,
      // before pings flow again; in CI this test once saw no recovery within its wait.)
      await Promise.all([other.query('select pg_catalog.pg_sleep(0.05)'), other.query('select pg_catalog.pg_sleep(0.05)')])
      proxy.freeze()
      await t.db.transaction(async (tx) => {
        await tx.query(`update public.cache_rows set value = 'revoked' where id = 1`)
        await announceChange(tx, CHANNEL, 'k')
      })
      assert.equal(await c.get('k', load), 'valid', 'the notice is held by the frozen network')
      await eventually(async () => (await c.get('k', load)) === 'revoked', 'the silent LISTEN was noticed',
        PING_EVERY_MS + PING_WITHIN_MS + 5_000)
      const degraded = reads
      await c.get('k', load)
      await c.get('k', load)
      assert.equal(reads, degraded + 2, 'nothing is kept while no ping comes back')

      proxy.thaw()
      // The pings held by the frozen network drain first (at most MAX_PINGS_IN_FLIGHT wait at
      // once, and no new one is sent meanwhile), then a new one must come back: on a loaded
      // machine that can take several heartbeats more (seen in CI: past one cycle and 5 s,
      // once past three).
      try {
        await eventually(async () => {
          const before = reads
          await c.get('k', load)
          await c.get('k', load)
          return reads === before + 1
        }, 'entries are kept again once a ping came back', 6 * PING_EVERY_MS + PING_WITHIN_MS + 5_000)
      } catch (error) {
        // What the other process's connections were doing, to tell a lost ping from a dead LISTEN.
        const sessions = await t.db.query(
          `select application_name, state, wait_event_type, wait_event, backend_start, state_change, left(query, 80) as query
             from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`)
        throw new Error(`${(error as Error).message}; proxy still holding ${proxy.held()} chunks; sessions: ${JSON.stringify(sessions)}`)
      }
      await c.close()
    } finally {
      proxy.thaw()
      await other.close()
      await proxy.close()
    }
  })
})
