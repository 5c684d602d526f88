/**
 * Brokered app sessions: how a central session reaches an app origin. The central sign-in
 * issues a one-time authorization code (60 seconds) for one app; the app origin exchanges
 * it for its own host-only cookie. Each app session lives a fixed 30 days (never beyond its
 * central session), holds the central refresh token encrypted, and refreshes its 1-hour
 * access during the final minute. A refresh the central auth rejects ends the app session;
 * a refresh that fails or times out leaves it as it was and reports AUTH_UNAVAILABLE.
 */
import { first, type Db, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { decrypt, encrypt } from '../../lib/encryption.ts'
import { ServiceError } from '../../lib/errors.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { browserSecret, hashSecret } from '../browser-secrets.ts'
import { issueRefreshToken, rotateRefreshToken, sessionById, type RefreshOutcome } from './sessions.ts'
import { userFromRow, type User } from '../accounts/users.ts'

const REFRESH_PURPOSE = 'app-session-refresh-token'

export async function issueCode(
  db: Queryable,
  clock: Clock,
  input: { sessionId: string; appId: string; returnTo: string },
): Promise<string> {
  const code = browserSecret()
  const now = clock.now()
  await db.query(
    `insert into platform.authorization_codes (code_hash, session_id, app_id, return_to, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6)`,
    [code.hash, input.sessionId, input.appId, input.returnTo, now, new Date(now.getTime() + LIFETIMES.codeMs)],
  )
  return code.value
}

export interface AppSession {
  id: string
  appId: string
  sessionId: string
  userId: string
  accessExpiresAt: Date
  expiresAt: Date
  /** The custom domain the session was brokered on (its cookie lives there), else null. */
  customDomain: string | null
}

/**
 * Exchanges a code for an app session cookie; null when the code is unknown, used, expired or
 * for another app. `customDomain`: the custom domain of the callback, if that is where the
 * exchange happens (the session is marked as brokered there).
 */
export async function exchangeCode(
  db: Db,
  clock: Clock,
  key: Uint8Array,
  input: { code: string; appId: string; customDomain?: string | null },
): Promise<{ cookie: string; returnTo: string; appSession: AppSession } | null> {
  if (input.code.length > 100) return null
  return db.transaction(async (tx) => {
    const now = clock.now()
    const [code] = await tx.query<{ session_id: string; app_id: string; return_to: string }>(
      `update platform.authorization_codes set used_at = $2
        where code_hash = $1 and used_at is null and expires_at > $2 returning session_id, app_id, return_to`,
      [hashSecret(input.code), now])
    if (!code || code.app_id !== input.appId) return null
    const central = await sessionById(tx, clock, code.session_id)
    if (!central) return null
    const expiresAt = new Date(Math.min(now.getTime() + LIFETIMES.sessionMs, central.session.expiresAt.getTime()))
    const accessExpiresAt = new Date(Math.min(now.getTime() + LIFETIMES.accessMs, expiresAt.getTime()))
    const refreshToken = await issueRefreshToken(tx, clock, code.session_id)
    const secret = browserSecret()
    const customDomain = input.customDomain ?? null
    const [row] = await tx.query<{ id: string }>(
      `insert into platform.app_sessions (session_id, app_id, user_id, secret_hash, refresh_token_enc, access_expires_at, created_at, expires_at, custom_domain)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning id`,
      [code.session_id, input.appId, central.user.id, secret.hash, encrypt(key, REFRESH_PURPOSE, refreshToken), accessExpiresAt, now, expiresAt, customDomain])
    return {
      cookie: secret.value,
      returnTo: code.return_to,
      appSession: { id: row!.id, appId: input.appId, sessionId: code.session_id, userId: central.user.id, accessExpiresAt, expiresAt, customDomain },
    }
  })
}

export type AppSessionState =
  | { status: 'none' }
  /** `granted`: the user holds a grant to the session's app (read in the same statement; see grants.ts). */
  | { status: 'active'; appSession: AppSession; user: User; granted: boolean }
  | { status: 'signed_out' }

interface AppSessionRow extends Record<string, unknown> {
  app_session_id: string
  app_id: string
  session_id: string
  access_expires_at: Date
  app_session_expires_at: Date
  refresh_token_enc: string
  custom_domain: string | null
  granted: boolean
}

const APP_SESSION_USER = `a.id as app_session_id, a.app_id, a.session_id, a.access_expires_at, a.expires_at as app_session_expires_at,
  a.refresh_token_enc, a.custom_domain, u.id, u.organisation_id, u.email, u.display_name, u.organisation_role, u.is_platform_admin,
  u.email_confirmed_at, u.confirmation_deadline, u.paused_at,
  exists (select 1 from platform.app_grants g where g.app_id = a.app_id and g.user_id = a.user_id) as granted`

function stateFromRow(row: AppSessionRow): AppSessionState {
  return {
    status: 'active',
    appSession: {
      id: row.app_session_id,
      appId: row.app_id,
      sessionId: row.session_id,
      userId: row.id as string,
      accessExpiresAt: row.access_expires_at,
      expiresAt: row.app_session_expires_at,
      customDomain: row.custom_domain,
    },
    user: userFromRow(row as unknown as Parameters<typeof userFromRow>[0]),
    granted: row.granted,
  }
}

export interface AppSessionDeps {
  db: Db
  clock: Clock
  key: Uint8Array
  /** The central auth's refresh (injectable so tests can make it fail or hang). */
  refresh?: (token: string) => Promise<RefreshOutcome>
  refreshTimeoutMs?: number
}

/** An app session by id for an app (access tokens carry the id as `sid`). */
export async function appSessionById(deps: Pick<AppSessionDeps, 'db' | 'clock'>, appId: string, id: string): Promise<AppSessionState> {
  // Every request with a bearer access token runs this: a prepared read.
  const [row] = await deps.db.read<AppSessionRow>(
    `select ${APP_SESSION_USER} from platform.app_sessions a
       join platform.sessions s on s.id = a.session_id join platform.users u on u.id = a.user_id
      where a.id = $1 and a.app_id = $2 and a.revoked_at is null and a.expires_at > $3
        and s.revoked_at is null and s.expires_at > $3`,
    [id, appId, deps.clock.now()])
  return row ? stateFromRow(row) : { status: 'none' }
}

type GateApp = { id: string; ownerId: string; visibility: string }

/**
 * What the data API's statement checks in its first CTE for a request that names an app
 * session, so check and data are one statement; a signed-out or expired session is refused
 * on its next request, as before. Two ways to name it:
 * - a verified access token's claims (`sessionId`, `userId`): `platform_gate.app_session_caller`
 *   (migration 0027), the same rules as `appSessionById` (the app session and its central
 *   session unrevoked and unexpired, of the token's subject);
 * - the session cookie (`cookie`): `platform_gate.app_cookie_caller` (migration 0033), the
 *   same rules as `resolveAppSession`, whose refresh in the access's final minute the check
 *   cannot make: it answers SVA02 then, and the caller is resolved by `resolveAppSession`.
 *   Null for a value that cannot be a cookie.
 * Both add, for a private app, the edge's admission (`accessReason`: the owner, a confirmed
 * person it was shared with, a confirmed platform administrator).
 *
 * @example
 *   const gate = appSessionGate(clock, { app, sessionId: claims.sid, userId: claims.sub })
 *   const cookieGate = appSessionGate(clock, { app, cookie })
 */
export function appSessionGate(clock: Clock, input: { app: GateApp; sessionId: string; userId: string }): { check: 'app_session'; args: readonly unknown[] }
export function appSessionGate(clock: Clock, input: { app: GateApp; cookie: string }): { check: 'app_cookie'; args: readonly unknown[] } | null
export function appSessionGate(
  clock: Clock,
  input: { app: GateApp; sessionId: string; userId: string } | { app: GateApp; cookie: string },
): { check: 'app_session' | 'app_cookie'; args: readonly unknown[] } | null {
  const { app } = input
  const now = clock.now()
  if ('cookie' in input) {
    if (!input.cookie || input.cookie.length > 100) return null
    const refreshBy = new Date(now.getTime() + LIFETIMES.refreshWindowMs)
    return {
      check: 'app_cookie',
      args: [app.id, hashSecret(input.cookie).toString('hex'), now.toISOString(), refreshBy.toISOString(), app.visibility !== 'public', app.ownerId],
    }
  }
  return {
    check: 'app_session',
    args: [app.id, input.sessionId, input.userId, now.toISOString(), app.visibility !== 'public', app.ownerId],
  }
}

/**
 * The app session a cookie names, refreshed when its access is in its final minute.
 * Throws AUTH_UNAVAILABLE when the central auth fails or times out (session unchanged).
 */
export async function resolveAppSession(deps: AppSessionDeps, appId: string, cookie: string | undefined): Promise<AppSessionState> {
  if (!cookie || cookie.length > 100) return { status: 'none' }
  const now = deps.clock.now()
  // Every request with an app session cookie runs this: a prepared read.
  const [row] = await deps.db.read<AppSessionRow>(
    `select ${APP_SESSION_USER} from platform.app_sessions a join platform.users u on u.id = a.user_id
      where a.secret_hash = $1 and a.app_id = $2 and a.revoked_at is null and a.expires_at > $3`,
    [hashSecret(cookie), appId, now])
  if (!row) return { status: 'none' }
  if (row.access_expires_at.getTime() - now.getTime() > LIFETIMES.refreshWindowMs) return stateFromRow(row)
  return refreshAppSession(deps, row.app_session_id)
}

/** How long one request may hold the refresh of an app session before another may try. */
const REFRESH_LEASE_MS = 15 * 1000

async function refreshAppSession(deps: AppSessionDeps, appSessionId: string): Promise<AppSessionState> {
  const { db, clock } = deps
  const now = clock.now()
  // Take the refresh lease while the access is still in its final minute; a request that
  // cannot (another is refreshing, or just did) uses the access as it now stands.
  const [leased] = await db.query<AppSessionRow>(
    `update platform.app_sessions a set refreshing_until = $3
       from platform.users u
      where a.id = $1 and u.id = a.user_id and a.revoked_at is null and a.expires_at > $2
        and (a.refreshing_until is null or a.refreshing_until <= $2)
        and a.access_expires_at <= $4
     returning ${APP_SESSION_USER}`,
    [appSessionId, now, new Date(now.getTime() + REFRESH_LEASE_MS), new Date(now.getTime() + LIFETIMES.refreshWindowMs)])
  if (!leased) {
    const current = await first<AppSessionRow>(db,
      `select ${APP_SESSION_USER} from platform.app_sessions a join platform.users u on u.id = a.user_id
        where a.id = $1 and a.revoked_at is null and a.expires_at > $2 and a.access_expires_at > $2`, [appSessionId, now])
    if (current) return stateFromRow(current)
    throw new ServiceError('AUTH_UNAVAILABLE', 'this session is being refreshed; try again in a moment')
  }
  const refresh = deps.refresh ?? ((token: string) => db.transaction((tx) => rotateRefreshToken(tx, clock, token)))
  // The central call runs outside any transaction of ours, so a slow central auth never
  // holds a lock here. A result that arrives after the timeout is still stored, so the
  // rotated token is never lost (presenting the old one later would read as a replay).
  const outcome = refresh(decrypt(deps.key, REFRESH_PURPOSE, leased.refresh_token_enc))
    .then((result) => storeRefresh(deps, leased, result))
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), deps.refreshTimeoutMs ?? 5000)
  })
  try {
    const result = await Promise.race([outcome, timeout])
    if (result === 'timeout') throw new Error('central auth refresh timed out')
    return result
  } catch (error) {
    outcome.catch(() => {})
    await db.query('update platform.app_sessions set refreshing_until = null where id = $1', [appSessionId]).catch(() => {})
    throw new ServiceError('AUTH_UNAVAILABLE', 'the sign-in service could not refresh this session; try again', { cause: error })
  } finally {
    clearTimeout(timer)
  }
}

