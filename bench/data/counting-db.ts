/**
 * A Db that passes everything through and, while switched on, counts each statement and the
 * time the caller waited for it. The benchmark's profile phase sends one request at a time,
 * so totals divided by the request count are per-request figures.
 */
import { performance } from 'node:perf_hooks'
import type { Db, LoginPool, Queryable, QueryOptions, Row } from '../../packages/platform/src/db/db.ts'
import type { StatementStats } from './protocol.ts'

export interface CountingDb extends Db {
  setCounting(on: boolean): void
  /** The counts since counting was last switched on, most time first. */
  statements(): StatementStats[]
}

function label(sql: string): string {
  return sql.replace(/\s+/g, ' ').trim().slice(0, 110)
}

export function countingDb(db: Db): CountingDb {
  let on = false
  const stats = new Map<string, StatementStats>()
  const record = (key: string, count: number, ms: number) => {
    const entry = stats.get(key) ?? { sql: key, count: 0, ms: 0 }
    entry.count += count
    entry.ms += ms
    stats.set(key, entry)
  }
  /** Runs `run`, timed and counted under `sql` while counting is on. */
  const measure = async <T>(sql: string, run: () => Promise<T>, inner?: { ms: number }): Promise<T> => {
    const t0 = performance.now()
    try {
      return await run()
    } finally {
      const ms = performance.now() - t0
      if (inner) inner.ms += ms
      record(label(sql), 1, ms)
    }
  }
  // Switched off, every call goes straight through: no wrapper promise, so the server under
  // test costs what the platform costs.
  const wrap = (target: Queryable, inner?: { ms: number }): Queryable => ({
    query: <T extends Row>(text: string, params?: readonly unknown[], options?: QueryOptions) =>
      on ? measure(text, () => target.query<T>(text, params, options), inner) : target.query<T>(text, params, options),
    exec: (script: string) => on ? measure(script, () => target.exec(script), inner) : target.exec(script),
  })
  return {
    ...wrap(db),
    kind: db.kind,
    read: <T extends Row>(text: string, params?: readonly unknown[]) => on ? measure(text, () => db.read<T>(text, params)) : db.read<T>(text, params),
    // The driver sends BEGIN and COMMIT itself: two more statements, timed as the
    // transaction's wall time minus the statements run inside it.
    async transaction(fn) {
      if (!on) return db.transaction((tx) => fn(wrap(tx)))
      const inner = { ms: 0 }
      const t0 = performance.now()
      try {
        return await db.transaction((tx) => fn(wrap(tx, inner)))
      } finally {
        record('BEGIN ... COMMIT (sent by the driver around a transaction)', 2, performance.now() - t0 - inner.ms)
      }
    },
    // The data API's per-namespace login pools (PostgreSQL): their statements are counted too.
    ...(db.openLoginPool
      ? {
          openLoginPool(options): LoginPool {
            const pool = db.openLoginPool!(options)
            return {
              query: (text, params, queryOptions) =>
                on ? measure(text, () => pool.query(text, params, queryOptions)) : pool.query(text, params, queryOptions),
              transaction: (fn) => pool.transaction((tx) => fn(wrap(tx))),
              end: (seconds) => pool.end(seconds),
            }
          },
        }
      : {}),
    listen: (channel, onPayload, options) => db.listen(channel, onPayload, options),
    notify: (channel, payload) => db.notify(channel, payload),
    describe: () => db.describe(),
    close: () => db.close(),
    setCounting(value: boolean) {
      if (value) stats.clear()
      on = value
    },
    statements: () => [...stats.values()].sort((a, b) => b.ms - a.ms),
  }
}
