/**
 * Adapter: a PostgreSQL server through the `postgres` driver (DATABASE_URL). A pool of
 * connections; LISTEN/NOTIFY on a dedicated connection the driver manages.
 */
import postgres from 'postgres'
import type { Db, LoginPool, LoginPoolOptions, Queryable, QueryOptions, Row } from './db.ts'

export interface PostgresOptions {
  url: string
  maxConnections?: number
  /**
   * statement_timeout of every connection, as a startup parameter, so the app-SQL wrapper's
   * RESET ALL keeps it: no request, RPC or migration runs longer than this.
   */
  statementTimeoutMs?: number
}

/** int8 as number, json/jsonb parsed; a string bound to json/jsonb is JSON text. */
const TYPES = {
  int8: { to: 20, from: [20], serialize: (v: unknown) => String(v), parse: (v: string) => Number(v) },
  // A string bound to a json/jsonb parameter is JSON text, as PGlite treats it; the driver's
  // default would encode it again into a JSON string value.
  json: {
    to: 3802,
    from: [114, 3802],
    serialize: (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v)),
    parse: (v: string) => JSON.parse(v),
  },
}

export function openPostgres(options: PostgresOptions): Db {
  const sql = postgres(options.url, {
    max: options.maxConnections ?? 10,
    onnotice: () => {},
    types: TYPES,
    connection: {
      application_name: 'service-platform',
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    },
  })
  // Pools where no app SQL ever runs, so named prepared statements are safe on them.
  const platformOnly = (applicationName: string) => postgres(options.url, {
    max: 4,
    idle_timeout: 60,
    onnotice: () => {},
    types: TYPES,
    connection: {
      application_name: applicationName,
      ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    },
  })
  // The platform's own hot statements (QueryOptions.platformPrepared).
  const statements = platformOnly('service-platform-statements')
  const asQueryable = (target: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = [], queryOptions: QueryOptions = {}) {
      if (queryOptions.platformPrepared && target === sql) {
        return (await statements.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true })) as unknown as T[]
      }
      const rows = await target.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
        // Never named prepared statements: app SQL runs on these pooled connections (inside
        // platform_exec) and could replace a named statement with its own, which the
        // platform would then run with its own rights. The wrapper also deallocates all.
        prepare: false,
      })
      return rows as unknown as T[]
    },
    async exec(script: string) {
      await target.unsafe(script)
    },
  })
  // Platform reads only: named prepared statements are safe here because no app SQL ever
  // runs on these connections (runAsRole takes a Queryable, which this is not).
  const reader = platformOnly('service-platform-reads')
  const url = new URL(options.url)
  return {
    kind: 'postgres',
    ...asQueryable(sql),
    read: async <T extends Row>(text: string, params: readonly unknown[] = []) =>
      (await reader.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true })) as unknown as T[],
    async transaction(fn) {
      return (await sql.begin((tx) => fn(asQueryable(tx)))) as Awaited<ReturnType<typeof fn>>
    },
    async listen(channel, onPayload, listenOptions) {
      // The driver re-subscribes after a lost connection and calls onListen again.
      const subscription = await sql.listen(channel, onPayload, listenOptions?.onListen)
      return () => subscription.unlisten()
    },
    async notify(channel, payload) {
      await sql.notify(channel, payload)
    },
    openLoginPool: (login) => openLoginPool(options, login),
    describe: () => `postgres://${url.hostname}:${url.port || 5432}${url.pathname}`,
    async close() {
      await Promise.all([sql.end({ timeout: 5 }), reader.end({ timeout: 5 }), statements.end({ timeout: 5 })])
    },
  }
}

/** Statements one login connection carries at once before the next one is used. */
const MAX_PIPELINED = 16
/** A login connection whose oldest statement in flight has run this long takes no more. */
const STALL_MS = 10

/**
 * A pool logging in as `login.user` to the database of `options.url` (same host, TLS, port).
 *
 * `login.max` connections, each its own one-connection driver pool, so this pool chooses the
 * connection: statements keep going to the same one while it keeps up (fewer than
 * `MAX_PIPELINED` in flight, the oldest sent less than `STALL_MS` ago), where the driver sends
 * those of one turn of the event loop in one write and one backend answers them in one
 * wake-up; then to the connection with the fewest in flight. A slow statement holds up only
 * the statements sent in its first `STALL_MS`; a transaction's connection takes no other
 * statement. The driver's own pool would spread simultaneous statements over idle
 * connections: a write and a backend wake-up each, which on a loaded server cost more than
 * the statement.
 */
function openLoginPool(options: PostgresOptions, login: LoginPoolOptions): LoginPool {
  const connections = Array.from({ length: Math.max(1, login.max) }, () => ({
    sql: postgres(options.url, {
      username: login.user,
      password: login.password,
      max: 1,
      idle_timeout: login.idleSeconds,
      // A busy connection is replaced after this long: what a session accumulated goes with it.
      max_lifetime: login.maxLifetimeSeconds,
      // An unreachable server fails the login soon, so the caller can fall back.
      connect_timeout: login.connectTimeoutSeconds,
      onnotice: () => {},
      types: TYPES,
      connection: {
        application_name: 'service-platform-app',
        search_path: login.searchPath,
        ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
        ...login.settings,
      },
    }),
    /** Statements sent and not answered, transactions included. */
    inFlight: 0,
    /** When each of them was sent, oldest first. */
    sentAt: [] as number[],
    /** In a transaction: the connection is reserved for it, so statements go elsewhere. */
    reserved: false,
  }))
  type Connection = (typeof connections)[number]
  const now = login.now ?? (() => performance.now())
  /** The connection statements go to while it keeps up. */
  let current: Connection | null = null

  const leastBusy = (free: boolean): Connection => {
    let best: Connection | undefined
    for (const c of connections) {
      if (free && c.reserved) continue
      if (!best || c.inFlight < best.inFlight) best = c
    }
    return best ?? leastBusy(false)
  }
  /** Whether `c` takes one more statement: not in a transaction, not full, not stalled. */
  const keepsUp = (c: Connection): boolean =>
    !c.reserved && c.inFlight < MAX_PIPELINED && (c.sentAt.length === 0 || now() - c.sentAt[0]! < STALL_MS)
  const forStatement = (): Connection => {
    if (current === null || !keepsUp(current)) current = leastBusy(true)
    return current
  }
  const track = async <T>(connection: Connection, work: () => Promise<T>): Promise<T> => {
    connection.inFlight++
    connection.sentAt.push(now())
    try {
      return await work()
    } finally {
      connection.inFlight--
      // A connection answers in order: the oldest statement sent is the one done.
      connection.sentAt.shift()
    }
  }
  const run = async <T extends Row>(target: postgres.Sql | postgres.TransactionSql, text: string, params: readonly unknown[],
    prepare: boolean): Promise<T[]> =>
    (await target.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare })) as unknown as T[]
  return {
    query(text, params, queryOptions = {}) {
      const connection = forStatement()
      return track(connection, () => run(connection.sql, text, params, queryOptions.prepare ?? false))
    },
    async transaction(fn) {
      const connection = leastBusy(true)
      return track(connection, async () => {
        connection.reserved = true
        try {
          return (await connection.sql.begin((tx) => fn({
            query: (text, params = []) => run(tx, text, params, false),
            async exec(script) {
              await tx.unsafe(script)
            },
          }))) as Awaited<ReturnType<typeof fn>>
        } finally {
          connection.reserved = false
        }
      })
    },
    async end(timeoutSeconds = 5) {
      await Promise.all(connections.map((c) => c.sql.end({ timeout: timeoutSeconds })))
    },
  }
}