async function storeRefresh(deps: AppSessionDeps, row: AppSessionRow, outcome: RefreshOutcome): Promise<AppSessionState> {
  const now = deps.clock.now()
  if (!outcome.ok) {
    await deps.db.query('update platform.app_sessions set revoked_at = $2, refreshing_until = null where id = $1', [row.app_session_id, now])
    return { status: 'signed_out' }
  }
  const accessExpiresAt = new Date(Math.min(now.getTime() + LIFETIMES.accessMs, row.app_session_expires_at.getTime()))
  await deps.db.query(
    'update platform.app_sessions set refresh_token_enc = $2, access_expires_at = $3, refreshing_until = null where id = $1',
    [row.app_session_id, encrypt(deps.key, REFRESH_PURPOSE, outcome.refreshToken), accessExpiresAt])
  return stateFromRow({ ...row, access_expires_at: accessExpiresAt })
}

/** Ends one browser's app session and the central session behind it. */
export async function signOutAppSession(db: Db, clock: Clock, appId: string, cookie: string | undefined): Promise<boolean> {
  if (!cookie) return false
  const row = await first<{ session_id: string }>(db,
    'select session_id from platform.app_sessions where secret_hash = $1 and app_id = $2', [hashSecret(cookie), appId])
  if (!row) return false
  await db.transaction(async (tx) => {
    const now = clock.now()
    await tx.query('update platform.sessions set revoked_at = $2, revoked_reason = $3 where id = $1 and revoked_at is null',
      [row.session_id, now, 'signed_out'])
    await tx.query('update platform.app_sessions set revoked_at = $2 where session_id = $1 and revoked_at is null', [row.session_id, now])
  })
  return true
}
