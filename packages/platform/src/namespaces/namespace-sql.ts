/**
 * How the data API's statements reach PostgreSQL as a namespace role. Two paths, one result:
 *
 * - **Login pool** (PostgreSQL): a small pool of connections per namespace role that log in
 *   as that role (`namespace-logins.ts`). No platform session ever runs the app's SQL, so the
 *   statement can be a named prepared statement whose plan PostgreSQL reuses. One round trip:
 *   the statement's first CTE sets `request.jwt.claims` (and read-only for reads) and its value
 *   is computed from that CTE's row, so the setting is in place before any app code runs (RLS
 *   policies, views, functions, triggers). Settings the app's SQL leaves in the session are
 *   the app's own: the claims are set again, transaction-locally, by every statement.
 * - **Wrapper**: the namespace's security-definer function on the platform's own connections
 *   (`runAsRole`). PGlite always; PostgreSQL when the pools' connection budget is spent or a
 *   pool cannot log in (an operator's pg_hba.conf may refuse it), so nothing fails for want
 *   of a pool.
 *
 * Partition pruning is worked out when the executor starts, before that first CTE runs, so
 * for a schema with partitioned tables the claims are set by a statement of their own, in
 * a transaction (`separateClaims`).
 */
import type { Db, LoginPool } from '../db/db.ts'
import { ident } from '../db/db.ts'
import type { Logger } from '../lib/logger.ts'
import { ensureLogin, stopOverdue, loginCredentials, tamperedLogins, terminateSessions, type LoginCredentials } from './namespace-logins.ts'
import { roleName, runAsRole, type Namespace, type NamespaceRole } from './namespaces.ts'

/** The security-definer wrapper that runs app SQL as the target's role (namespaces.ts). */
function wrapperName(target: SqlTarget): string {
  return `platform_exec.${ident(roleName(target.namespace, target.role))}`
}

export interface SqlTarget {
  namespace: Namespace
  role: NamespaceRole
}

/** A statement in parts, `with <ctes> select <value>`; `$1` is the jsonb array of `params`. */
export interface StatementParts {
  ctes: readonly string[]
  value: string
  params: readonly unknown[]
  /**
   * The same answer with its `body` apart, as a text expression: an executor that reads
   * columns (a login pool) selects `text` beside `value` and puts the string in as `body`,
   * so nothing escapes it into the json value. The wrapper, which answers one json value,
   * runs `value`.
   */
  split?: { value: string; text: string }
}

export interface RunOptions {
  /** `request.jwt.claims` (null: none). Ignored with a `gate`: the gate's claims are set. */
  claims: Record<string, unknown> | null
  /** The transaction is read-only before any app code runs. */
  readOnly: boolean
  /** A caller to check in the statement itself, before any app code runs (see `CallerGate`). */
  gate?: CallerGate
}

/**
 * A caller checked in the data statement itself (migrations 0027 and 0033: on a login pool by
 * `platform_gate.<check>_caller`, the session check answering only the app's own user role;
 * on the wrapper path on the platform's connection, in the same statement as the wrapper
 * call), so checking the caller and running the data is one statement. The
 * check raises SQLSTATE `SVA01` (not valid for this app), `SVA02` (a session cookie whose
 * access must be refreshed first) or `SVA03` (a private app not shared with the person)
 * before any app code runs; else its claims are set as `request.jwt.claims`.
 */
export interface CallerGate {
  /**
   * `app_token` with `[appId, tokenSha256Hex]`, `app_session` (a bearer access token) with
   * `[appId, appSessionId, userId, nowIso, appIsPrivate, ownerId]`, or `app_cookie` (the
   * session cookie) with `[appId, cookieSha256Hex, nowIso, refreshByIso, appIsPrivate, ownerId]`.
   */
  check: keyof typeof GATE_CHECKS
  args: readonly unknown[]
  /** Told what the gate answered, once the statement has run. */
  passed?: (answer: GateAnswer) => void
}

export interface GateAnswer {
  /** The app access token's id (`app_token`), else null. */
  tokenId: string | null
}

/** The checks of migrations 0027 and 0033 and their arguments' SQL types. */
const GATE_CHECKS = {
  app_token: ['uuid', 'text'],
  app_session: ['uuid', 'uuid', 'uuid', 'timestamptz', 'boolean', 'uuid'],
  app_cookie: ['uuid', 'text', 'timestamptz', 'timestamptz', 'boolean', 'uuid'],
} as const

