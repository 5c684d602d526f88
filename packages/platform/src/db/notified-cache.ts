/**
 * In-process caches for rows the request path would otherwise read on every request (apps by
 * slug, verified app tokens), kept correct by change notices on a NOTIFY channel:
 *
 * - whoever changes the rows a cache is built from runs `announceChange` in the same
 *   transaction (or folds `pg_notify` into the changing statement), so every process hears
 *   of it at commit, and none hears of a change that rolled back;
 * - after the commit it calls `dropLocal`, so this process's very next request reads the new
 *   state (its own LISTEN connection hears the NOTIFY only a moment later);
 * - a cache drops all entries on any notice on its channel, empties itself whenever the
 *   subscription is (re)established (notices sent while it was down are lost), and keeps no
 *   entry longer than `maxAgeMs` whatever happens (a bound on staleness if a writer ever
 *   forgets to announce);
 * - a cache keeps entries only while its LISTEN is shown to hear: on PostgreSQL a heartbeat
 *   (one per Db) sends a ping notice on each channel every `PING_EVERY_MS` through the pool,
 *   and a cache whose LISTEN has not heard it back within `PING_WITHIN_MS` (a connection a
 *   NAT or a failover silenced without closing it) empties itself and serves and keeps
 *   nothing until a ping comes back. PGlite runs none: its notices never leave the process.
 *
 * A lookup that was already reading when a change was announced does not store what it read
 * (a generation counter), so a cache never keeps a value older than the last notice.
 */
import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from './db.ts'
import type { Clock } from '../lib/clock.ts'

/** How often each Db pings its channels, and how soon its LISTEN must hear the ping back. */
export const PING_EVERY_MS = 5_000
export const PING_WITHIN_MS = 3_000
/** Heartbeat payloads start with this; caches never drop entries for them. */
const PING = 'ping:'
const MAX_PINGS_IN_FLIGHT = 3

interface Member {
  readonly channel: string
  /** Empties the cache (a change notice, `dropLocal`, a lost or silent LISTEN). */
  clear(): void
  /** Whether its LISTEN is in place, so the heartbeat must prove it still hears. */
  subscribed(): boolean
  /** The heartbeat's check: ping `seq` should have come back by now. */
  expect(seq: number): void
}

/** The caches of this process on one Db, by channel (for `dropLocal`), and its heartbeat. */
interface Watch {
  readonly byChannel: Map<string, Set<Member>>
  /** Names this Db's pings (a process may hold several Dbs on one server). */
  readonly id: string
  /** The number of the last ping (sent, or skipped while the pool held too many). */
  seq: number
  /** Pings whose statement has not completed (a stalled pool holds them). */
  inFlight: number
  timer: ReturnType<typeof setTimeout> | null
}

const watches = new WeakMap<Db, Watch>()

/** Whether a notice is a heartbeat's ping rather than a change. */
export function isPing(payload: string): boolean {
  return payload.startsWith(PING)
}

/** Tells every process, when the surrounding transaction commits, that `channel`'s rows changed. */
export async function announceChange(tx: Queryable, channel: string, payload: string): Promise<void> {
  await tx.query('select pg_notify($1, $2)', [channel, payload])
}

/** After committing a change: empties this process's caches on `channel` over `db` now. */
export function dropLocal(db: Db, channel: string): void {
  for (const cache of watches.get(db)?.byChannel.get(channel) ?? []) cache.clear()
}

function watchOf(db: Db): Watch {
  let watch = watches.get(db)
  if (!watch) {
    watch = { byChannel: new Map(), id: randomUUID().slice(0, 8), seq: 0, inFlight: 0, timer: null }
    watches.set(db, watch)
  }
  return watch
}

/** Starts `db`'s heartbeat unless it runs (PGlite needs none). */
function startHeartbeat(db: Db, watch: Watch): void {
  if (db.kind === 'pglite' || watch.timer) return
  watch.timer = setTimeout(() => ping(db, watch), PING_EVERY_MS - PING_WITHIN_MS)
  watch.timer.unref()
}

/** Pings every channel a subscribed cache listens on, then checks the ping came back to each. */
function ping(db: Db, watch: Watch): void {
  const members = [...watch.byChannel.values()].flatMap((caches) => [...caches]).filter((cache) => cache.subscribed())
  if (members.length === 0) {
    watch.timer = null
    return
  }
  const seq = ++watch.seq
  // A stalled pool holds pings unanswered: at most a few wait at once; a ping not sent is not heard.
  if (watch.inFlight < MAX_PINGS_IN_FLIGHT) {
    watch.inFlight++
    const channels = [...new Set(members.map((cache) => cache.channel))]
    db.query('select pg_notify(channel, $2) from unnest($1::text[]) as channel', [channels, `${PING}${watch.id}:${seq}`])
      .catch(() => {})
      .finally(() => watch.inFlight--)
  }
  watch.timer = setTimeout(() => {
    for (const cache of members) cache.expect(seq)
    watch.timer = setTimeout(() => ping(db, watch), PING_EVERY_MS - PING_WITHIN_MS)
    watch.timer.unref()
  }, PING_WITHIN_MS)
  watch.timer.unref()
}

