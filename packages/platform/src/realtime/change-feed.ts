/**
 * The row-change feed of one platform process: hears the change log's notices (LISTEN, and a
 * slow poll in case a notice is lost), gives waiting changes their positions, reads changes
 * past its cursor in batches, and hands each change to the subscribers of its table whose
 * identity may read it: per batch, one statement per distinct identity (row-visibility.ts),
 * never a delivery before that identity's answer. Batches and joins run one at a time, in
 * order, so every subscriber sees its changes in position order, and a joining subscriber
 * with a resume position is replayed what it missed before it takes part in live batches.
 */
import type { Db } from '../db/db.ts'
import type { Logger } from '../lib/logger.ts'
import type { Namespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql } from '../namespaces/namespace-sql.ts'
import {
  logState, POSITION_CHANNEL, purgeChanges, RAW_CHANNEL, readChanges, readTableChanges, sequenceChanges, type LoggedChange,
} from './change-log.ts'
import type { ChangeEvent } from './protocol.ts'
import { askAs, type TableQuestion } from './row-visibility.ts'
import type { TableInfo } from './tables.ts'

/** Whose reads decide a subscriber's deliveries: the data API's identity for the socket's caller. */
export interface ChangeIdentity {
  /** One key per (app, person or anonymous): subscribers with the same key share one statement. */
  key: string
  namespace: Namespace
  claims: Record<string, unknown>
}

export interface DeliveredChange {
  event: ChangeEvent
  table: string
  /** The row's primary key. */
  key: Record<string, unknown>
  /** Inserts and updates: the row as the subscriber's identity read it. Never for deletes. */
  record?: Record<string, unknown>
  position: number
}

export interface ChangeSubscriber {
  identity: ChangeIdentity
  table: TableInfo
  events: ReadonlySet<ChangeEvent>
  filter: { column: string; value: string } | null
  /** Called in position order, only with changes the identity may read (one object per change for an identity's subscribers). */
  deliver(change: DeliveredChange): void
  /** Changes up to `position` could not be checked (the identity's statement failed): they were not delivered. */
  missed(position: number): void
}

export interface ChangeFeedOptions {
  /** Changes read per batch. Default 500. */
  batchSize?: number
  /** Identities checked at once. Default 8 (PostgreSQL) or 1 (PGlite, one session). */
  concurrency?: number
  /** Safety poll while subscribers exist, in case a notice was lost. Default 2 s; 0: none. */
  pollMs?: number
  /** How many changes a resume may replay; beyond, the subscriber is told of a gap. Default 1000. */
  maxReplay?: number
  /** How long the log keeps changes (REALTIME_RESUME_SECONDS). */
  retentionSeconds: number
  /** How often old changes are purged. Default 60 s; 0: only when called. */
  purgeMs?: number
}

export interface ChangeFeed {
  start(): Promise<void>
  stop(): Promise<void>
  /**
   * Adds one join's subscribers: from the feed's current position, or, with `resume`,
   * replaying what they missed after it first. `gap`: the replay was impossible (purged or
   * too long), so they start from `position` and changes in between are lost to them.
   */
  add(subscribers: readonly ChangeSubscriber[], resume: number | null): Promise<{ position: number; gap: boolean }>
  remove(subscribers: Iterable<ChangeSubscriber>): void
  /** Sequences waiting changes and delivers everything up to now (tests; the poll does it too). */
  poll(): Promise<void>
  /** Purges changes past the retention (a timer does it too). */
  purge(): Promise<number>
  /** The last position this process has delivered through. */
  position(): number
  /** Subscribed tables, for the trigger bookkeeping. */
  tables(): { namespace: Namespace; table: string }[]
}

interface Group {
  identity: ChangeIdentity
  changes: LoggedChange[]
  /** Per table: the question, and each subscriber's filter index in it. */
  tables: Map<string, { question: TableQuestion & { upsertKeys: Record<string, unknown>[]; deletedRows: Record<string, unknown>[]; filters: { column: string; value: string }[] }; seen: Set<string>; subscribers: Map<ChangeSubscriber, number> }>
}