/**
 * The check's call with its arguments from `$first` on: `platform_gate` on a login pool
 * (bound to the session's login role), `platform` on the platform's own connections.
 */
function gateCall(gate: CallerGate, on: 'login' | 'platform', first: number): string {
  const types = GATE_CHECKS[gate.check]
  if (!types || gate.args.length !== types.length) throw new Error(`caller gate ${String(gate.check)}: wrong arguments`)
  const args = types.map((type, i) => `$${first + i}::${type}`)
  // The token and cookie checks are the same for both (their argument is the hash of a
  // secret); the session check's `platform_gate` door binds it to the login role, the
  // platform's has none.
  return on === 'login' || gate.check !== 'app_session'
    ? `platform_gate.${gate.check}_caller(${args.join(', ')})`
    : `platform.${gate.check}_caller(${args.join(', ')}, null)`
}

/** Statements run inside one `transaction` call, as its role with its claims. */
export interface AppTransaction {
  statement(parts: StatementParts): Promise<unknown>
  /** `explain (format json) <sql>`, the planner's view of `sql` with `params` as `$1`. */
  explain(sql: string, params: readonly unknown[]): Promise<unknown>
}

export interface NamespaceSql {
  /** One statement in its own transaction; its json value. */
  statement(target: SqlTarget, parts: StatementParts, options: RunOptions & { separateClaims?: boolean }): Promise<unknown>
  /** Several statements in one transaction (a count's explain, a check before commit). */
  transaction<T>(target: SqlTarget, options: RunOptions, fn: (tx: AppTransaction) => Promise<T>): Promise<T>
  /**
   * Checks a gate's caller on its own (one statement on the platform's read pool): for a
   * request that fails before its data statement runs, so the answer to a caller the gate
   * refuses is the gate's, whatever else was wrong with the request.
   */
  checkCaller(gate: CallerGate): Promise<GateAnswer>
  /** Statements each path has run, and the pools open (tests, health). */
  stats(): { login: number; wrapper: number; pools: number }
  /** Puts back login passwords changed outside the platform; closes idle pools. Runs on a timer too. */
  sweep(): Promise<void>
  /**
   * Cancels login statements past the statement timeout, and ends the sessions of those that
   * catch the cancel. Runs every second while this process has pools or login statements run.
   */
  watchdog(): Promise<void>
  close(): Promise<void>
}

export interface NamespaceSqlOptions {
  db: Db
  /** Derives each login's password (a key derived from the master key). */
  loginKey: Uint8Array
  logger: Logger
  /** Connections all login pools of this process may hold together; below `poolSize`, none. */
  connections: number
  /** Connections per namespace role. */
  poolSize: number
  /** The server's statement_timeout; the watchdog cancels login statements one second past it. */
  statementTimeoutMs: number
  /** A pool unused this long is closed. Default 5 minutes. */
  idleMs?: number
  /**
   * Over the budget, a namespace without a pool takes the least recently used pool's place
   * only once that pool has been unused this long; until then the wrapper serves it. Default
   * 5 s: more namespaces in use than pools would otherwise close and open a pool (a login,
   * and every statement prepared again) on nearly every request.
   */
  evictIdleMs?: number
  /** Distinct statements prepared on one pool before it is replaced by a fresh one. Default 256. */
  maxPrepared?: number
  /** How often `sweep` runs. Default 30 s; 0: only when called. */
  sweepIntervalMs?: number
  /** How often `watchdog` runs while pools are open. Default 1 s; 0: only when called. */
  watchdogIntervalMs?: number
  /** A statement still running this long after its cancel has its session ended. Default 4 s. */
  watchdogGraceMs?: number
  now?: () => number
}

interface Entry {
  credentials: LoginCredentials
  target: SqlTarget
  pool: LoginPool
  /** Resolves once the role can log in; false when it cannot (the wrapper serves it). */
  ready: Promise<boolean>
  /** Requests holding this entry (taken in `acquire`, so nothing ends a pool they are about to use). */
  inFlight: number
  lastUsed: number
  /** Statement texts seen once (not prepared yet) and texts prepared on this pool. */
  seen: Map<string, true>
  prepared: Set<string>
}

/**
 * Errors raised while a connection is being opened, so the statement never ran: the server's
 * refusals of a login (told apart by the server function that raised them, since an app's
 * own SQL may raise any SQLSTATE, 28000 included), the driver's failures to connect, and a
 * pool already ended.
 */
