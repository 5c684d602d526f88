/**
 * Adapter: the embedded PostgreSQL (PGlite, WASM, in process) with pgvector, persisted in
 * a data directory. PGlite is one session, run in this thread: while a statement runs,
 * nothing else does, not even the event loop. So app SQL (`appSql`) runs under a statement
 * timeout (`pglite-statement-timeout.ts`): past it the statement fails with 57014 and the
 * session serves the next caller. A statement that catches its cancel has Postgres' backend
 * ended; the database is then opened again from the same data (the data directory, or a dump
 * of the in-memory one) before anything else runs, and listeners subscribe again.
 *
 * Every use of the session takes its turn here, one at a time, so the timer times the
 * statement it was armed for and no other (a query waiting for its turn is not timed).
 */
import { mkdirSync } from 'node:fs'
import { PGlite, messages, parse, protocol, types } from '@electric-sql/pglite'
import { vector } from '@electric-sql/pglite-pgvector'
import type { Logger } from '../lib/logger.ts'
import type { Db, QueryOptions, Queryable, Row } from './db.ts'
import { StatementTimeoutError, statementTimeout, type StatementTimer } from './pglite-statement-timeout.ts'

/** App SQL on PGlite is cancelled after this long unless configured (docs/decisions.md). */
export const DEFAULT_PGLITE_STATEMENT_TIMEOUT_MS = 5_000
const DEFAULT_CANCEL_GRACE_MS = 1_000
/** Closing a session whose backend has ended; it has never taken long, but it must not hang a reopen. */
const CLOSE_ENDED_MS = 5_000

export interface PgliteOptions {
  /** Data directory; omitted means in memory. */
  dataDir?: string
  /** A data directory dump (from `dumpDataDir`) to start from, for fast test databases. */
  loadDataDir?: Blob | File
  /** App SQL (`appSql` queries) is cancelled after this long. Default 5 s. */
  statementTimeoutMs?: number
  /** A cancelled statement still running this long later (it caught the cancel) has its backend ended. Default 1 s. */
  cancelGraceMs?: number
  /** Told when a backend was ended and the database opened again. */
  logger?: Logger
}

export interface PgliteDb extends Db {
  dump(): Promise<Blob>
  /** How often a backend was ended and the database opened again (tests, health). */
  reopens(): number
}

const parsers = { [types.INT8]: (value: string) => Number(value) }

interface Session {
  pg: PGlite
  timer: StatementTimer
}

interface Listener {
  channel: string
  onPayload: (payload: string) => void
  onListen: (() => void) | undefined
  unlisten: (() => Promise<void>) | null
}