function leave(watch: Watch, member: Member): void {
  watch.byChannel.get(member.channel)?.delete(member)
  if ([...watch.byChannel.values()].some((caches) => caches.size > 0) || !watch.timer) return
  clearTimeout(watch.timer)
  watch.timer = null
}

export interface NotifiedCache<V> {
  /** The cached value for `key`, else `load()`'s (a null result is never cached). */
  get(key: string, load: () => Promise<V | null>): Promise<V | null>
  /** Resolves once the LISTEN is in place (starting it if need be): from then on values are kept. */
  listening(): Promise<void>
  /** Stops listening and forgets everything; later lookups always load. */
  close(): Promise<void>
}

/**
 * @example
 *   const apps = createNotifiedCache<App>({ db, clock, channel: 'platform_app_changed', maxEntries: 1000, maxAgeMs: 30_000 })
 *   const app = await apps.get(slug, () => findAppBySlug(db, slug))
 */
export function createNotifiedCache<V>(deps: {
  db: Db
  clock: Clock
  channel: string
  maxEntries: number
  maxAgeMs: number
}): NotifiedCache<V> {
  const { db, clock, channel } = deps
  const entries = new Map<string, { value: V; storedAt: number }>()
  let generation = 0
  // 'degraded': subscribed, but the heartbeat's last ping did not come back in time.
  let state: 'idle' | 'subscribing' | 'listening' | 'degraded' | 'closed' = 'idle'
  let unlisten: (() => Promise<void>) | null = null
  const watch = watchOf(db)
  /** The latest ping of this Db heard on this cache's LISTEN (or sent before it was (re)established). */
  let heard = 0
  const self: Member = {
    channel,
    clear() {
      generation++
      entries.clear()
    },
    subscribed: () => state === 'listening' || state === 'degraded',
    expect(seq) {
      if (state !== 'listening' || heard >= seq) return
      state = 'degraded'
      self.clear()
    },
  }
  const byChannel = watch.byChannel.get(channel) ?? new Set<Member>()
  watch.byChannel.set(channel, byChannel)
  byChannel.add(self)

  function onNotice(payload: string) {
    if (!isPing(payload)) return self.clear()
    const [id, seq] = payload.slice(PING.length).split(':')
    if (id !== watch.id) return
    heard = Math.max(heard, Number(seq))
    if (state !== 'degraded') return
    state = 'listening'
    self.clear()
  }
  function onListen() {
    heard = watch.seq
    if (state === 'degraded') state = 'listening'
    self.clear()
  }

  // Subscribes on first use (nothing connects at construction); until the LISTEN is in place
  // lookups read through without storing. A failed subscription is retried on a later lookup.
  let subscription: Promise<void> | null = null
  function subscribe(): Promise<void> {
    state = 'subscribing'
    subscription = db.listen(channel, onNotice, { onListen }).then(
      (stop) => {
        if (state === 'closed') return void stop().catch(() => {})
        unlisten = stop
        heard = watch.seq
        self.clear()
        state = 'listening'
        startHeartbeat(db, watch)
      },
      (error: unknown) => {
        if (state === 'subscribing') state = 'idle'
        subscription = null
        throw error
      },
    )
    subscription.catch(() => {})
    return subscription
  }

  return {
    async get(key, load) {
      if (state === 'idle') void subscribe()
      const now = clock.now().getTime()
      const hit = entries.get(key)
      // A negative age (the clock stepped back) counts as expired, so no entry outlives maxAgeMs.
      if (hit && now >= hit.storedAt && now - hit.storedAt < deps.maxAgeMs) return hit.value
      const before = generation
      const value = await load()
      if (value === null) {
        entries.delete(key)
      } else if (state === 'listening' && generation === before) {
        entries.delete(key)
        if (entries.size >= deps.maxEntries) entries.delete(entries.keys().next().value!)
        entries.set(key, { value, storedAt: now })
      }
      return value
    },
    async listening() {
      if (state === 'closed') throw new Error('the cache is closed')
      await (state === 'idle' ? subscribe() : subscription)
    },
    async close() {
      state = 'closed'
      self.clear()
      leave(watch, self)
      const stop = unlisten
      unlisten = null
      if (stop) await stop().catch(() => {})
    },
  }
}