const LOGIN_ROUTINES = new Set([
  'auth_failed', 'ClientAuthentication', 'InitializeSessionUserId', 'InitPostgres', 'InitProcess',
  'ProcessStartupPacket', 'BackendInitialize', 'CheckMyDatabase', 'canAcceptConnections',
])
const DRIVER_CONNECT_ERRORS = new Set(['CONNECT_TIMEOUT', 'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'CONNECTION_ENDED'])
const RETRY_DOWN_MS = 60_000
const CHANGED_ELSEWHERE = 'a namespace login password was changed outside the platform (or the master key changed); put back, sessions ended'
const MAX_SEEN = 1024
const FALLBACK = Symbol('fallback')

const CLAIMS = (n: number) => `pg_catalog.set_config('request.jwt.claims', $${n}, true)`
const READ_ONLY = `pg_catalog.set_config('transaction_read_only', 'on', true)`
/** The gate's claims; `g` is the check's row (`GATE_FROM`), computed before the select list. */
const GATED_CLAIMS = `pg_catalog.set_config('request.jwt.claims', g.claims, true)`
const GATE_FROM = (gate: CallerGate, first: number) => ` from ${gateCall(gate, 'login', first)} as g`

/**
 * `with pgrst_prologue as (select <prologue> [from <from>]), <ctes> select <value> as result
 * from pgrst_prologue`; with a gate (`from`), the prologue also yields the check's
 * `token_id`, selected beside the result.
 */
function withPrologue(prologue: string, parts: Pick<StatementParts, 'ctes' | 'value'>, materialized: boolean, from = ''): string {
  const gated = from !== ''
  const first = `pgrst_prologue as ${materialized ? 'materialized ' : ''}(select ${prologue}${gated ? ', g.token_id as pgrst_token_id' : ''}${from})`
  return `with ${[first, ...parts.ctes].join(', ')} select ${parts.value} as result${gated ? ', pgrst_prologue.pgrst_token_id as token_id' : ''} from pgrst_prologue`
}

/** The parts a login pool runs: with a `split`, its value and, beside it, the body's text. */
function columnsOf(parts: StatementParts): Pick<StatementParts, 'ctes' | 'value'> {
  return parts.split ? { ctes: parts.ctes, value: `${parts.split.text} as pgrst_text, ${parts.split.value}` } : parts
}

function errorFields(error: unknown): { code?: string; routine?: string; severity?: string } {
  const e = error as { code?: unknown; errno?: unknown; routine?: unknown; severity?: unknown }
  const code = typeof e?.code === 'string' ? e.code : typeof e?.errno === 'string' ? e.errno : undefined
  return {
    ...(code !== undefined ? { code } : {}),
    ...(typeof e?.routine === 'string' ? { routine: e.routine } : {}),
    ...(typeof e?.severity === 'string' ? { severity: e.severity } : {}),
  }
}

/** The statement never ran: the login failed, or no connection could be opened. */
export function isConnectFailure(error: unknown): boolean {
  const { code, routine, severity } = errorFields(error)
  if (code !== undefined && DRIVER_CONNECT_ERRORS.has(code)) return true
  return severity === 'FATAL' && routine !== undefined && LOGIN_ROUTINES.has(routine)
}

function isAuthFailure(error: unknown): boolean {
  const { code, routine, severity } = errorFields(error)
  return code === '28P01' && severity === 'FATAL' && routine === 'auth_failed'
}

/** A row's answer: its first column, or its `result` with the body's text (`columnsOf`) put in. */
function answerOf(row: Record<string, unknown>): unknown {
  if ('pgrst_text' in row) return { ...(row['result'] as Record<string, unknown>), body: row['pgrst_text'] }
  return Object.values(row)[0] ?? null
}

function firstValue(rows: Record<string, unknown>[]): unknown {
  const row = rows[0]
  return row ? answerOf(row) : null
}

/** A gated statement's result: tells the gate what it answered, returns the value. */
function gatedResult(gate: CallerGate, rows: Record<string, unknown>[]): unknown {
  const row = rows[0]
  if (!row) throw new Error('a gated statement returned no row')
  gate.passed?.({ tokenId: (row['token_id'] as string | null) ?? null })
  return answerOf(row)
}

export function createNamespaceSql(options: NamespaceSqlOptions): NamespaceSql {
  const { db, logger } = options
  const now = options.now ?? Date.now
  const idleMs = options.idleMs ?? 5 * 60_000
  const evictIdleMs = options.evictIdleMs ?? 5000
  const maxPrepared = options.maxPrepared ?? 256
  const maxPools = db.openLoginPool && options.poolSize > 0 ? Math.floor(options.connections / options.poolSize) : 0
  /** A pool being replaced gets this long for statements in flight: the watchdog's bound, and a second. */
  const drainSeconds = Math.ceil(options.statementTimeoutMs / 1000) + 3
  /** Open pools by role name, least recently used first. */
  const entries = new Map<string, Entry>()
  /** Roles whose pool could not log in, until when the wrapper serves them. */
  const down = new Map<string, number>()
  const credentialCache = new Map<string, LoginCredentials>()
  const counts = { login: 0, wrapper: 0 }
  let closed = false

  function credentialsOf(role: string): LoginCredentials {
    let credentials = credentialCache.get(role)
    if (!credentials) {
      credentials = loginCredentials(options.loginKey, role)
      if (credentialCache.size >= 4096) credentialCache.delete(credentialCache.keys().next().value!)
      credentialCache.set(role, credentials)
    }
    return credentials
  }

  function openPool(entry: Pick<Entry, 'credentials' | 'target'>): LoginPool {
    return db.openLoginPool!({
      user: entry.credentials.role,
      password: entry.credentials.password,
      max: options.poolSize,
      idleSeconds: 60,
      // What a session accumulates (settings, held cursors, prepared statements) lives no
      // longer than one statement may run.
      maxLifetimeSeconds: Math.max(60, Math.ceil(options.statementTimeoutMs / 1000)),
      connectTimeoutSeconds: 5,
      searchPath: `${ident(entry.target.namespace.schemaName)}, extensions`,
      // Policies that read the setting directly (`current_setting(...)::jsonb`) are also
      // evaluated while planning, before the statement sets it: valid JSON, never ''.
      settings: { 'request.jwt.claims': '{}' },
    })
  }

  /** Gives the entry a fresh pool; the old one finishes what it is running, then closes. */
  function replacePool(entry: Entry): void {
    const old = entry.pool
    entry.pool = openPool(entry)
    entry.prepared = new Set()
    entry.seen = new Map()
    void old.end(drainSeconds).catch(() => {})
  }

  function markDown(entry: Entry, error: unknown): void {
    const role = entry.credentials.role
    down.set(role, now() + RETRY_DOWN_MS)
    if (entries.get(role) === entry) entries.delete(role)
    void entry.pool.end(drainSeconds).catch(() => {})
    const { code } = errorFields(error)
    logger.warn('namespace login pool unavailable; the shared wrapper serves it for a minute', {
      role, code: code ?? 'unknown', reason: error instanceof Error ? error.message : String(error),
    })
  }

  /**
   * Puts a login in order. A repair (its password was changed elsewhere) also ends every
   * session of the role, one may be an intruder's, and gives its pool, if open, fresh ones.
   */
  async function ensure(credentials: LoginCredentials, namespaceId: string): Promise<void> {
    // 'ready' also when another process has just repaired it (and ended the sessions).
    if (await ensureLogin(db, credentials, namespaceId) !== 'repaired') return
    const ended = await terminateSessions(db, credentials.role)
    const entry = entries.get(credentials.role)
    if (entry) replacePool(entry)
    logger.warn(CHANGED_ELSEWHERE, { role: credentials.role, sessionsEnded: ended })
  }

  /** The entry for a target, held (`inFlight`) until `release`; null: the wrapper serves it. */
  function acquire(target: SqlTarget): Entry | null {
    if (maxPools === 0 || closed) return null
    const role = roleName(target.namespace, target.role)
    const until = down.get(role)
    if (until !== undefined) {
      if (now() < until) return null
      down.delete(role)
    }
    let entry = entries.get(role)
    if (entry) {
      entries.delete(role)
    } else {
      if (entries.size >= maxPools) {
        // Least recently used first (entries are kept in that order).
        const cutoff = now() - evictIdleMs
        const idle = [...entries.values()].find((e) => e.inFlight === 0 && e.lastUsed <= cutoff)
        if (!idle) return null
        entries.delete(idle.credentials.role)
        void idle.pool.end(drainSeconds).catch(() => {})
      }
      const created: Entry = {
        credentials: credentialsOf(role), target, pool: undefined as unknown as LoginPool, ready: Promise.resolve(false),
        inFlight: 0, lastUsed: now(), seen: new Map(), prepared: new Set(),
      }
      created.pool = openPool(created)
      created.ready = ensure(created.credentials, target.namespace.id).then(() => true, (error) => {
        markDown(created, error)
        return false
      })
      entry = created
    }
    entries.set(role, entry)
    entry.inFlight++
    startWatchdog()
    return entry
  }

  function release(entry: Entry): void {
    entry.inFlight--
    entry.lastUsed = now()
  }

  /** Whether to prepare `text` on this pool: from its second use, up to `maxPrepared` texts per pool. */
  function prepare(entry: Entry, text: string): boolean {
    if (entry.prepared.has(text)) return true
    if (!entry.seen.delete(text)) {
      entry.seen.set(text, true)
      if (entry.seen.size > MAX_SEEN) entry.seen.delete(entry.seen.keys().next().value!)
      return false
    }
    // Every connection keeps what was prepared on it: a fresh pool bounds that memory.
    if (entry.prepared.size >= maxPrepared) replacePool(entry)
    entry.prepared.add(text)
    return true
  }

  /**
   * Runs `work` (on `entry.pool`, read when it runs: a pool may be replaced); FALLBACK when
   * no connection could be opened, so nothing ran.
   */
  async function onPool<T>(entry: Entry, work: () => Promise<T>): Promise<T | typeof FALLBACK> {
    if (!(await entry.ready)) return FALLBACK
    try {
      try {
        return await work()
      } catch (error) {
        if (!isAuthFailure(error)) throw error
        // The password was changed (by the role's own SQL, or by an operator): put it back
        // once. Nothing ran, so a failure to do so falls back like a refused login.
        try {
          await ensure(entry.credentials, entry.target.namespace.id)
        } catch (repairError) {
          markDown(entry, repairError)
          return FALLBACK
        }
        return await work()
      }
    } catch (error) {
      if (!isConnectFailure(error)) throw error
      markDown(entry, error)
      return FALLBACK
    }
  }

  function claimsText(claims: Record<string, unknown> | null): string {
    return claims ? JSON.stringify(claims) : ''
  }

  async function wrapperTransaction<T>(target: SqlTarget, run: RunOptions, fn: (tx: AppTransaction) => Promise<T>): Promise<T> {
    return db.transaction(async (tx) => {
      if (run.readOnly) await tx.query('set transaction read only')
      let claims = run.claims
      if (run.gate) {
        const [row] = await tx.query<{ claims: string; token_id: string | null }>(
          `select g.claims, g.token_id from ${gateCall(run.gate, 'platform', 1)} as g`, run.gate.args)
        run.gate.passed?.({ tokenId: row?.token_id ?? null })
        claims = JSON.parse(row!.claims) as Record<string, unknown>
      }
      const call = (sql: string, params: readonly unknown[]) => {
        counts.wrapper++
        return runAsRole(tx, target, sql, { claims, params })
      }
      return fn({
        statement: (parts) => call(withPrologue('null', parts, false), parts.params),
        explain: (sql, params) => call(`explain (format json) ${sql}`, params),
      })
    })
  }

  async function loginTransaction<T>(entry: Entry, run: RunOptions, fn: (tx: AppTransaction) => Promise<T>): Promise<T | typeof FALLBACK> {
    return onPool(entry, () => entry.pool.transaction(async (tx) => {
      const readOnly = run.readOnly ? `, ${READ_ONLY}` : ''
      if (run.gate) {
        const [row] = await tx.query(`select ${GATED_CLAIMS}${readOnly}, g.token_id${GATE_FROM(run.gate, 1)}`, run.gate.args)
        run.gate.passed?.({ tokenId: (row?.['token_id'] as string | null) ?? null })
      } else {
        await tx.query(`select ${CLAIMS(1)}${readOnly}`, [claimsText(run.claims)])
      }
      // `$1` is named in an unused CTE so that its type is known even where `sql` leaves it out.
      const call = async (sql: string, params: readonly unknown[]) => {
        counts.login++
        return firstValue(await tx.query(sql, [JSON.stringify(params)]))
      }
      return fn({
        statement: (parts) => call(withPrologue('$1::jsonb', columnsOf(parts), false), parts.params),
        explain: (sql, params) => call(`explain (format json) with pgrst_params as (select $1::jsonb) ${sql}`, params),
      })
    }))
  }

  const report = (what: string) => (error: unknown) => logger.warn(`namespace login ${what} failed`, { error: String(error) })
  // No pools (PGlite, or DATABASE_APP_CONNECTIONS=0): nothing logs in, nothing to sweep.
  const sweepTimer = options.sweepIntervalMs === 0 || maxPools === 0
    ? null
    : setInterval(() => void api.sweep().catch(report('sweep')), options.sweepIntervalMs ?? 30_000)
  sweepTimer?.unref()
  let watchdogTimer: ReturnType<typeof setInterval> | null = null
  function startWatchdog(): void {
    if (watchdogTimer || options.watchdogIntervalMs === 0 || closed) return
    watchdogTimer = setInterval(() => void api.watchdog().catch(report('watchdog')), options.watchdogIntervalMs ?? 1000)
    watchdogTimer.unref()
  }

  const api: NamespaceSql = {
    async statement(target, parts, run) {
      const entry = acquire(target)
      if (entry) {
        try {
          if (run.separateClaims) {
            const result = await loginTransaction(entry, run, (tx) => tx.statement(parts))
            if (result !== FALLBACK) return result
          } else {
            const { gate } = run
            const readOnly = run.readOnly ? `, ${READ_ONLY}` : ''
            const text = gate
              ? withPrologue(`${GATED_CLAIMS}${readOnly}, $1::jsonb`, columnsOf(parts), true, GATE_FROM(gate, 2))
              : withPrologue(`${CLAIMS(2)}${readOnly}, $1::jsonb`, columnsOf(parts), true)
            const rest = gate ? gate.args : [claimsText(run.claims)]
            const result = await onPool(entry, async () => {
              const named = prepare(entry, text)
              const rows = await entry.pool.query(text, [JSON.stringify(parts.params), ...rest], { prepare: named })
              counts.login++
              return gate ? gatedResult(gate, rows) : firstValue(rows)
            })
            if (result !== FALLBACK) return result
          }
        } finally {
          release(entry)
        }
      }
      counts.wrapper++
      const text = withPrologue(run.readOnly ? READ_ONLY : 'null', parts, true)
      if (!run.gate) return runAsRole(db, target, text, { claims: run.claims, params: parts.params })
      // The gate, then the wrapper with the gate's claims, in one statement: the wrapper's
      // arguments are computed from the gate's row, so it runs only once the gate has passed.
      const n = run.gate.args.length
      const rows = await db.query(
        `with g as materialized (select c.claims, c.token_id from ${gateCall(run.gate, 'platform', 1)} as c)
         select ${wrapperName(target)}(g.claims, $${n + 1}, $${n + 2}::jsonb) as result, g.token_id from g`,
        [...run.gate.args, text, JSON.stringify(parts.params)], { appSql: true })
      return gatedResult(run.gate, rows)
    },

    async checkCaller(gate) {
      const [row] = await db.read<{ token_id: string | null }>(`select g.token_id from ${gateCall(gate, 'platform', 1)} as g`, gate.args)
      return { tokenId: row?.token_id ?? null }
    },

    async transaction(target, run, fn) {
      const entry = acquire(target)
      if (entry) {
        try {
          const result = await loginTransaction(entry, run, fn)
          if (result !== FALLBACK) return result
        } finally {
          release(entry)
        }
      }
      return wrapperTransaction(target, run, fn)
    },

    stats: () => ({ ...counts, pools: entries.size }),

    async sweep() {
      const cutoff = now() - idleMs
      for (const [role, entry] of entries) {
        if (entry.inFlight === 0 && entry.lastUsed < cutoff) {
          entries.delete(role)
          await entry.pool.end(drainSeconds).catch(() => {})
        }
      }
      // Every login of this database, not only this process's pools: a password changed
      // through the wrapper, or on a pool since closed, is found too. One role's failure
      // does not stop the others' repair.
      for (const { role, namespaceId } of await tamperedLogins(db)) {
        try {
          await ensure(credentialsOf(role), namespaceId)
        } catch (error) {
          logger.warn('namespace login repair failed; the next sweep tries again', { role, error: String(error) })
        }
      }
    },

    async watchdog() {
      const { active, cancelled, terminated } = await stopOverdue(db, options.statementTimeoutMs + 1000, options.watchdogGraceMs ?? 4000)
      if (cancelled + terminated > 0) logger.warn('stopped namespace login statements past the statement timeout', { cancelled, terminated })
      // Closed pools' sessions may still be running statements: watch until none is.
      if (entries.size === 0 && active === 0 && watchdogTimer) {
        clearInterval(watchdogTimer)
        watchdogTimer = null
      }
    },

    async close() {
      closed = true
      if (sweepTimer) clearInterval(sweepTimer)
      if (watchdogTimer) clearInterval(watchdogTimer)
      const all = [...entries.values()]
      entries.clear()
      // Short: shutdown gives the platform a few seconds in all (main.ts).
      await Promise.all(all.map((entry) => entry.pool.end(1).catch(() => {})))
    },
  }
  return api
}
