/**
 * Adapter: the embedded PostgreSQL (PGlite, WASM, in process) with pgvector, persisted in
 * a data directory. PGlite is one session; it serialises queries and transactions itself.
 */
import { mkdirSync } from 'node:fs'
import { PGlite, types } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Db, Queryable, Row } from './db.ts'

export interface PgliteOptions {
  /** Data directory; omitted means in memory. */
  dataDir?: string
  /** A data directory dump (from `dumpDataDir`) to start from, for fast test databases. */
  loadDataDir?: Blob | File
}

const parsers = { [types.INT8]: (value: string) => Number(value) }

export async function openPglite(options: PgliteOptions = {}): Promise<Db & { dump(): Promise<Blob> }> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true })
  const pg = await PGlite.create({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.loadDataDir ? { loadDataDir: options.loadDataDir } : {}),
    extensions: { vector },
    parsers,
  })
  const asQueryable = (target: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<T extends Row>(text: string, params?: readonly unknown[]) {
      const result = await target.query<T>(text, params as unknown[] | undefined)
      return result.rows
    },
    async exec(script: string) {
      await target.exec(script)
    },
  })
  let closed = false
  return {
    kind: 'pglite',
    ...asQueryable(pg),
    read: async <T extends Row>(text: string, params?: readonly unknown[]) => (await pg.query<T>(text, params as unknown[] | undefined)).rows,
    transaction: (fn) => pg.transaction((tx) => fn(asQueryable(tx))),
    async listen(channel, onPayload) {
      const unlisten = await pg.listen(channel, onPayload)
      return async () => {
        if (!closed) await unlisten()
      }
    },
    async notify(channel, payload) {
      await pg.query('select pg_notify($1, $2)', [channel, payload])
    },
    describe: () => (options.dataDir ? `pglite:${options.dataDir}` : 'pglite:memory'),
    async close() {
      if (closed) return
      closed = true
      await pg.close()
    },
    dump: () => pg.dumpDataDir('none'),
  }
}