export function createChangeFeed(deps: { db: Db; sql: NamespaceSql; logger: Logger } & ChangeFeedOptions): ChangeFeed {
  const { db, logger } = deps
  const batchSize = deps.batchSize ?? 500
  const concurrency = deps.concurrency ?? (db.kind === 'pglite' ? 1 : 8)
  const maxReplay = deps.maxReplay ?? 1000
  /** Subscribers by `schema.table`. */
  const index = new Map<string, Set<ChangeSubscriber>>()
  let cursor = 0
  let started = false
  let stopped = false
  let chain: Promise<unknown> = Promise.resolve()
  let readQueued = false
  let sequencing: Promise<void> | null = null
  let sequenceAgain = false
  const unlisten: (() => Promise<void>)[] = []
  let pollTimer: ReturnType<typeof setInterval> | null = null
  let purgeTimer: ReturnType<typeof setInterval> | null = null

  /** Runs `task` after everything queued before it; its failure is returned, not kept in the chain. */
  function enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = chain.then(task)
    chain = run.catch(() => {})
    return run
  }

  function scheduleRead(): void {
    if (readQueued || stopped || !started) return
    readQueued = true
    void enqueue(async () => {
      readQueued = false
      await readAll()
    }).catch((error: unknown) => logger.error('realtime change read failed', { error: String(error) }))
  }

  function scheduleSequence(): void {
    if (stopped || !started) return
    if (sequencing) {
      sequenceAgain = true
      return
    }
    sequencing = (async () => {
      do {
        sequenceAgain = false
        try {
          await sequenceChanges(db)
          scheduleRead()
        } catch (error) {
          logger.error('realtime change sequencing failed', { error: String(error) })
          return
        }
      } while (sequenceAgain && !stopped)
    })().finally(() => {
      sequencing = null
    })
  }

  function schemas(): string[] {
    return [...new Set([...index.values()].flatMap((subscribers) => [...subscribers].map((s) => s.table.schema)))]
  }

  async function readAll(): Promise<void> {
    for (;;) {
      const changes = await readChanges(db, { after: cursor, limit: batchSize, schemas: schemas() })
      if (changes.length === 0) return
      await deliverBatch(changes, null)
      cursor = changes[changes.length - 1]!.position
      if (changes.length < batchSize) return
      // A turn of the event loop between batches: sockets drain, and one that did not is
      // found too slow by its next send (connection.ts), whatever the storage's awaits do.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** Groups the batch's changes by the identity of the subscribers they concern. */
  function group(changes: readonly LoggedChange[], only: ReadonlySet<ChangeSubscriber> | null): Map<string, Group> {
    const groups = new Map<string, Group>()
    for (const change of changes) {
      const subscribers = index.get(`${change.schema}.${change.table}`)
      const candidates = only ? [...only].filter((s) => s.table.schema === change.schema && s.table.name === change.table) : subscribers ?? []
      for (const subscriber of candidates) {
        if (!subscriber.events.has(change.op)) continue
        if (change.op === 'delete' && change.oldRow === null) continue
        let entry = groups.get(subscriber.identity.key)
        if (!entry) groups.set(subscriber.identity.key, (entry = { identity: subscriber.identity, changes: [], tables: new Map() }))
        if (entry.changes.at(-1) !== change) entry.changes.push(change)
        let table = entry.tables.get(change.table)
        if (!table) {
          table = { question: { table: subscriber.table, upsertKeys: [], deletedRows: [], filters: [] }, seen: new Set(), subscribers: new Map() }
          entry.tables.set(change.table, table)
        }
        if (!table.subscribers.has(subscriber)) {
          const { filter } = subscriber
          let at = -1
          if (filter) {
            at = table.question.filters.findIndex((f) => f.column === filter.column && f.value === filter.value)
            if (at === -1) at = table.question.filters.push(filter) - 1
          }
          table.subscribers.set(subscriber, at)
        }
        const seenKey = `${change.op === 'delete' ? 'd' : 'u'}${change.keyText}`
        if (!table.seen.has(seenKey)) {
          table.seen.add(seenKey)
          if (change.op === 'delete') table.question.deletedRows.push(change.oldRow!)
          else table.question.upsertKeys.push(change.key)
        }
      }
    }
    return groups
  }

  async function checkAndDeliver(entry: Group): Promise<void> {
    const tables = [...entry.tables.values()]
    let answers
    try {
      answers = await askAs({ db, sql: deps.sql }, { namespace: entry.identity.namespace, claims: entry.identity.claims }, tables.map((t) => t.question))
    } catch (error) {
      // Never deliver what was not checked: the subscribers are told they missed changes.
      logger.warn('realtime visibility check failed; its subscribers were sent a gap', {
        schema: entry.identity.namespace.schemaName, error: String(error),
      })
      const last = entry.changes.at(-1)!.position
      for (const table of tables) for (const subscriber of table.subscribers.keys()) subscriber.missed(last)
      return
    }
    const byTable = new Map(tables.map((table, i) => [table.question.table.name, { table, answer: answers[i]! }]))
    for (const change of entry.changes) {
      const found = byTable.get(change.table)
      if (!found) continue
      // One object per change for all of the identity's subscribers (they may share its serialisation).
      let delivered: DeliveredChange | null = null
      for (const [subscriber, filterAt] of found.table.subscribers) {
        if (!subscriber.events.has(change.op)) continue
        if (change.op === 'delete') {
          const deleted = found.answer.deleted.get(change.keyText)
          if (!deleted || (filterAt >= 0 && deleted.filters[filterAt] !== true)) continue
          delivered ??= { event: 'delete', table: change.table, key: change.key, position: change.position }
        } else {
          const row = found.answer.rows.get(change.keyText)
          if (!row || (filterAt >= 0 && row.filters[filterAt] !== true)) continue
          delivered ??= { event: change.op, table: change.table, key: change.key, record: row.record, position: change.position }
        }
        subscriber.deliver(delivered)
      }
    }
  }

  async function deliverBatch(changes: readonly LoggedChange[], only: ReadonlySet<ChangeSubscriber> | null): Promise<void> {
    const groups = [...group(changes, only).values()]
    let next = 0
    const worker = async () => {
      while (next < groups.length) await checkAndDeliver(groups[next++]!)
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, groups.length) }, worker))
  }

  function startTimers(): void {
    if (deps.pollMs !== 0 && !pollTimer) {
      pollTimer = setInterval(() => {
        if (index.size === 0) return
        scheduleSequence()
        scheduleRead()
      }, deps.pollMs ?? 2000)
      pollTimer.unref()
    }
    if (deps.purgeMs !== 0 && !purgeTimer) {
      purgeTimer = setInterval(() => {
        api.purge().catch((error: unknown) => logger.warn('realtime change purge failed', { error: String(error) }))
      }, deps.purgeMs ?? 60_000)
      purgeTimer.unref()
    }
  }

  const api: ChangeFeed = {
    async start() {
      if (started) return
      started = true
      cursor = (await logState(db)).last
      unlisten.push(await db.listen(RAW_CHANNEL, () => scheduleSequence(), { onListen: () => scheduleSequence() }))
      unlisten.push(await db.listen(POSITION_CHANNEL, () => scheduleRead(), { onListen: () => scheduleRead() }))
      startTimers()
      // Changes that waited for a sequencer while no process ran one.
      scheduleSequence()
    },

    async stop() {
      stopped = true
      if (pollTimer) clearInterval(pollTimer)
      if (purgeTimer) clearInterval(purgeTimer)
      await Promise.all(unlisten.splice(0).map((stop) => stop().catch(() => {})))
      await sequencing
      await chain
      index.clear()
    },

    add(subscribers, resume) {
      return enqueue(async () => {
        let gap = false
        if (resume !== null && resume < cursor && subscribers.length > 0) {
          const { purgedThrough } = await logState(db)
          const first = subscribers[0]!
          const tables = [...new Set(subscribers.map((s) => s.table.name))]
          const missed = resume < purgedThrough ? null : await readTableChanges(db, {
            after: resume, through: cursor, schema: first.table.schema, tables, limit: maxReplay + 1,
          })
          if (missed === null || missed.length > maxReplay) gap = true
          else await deliverBatch(missed, new Set(subscribers))
        }
        for (const subscriber of subscribers) {
          const key = `${subscriber.table.schema}.${subscriber.table.name}`
          let set = index.get(key)
          if (!set) index.set(key, (set = new Set()))
          set.add(subscriber)
        }
        return { position: cursor, gap }
      })
    },

    remove(subscribers) {
      for (const subscriber of subscribers) {
        const key = `${subscriber.table.schema}.${subscriber.table.name}`
        const set = index.get(key)
        if (!set) continue
        set.delete(subscriber)
        if (set.size === 0) index.delete(key)
      }
    },

    async poll() {
      scheduleSequence()
      await sequencing
      await enqueue(() => readAll())
    },

    purge: () => purgeChanges(db, deps.retentionSeconds),

    position: () => cursor,

    tables() {
      const seen = new Map<string, { namespace: Namespace; table: string }>()
      for (const set of index.values()) {
        for (const subscriber of set) {
          seen.set(`${subscriber.identity.namespace.id}:${subscriber.table.name}`, { namespace: subscriber.identity.namespace, table: subscriber.table.name })
        }
      }
      return [...seen.values()]
    },
  }
  return api
}
