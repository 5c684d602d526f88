/**
 * In-process caches for rows the request path would otherwise read on every request (apps by
 * slug, verified app tokens), kept correct by change notices on a NOTIFY channel:
 *
 * - whoever changes the rows a cache is built from runs `announceChange` in the same
 *   transaction (or folds `pg_notify` into the changing statement), so every process hears
 *   of it at commit, and none hears of a change that rolled back;
 * - after the commit it calls `dropLocal`, so this process's very next request reads the new
 *   state (its own LISTEN connection hears the NOTIFY only a moment later);
 * - a cache keeps entries only while its LISTEN is in place, empties itself whenever the
 *   subscription is (re)established (notices sent while it was down are lost), drops all
 *   entries on any notice on its channel, and keeps no entry longer than `maxAgeMs` whatever
 *   happens (a bound on staleness if a writer ever forgets to announce).
 *
 * A lookup that was already reading when a change was announced does not store what it read
 * (a generation counter), so a cache never keeps a value older than the last notice.
 */
import type { Db, Queryable } from '../db/db.ts'
import type { Clock } from './clock.ts'

interface Droppable {
  clear(): void
}

/** The caches of this process, by the Db they read and their channel (for `dropLocal`). */
const local = new WeakMap<Db, Map<string, Set<Droppable>>>()

/** Tells every process, when the surrounding transaction commits, that `channel`'s rows changed. */
export async function announceChange(tx: Queryable, channel: string, payload: string): Promise<void> {
  await tx.query('select pg_notify($1, $2)', [channel, payload])
}

/** After committing a change: empties this process's caches on `channel` over `db` now. */
export function dropLocal(db: Db, channel: string): void {
  for (const cache of local.get(db)?.get(channel) ?? []) cache.clear()
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
  let state: 'idle' | 'subscribing' | 'listening' | 'closed' = 'idle'
  let unlisten: (() => Promise<void>) | null = null
  const self: Droppable = {
    clear() {
      generation++
      entries.clear()
    },
  }

  const byChannel = local.get(db) ?? new Map<string, Set<Droppable>>()
  local.set(db, byChannel)
  const registered = byChannel.get(channel) ?? new Set<Droppable>()
  byChannel.set(channel, registered)
  registered.add(self)

  // Subscribes on first use (nothing connects at construction); until the LISTEN is in place
  // lookups read through without storing. A failed subscription is retried on a later lookup.
  let subscription: Promise<void> | null = null
  function subscribe(): Promise<void> {
    state = 'subscribing'
    subscription = db.listen(channel, () => self.clear(), { onListen: () => self.clear() }).then(
      (stop) => {
        if (state === 'closed') return void stop().catch(() => {})
        unlisten = stop
        self.clear()
        state = 'listening'
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
      if (hit && now - hit.storedAt < deps.maxAgeMs) return hit.value
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
      registered.delete(self)
      const stop = unlisten
      unlisten = null
      if (stop) await stop().catch(() => {})
    },
  }
}