export async function openPglite(options: PgliteOptions = {}): Promise<PgliteDb> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true })
  const timeoutMs = options.statementTimeoutMs ?? DEFAULT_PGLITE_STATEMENT_TIMEOUT_MS
  const graceMs = options.cancelGraceMs ?? DEFAULT_CANCEL_GRACE_MS

  async function start(loadDataDir: Blob | File | undefined): Promise<Session> {
    const timeout = statementTimeout({ graceMs })
    const pg = await PGlite.create({
      ...(options.dataDir ? { dataDir: options.dataDir } : {}),
      ...(loadDataDir ? { loadDataDir } : {}),
      extensions: { vector, statementTimeout: timeout.extension },
      parsers,
    })
    try {
      return { pg, timer: timeout.attach(pg) }
    } catch (error) {
      await pg.close()
      throw error
    }
  }

  let session = await start(options.loadDataDir)
  /** The backend has ended: open the database again before the next use. */
  let ended = false
  let reopened = 0
  let closed = false
  let turns: Promise<unknown> = Promise.resolve()
  const listeners = new Set<Listener>()
  /** In memory, the data lives in the ended instance's file system: carried over as a dump. */
  let carried: Blob | undefined

  async function reopen(): Promise<void> {
    const started = Date.now()
    try {
      if (!options.dataDir && !carried) carried = await session.pg.dumpDataDir('none')
      if (!session.pg.closed) {
        await Promise.race([session.pg.close(), new Promise((resolve) => setTimeout(resolve, CLOSE_ENDED_MS).unref())]).catch(() => {})
      }
      await session.timer.close()
      session = await start(carried)
    } catch (error) {
      options.logger?.error('the embedded database could not be opened again after an ended backend; the next request tries again', {
        error: error instanceof Error ? error.message : String(error),
      })
      throw error
    }
    carried = undefined
    ended = false
    reopened++
    // Notices sent meanwhile are lost: onListen tells each subscriber so.
    for (const listener of listeners) {
      listener.unlisten = await session.pg.listen(listener.channel, listener.onPayload)
      listener.onListen?.()
    }
    options.logger?.warn('an app statement caught its cancel past the statement timeout: the embedded database backend was ended and opened again', {
      reopens: reopened, ms: Date.now() - started,
    })
  }

  /** Runs `work` when it is its turn on the session. */
  function exclusive<T>(work: (pg: PGlite) => Promise<T>): Promise<T> {
    const turn = turns.then(async () => {
      if (closed) throw new Error('the database is closed')
      if (ended) await reopen()
      try {
        return await work(session.pg)
      } finally {
        // Right away, so that nothing (listeners included) waits for the next caller.
        if (ended) await reopen().catch(() => {})
      }
    })
    turns = turn.catch(() => {})
    return turn
  }

  /** Runs one statement of app SQL under the timer. */
  async function timed<T>(statement: () => Promise<T>): Promise<T> {
    const timer = session.timer
    timer.arm(timeoutMs)
    let result: { ok: true; value: T } | { ok: false; error: unknown }
    try {
      result = { ok: true, value: await statement() }
    } catch (error) {
      result = { ok: false, error }
    }
    const outcome = timer.disarm()
    if (outcome === 'ended') {
      ended = true
      throw new StatementTimeoutError(result.ok ? {} : { cause: result.error })
    }
    if (result.ok) return result.value
    // Only the cancel the timer raised; an error the app raised itself passes as it is.
    if (outcome === 'cancelled' && isCancel(result.error)) throw new StatementTimeoutError({ cause: result.error })
    throw result.error
  }

  function run<T extends Row>(pg: PGlite, text: string, params: readonly unknown[] | undefined, queryOptions: QueryOptions | undefined): Promise<T[]> {
    const statement = () => oneCall<T>(pg, text, params ?? [])
    return queryOptions?.appSql ? timed(statement) : statement()
  }

  return {
    kind: 'pglite',
    query: (text, params, queryOptions) => exclusive((pg) => run(pg, text, params, queryOptions)),
    exec: (script) => exclusive(async (pg) => {
      await pg.exec(script)
    }),
    read: (text, params) => exclusive((pg) => run(pg, text, params, undefined)),
    transaction: (fn) => exclusive(async (pg) => {
      await pg.exec('begin')
      let open = true
      // The transaction's statements one at a time too (a caller may start several at once).
      let inTurn: Promise<unknown> = Promise.resolve()
      const serial = <T>(work: () => Promise<T>): Promise<T> => {
        if (!open) return Promise.reject(new Error('the transaction has ended'))
        const next = inTurn.then(work)
        inTurn = next.catch(() => {})
        return next
      }
      const tx: Queryable = {
        query: (text, params, queryOptions) => serial(() => run(pg, text, params, queryOptions)),
        exec: (script) => serial(async () => {
          await pg.exec(script)
        }),
      }
      try {
        const result = await fn(tx)
        await inTurn
        open = false
        await pg.exec('commit')
        return result
      } catch (error) {
        open = false
        await inTurn
        if (!ended) await pg.exec('rollback').catch(() => {})
        throw error
      }
    }),
    async listen(channel, onPayload, listenOptions) {
      const listener: Listener = { channel, onPayload, onListen: listenOptions?.onListen, unlisten: null }
      await exclusive(async (pg) => {
        listener.unlisten = await pg.listen(channel, onPayload)
      })
      listeners.add(listener)
      return async () => {
        if (!listeners.delete(listener) || closed) return
        await exclusive(async () => {
          await listener.unlisten?.()
        })
      }
    },
    async notify(channel, payload) {
      await exclusive((pg) => pg.query('select pg_notify($1, $2)', [channel, payload]))
    },
    describe: () => (options.dataDir ? `pglite:${options.dataDir}` : 'pglite:memory'),
    async close() {
      if (closed) return
      await exclusive(async (pg) => {
        closed = true
        listeners.clear()
        await pg.close()
        await session.timer.close()
      }).catch(async (error: unknown) => {
        closed = true
        await session.timer.close()
        throw error
      })
    },
    dump: () => exclusive((pg) => pg.dumpDataDir('none')),
    reopens: () => reopened,
  }
}

/** A query canceled error (the flags the timer raised), as opposed to one the app raised itself. */
function isCancel(error: unknown): boolean {
  return error instanceof Error && (error as Error & { code?: unknown }).code === '57014'
}

const { serialize } = protocol

/**
 * One statement in one call into Postgres: Parse, Bind, Describe, Execute and Sync in one
 * message, the way a driver pipelines them. `pg.query` makes six calls for the same (Parse,
 * Describe the statement for its parameter types, Bind, Describe, Execute, Sync), each with
 * its own trip through PGlite's protocol layer; on a data API request that was about a fifth
 * of the statement's cost (docs/benchmarks.md, "PGlite"). The parameters' types are those
 * Postgres infers, as with `pg.query`; only the text of each value is chosen here, from its
 * JavaScript type, and it is the text `pg.query` would send for it. An array or a plain
 * object needs the parameter's type (an array literal, or JSON) and goes through `pg.query`.
 */
async function oneCall<T extends Row>(pg: PGlite, text: string, params: readonly unknown[]): Promise<T[]> {
  const values: (string | null)[] = []
  for (const param of params) {
    const value = paramText(param)
    if (value === undefined) return (await pg.query<T>(text, params as unknown[])).rows
    values.push(value)
  }
  const parts = [
    serialize.parse({ text }),
    serialize.bind({ values }),
    serialize.describe({ type: 'P' }),
    serialize.execute({}),
    serialize.sync(),
  ]
  const message = new Uint8Array(parts.reduce((length, part) => length + part.length, 0))
  let offset = 0
  for (const part of parts) {
    message.set(part, offset)
    offset += part.length
  }
  let replies: Awaited<ReturnType<PGlite['execProtocolStream']>>
  try {
    replies = await pg.execProtocolStream(message, { syncToFs: false })
  } catch (error) {
    // What pg.query adds to its errors.
    if (error instanceof messages.DatabaseError) Object.assign(error, { query: text, params })
    throw error
  }
  const [result] = parse.parseResults(replies, pg.parsers)
  return (result?.rows ?? []) as T[]
}

/** The text of a parameter as `pg.query` sends it; undefined when that depends on the parameter's type. */
function paramText(value: unknown): string | null | undefined {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'string':
      return value
    case 'number':
    case 'bigint':
    case 'boolean':
      return value.toString()
    case 'object':
      if (value instanceof Date) return value.toISOString()
      if (value instanceof Uint8Array) return `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`
      return undefined
    default:
      return undefined
  }
}
