/**
 * The storage interface every feature uses. Two implementations: PGlite (embedded, the
 * default) and a PostgreSQL server through the `postgres` driver. Both speak the same SQL;
 * values come back the same way (int8 as number, timestamptz as Date, json/jsonb parsed).
 */
export type Row = Record<string, unknown>

export interface QueryOptions {
  /**
   * The statement runs an app's SQL (`runAsRole`). On PGlite it is cancelled (57014) after
   * the app statement timeout; on PostgreSQL every statement has the server's statement_timeout.
   */
  appSql?: boolean
  /**
   * The statement is the platform's own SQL, never an app's, and hot (the jobs engine's
   * enqueue): on PostgreSQL it runs as a named prepared statement, one round trip instead of
   * a describe and then an execute, on connections where app SQL never runs (a named
   * statement on a connection that runs app SQL could be replaced by that SQL). Ignored in a
   * transaction (it stays on the transaction's connection) and on PGlite.
   */
  platformPrepared?: boolean
}

export interface Queryable {
  /**
   * One statement with bound parameters ($1, $2, ...). A string bound to a json or jsonb
   * parameter is JSON text (pass `JSON.stringify(value)`), on both backends.
   */
  query<T extends Row = Row>(text: string, params?: readonly unknown[], options?: QueryOptions): Promise<T[]>
  /** A script of several statements without parameters (migrations). */
  exec(script: string): Promise<void>
}

/** Connections that log in as one given role (PostgreSQL only): see `Db.openLoginPool`. */
export interface LoginPoolOptions {
  user: string
  password: string
  /** At most this many connections; each opens on demand and closes after `idleSeconds`. */
  max: number
  idleSeconds: number
  /** `search_path` of every connection, as a startup parameter. */
  searchPath: string
  /** More startup parameters (custom settings such as `request.jwt.claims`). */
  settings?: Record<string, string>
  /** A connection is replaced after this long, busy or not. */
  maxLifetimeSeconds: number
  /** Opening a connection fails after this long. */
  connectTimeoutSeconds: number
  /** Milliseconds, for the pool's stall bound (see `openLoginPool`); `performance.now` unless a test sets it. */
  now?: () => number
}

export interface LoginPool {
  /**
   * One statement with bound parameters. `prepare` makes it a named prepared statement on
   * each connection, reused by the next call with the same text (its plan too, once
   * PostgreSQL settles on a generic one).
   */
  query<T extends Row = Row>(text: string, params: readonly unknown[], options?: { prepare?: boolean }): Promise<T[]>
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /** Lets statements in flight finish (up to `timeoutSeconds`), then closes every connection. */
  end(timeoutSeconds?: number): Promise<void>
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres'
  /**
   * One read of the platform's own tables as a named prepared statement (its plan reused), on
   * connections where app SQL never runs (PostgreSQL; PGlite runs it like `query`). For the
   * hot reads of every request, such as a signed-in caller's app session. Not a Queryable, so
   * it cannot be handed to `runAsRole`: app SQL on a connection with named statements could
   * replace one (docs/decisions.md).
   */
  read<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>
  /** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /**
   * Subscribes to a NOTIFY channel; resolves to the unsubscribe function. `onListen` runs each
   * time the subscription is (re)established: notices sent while it was down are lost.
   */
  listen(
    channel: string,
    onPayload: (payload: string) => void,
    options?: { onListen?: () => void },
  ): Promise<() => Promise<void>>
  notify(channel: string, payload: string): Promise<void>
  /**
   * Opens a pool of connections to the same database as another role (PostgreSQL only;
   * PGlite has one session and no logins).
   */
  openLoginPool?(options: LoginPoolOptions): LoginPool
  /** Where the data lives, without credentials (for health and logs). */
  describe(): string
  close(): Promise<void>
}

/** The first row, or undefined. */
export async function first<T extends Row>(
  db: Queryable,
  text: string,
  params?: readonly unknown[],
): Promise<T | undefined> {
  const rows = await db.query<T>(text, params)
  return rows[0]
}

/** Quotes an SQL identifier (schema, role, table, column). */
export function ident(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"'
}

/** Quotes an SQL string literal (only for DDL where parameters are not allowed). */
export function literal(value: string): string {
  return "'" + value.replace(/'/g, "''") + "'"
}
