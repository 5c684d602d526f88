/**
 * Brokered app sessions: how a central session reaches an app origin. The central sign-in
 * issues a one-time authorization code (60 seconds) for one app; the app origin exchanges
 * it for its own host-only cookie. Each app session lives a fixed 30 days (never beyond its
 * central session), holds the central refresh token encrypted, and refreshes its 1-hour
 * access during the final minute. A refresh the central auth rejects ends the app session;
 * a refresh that fails or times out leaves it as it was and reports AUTH_UNAVAILABLE.
 */
import { first, type Db, type Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { decrypt, encrypt } from '../lib/encryption.ts'
import { ServiceError } from '../lib/errors.ts'
import { LIFETIMES } from './lifetimes.ts'
import { browserSecret, hashSecret } from './secrets.ts'
import { issueRefreshToken, rotateRefreshToken, sessionById, type RefreshOutcome } from './sessions.ts'
import { userFromRow, type User } from './users.ts'

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
}

/** Exchanges a code for an app session cookie; null when the code is unknown, used, expired or for another app. */
export async function exchangeCode(
  db: Db,
  clock: Clock,
  key: Uint8Array,
  input: { code: string; appId: string },
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
    const [row] = await tx.query<{ id: string }>(
      `insert into platform.app_sessions (session_id, app_id, user_id, secret_hash, refresh_token_enc, access_expires_at, created_at, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
      [code.session_id, input.appId, central.user.id, secret.hash, encrypt(key, REFRESH_PURPOSE, refreshToken), accessExpiresAt, now, expiresAt])
    return {
      cookie: secret.value,
      returnTo: code.return_to,
      appSession: { id: row!.id, appId: input.appId, sessionId: code.session_id, userId: central.user.id, accessExpiresAt, expiresAt },
    }
  })
}

export type AppSessionState =
  | { status: 'none' }
  | { status: 'active'; appSession: AppSession; user: User }
  | { status: 'signed_out' }

interface AppSessionRow extends Record<string, unknown> {
  app_session_id: string
  app_id: string
  session_id: string
  access_expires_at: Date
  app_session_expires_at: Date
  refresh_token_enc: string
}

const APP_SESSION_USER = `a.id as app_session_id, a.app_id, a.session_id, a.access_expires_at, a.expires_at as app_session_expires_at,
  a.refresh_token_enc, u.id, u.organisation_id, u.email, u.display_name, u.organisation_role, u.is_platform_admin,
  u.email_confirmed_at, u.confirmation_deadline, u.paused_at`

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
    },
    user: userFromRow(row as unknown as Parameters<typeof userFromRow>[0]),
  }
}

export interface AppSessionDeps {
  db: Db
  clock: Clock
  key: Uint8Array
  /** The central auth's refresh (injectable so tests can make it fail or hang). */
  refresh?: (tx: Queryable, token: string) => Promise<RefreshOutcome>
  refreshTimeoutMs?: number
}

/** An app session by id for an app (access tokens carry the id as `sid`). */
export async function appSessionById(deps: Pick<AppSessionDeps, 'db' | 'clock'>, appId: string, id: string): Promise<AppSessionState> {
  const row = await first<AppSessionRow>(deps.db,
    `select ${APP_SESSION_USER} from platform.app_sessions a
       join platform.sessions s on s.id = a.session_id join platform.users u on u.id = a.user_id
      where a.id = $1 and a.app_id = $2 and a.revoked_at is null and a.expires_at > $3
        and s.revoked_at is null and s.expires_at > $3`,
    [id, appId, deps.clock.now()])
  return row ? stateFromRow(row) : { status: 'none' }
}

/**
 * The app session a cookie names, refreshed when its access is in its final minute.
 * Throws AUTH_UNAVAILABLE when the central auth fails or times out (session unchanged).
 */
export async function resolveAppSession(deps: AppSessionDeps, appId: string, cookie: string | undefined): Promise<AppSessionState> {
  if (!cookie || cookie.length > 100) return { status: 'none' }
  const now = deps.clock.now()
  const row = await first<AppSessionRow>(deps.db,
    `select ${APP_SESSION_USER} from platform.app_sessions a join platform.users u on u.id = a.user_id
      where a.secret_hash = $1 and a.app_id = $2 and a.revoked_at is null and a.expires_at > $3`,
    [hashSecret(cookie), appId, now])
  if (!row) return { status: 'none' }
  if (row.access_expires_at.getTime() - now.getTime() > LIFETIMES.refreshWindowMs) return stateFromRow(row)
  return refreshAppSession(deps, row.app_session_id)
}

async function refreshAppSession(deps: AppSessionDeps, appSessionId: string): Promise<AppSessionState> {
  const refresh = deps.refresh ?? ((tx, token) => rotateRefreshToken(tx, deps.clock, token))
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('central auth refresh timed out')), deps.refreshTimeoutMs ?? 5000)
  })
  try {
    return await Promise.race([timeout, deps.db.transaction(async (tx) => {
      const now = deps.clock.now()
      // Lock the app session: concurrent requests in the final minute refresh once.
      const [row] = await tx.query<AppSessionRow>(
        `select ${APP_SESSION_USER} from platform.app_sessions a join platform.users u on u.id = a.user_id
          where a.id = $1 and a.revoked_at is null and a.expires_at > $2 for update of a`, [appSessionId, now])
      if (!row) return { status: 'signed_out' as const }
      if (row.access_expires_at.getTime() - now.getTime() > LIFETIMES.refreshWindowMs) return stateFromRow(row)
      const outcome = await refresh(tx, decrypt(deps.key, REFRESH_PURPOSE, row.refresh_token_enc))
      if (!outcome.ok) {
        await tx.query('update platform.app_sessions set revoked_at = $2 where id = $1', [appSessionId, now])
        return { status: 'signed_out' as const }
      }
      const accessExpiresAt = new Date(Math.min(now.getTime() + LIFETIMES.accessMs, row.app_session_expires_at.getTime()))
      await tx.query('update platform.app_sessions set refresh_token_enc = $2, access_expires_at = $3 where id = $1',
        [appSessionId, encrypt(deps.key, REFRESH_PURPOSE, outcome.refreshToken), accessExpiresAt])
      return stateFromRow({ ...row, access_expires_at: accessExpiresAt })
    })])
  } catch (error) {
    throw new ServiceError('AUTH_UNAVAILABLE', 'the sign-in service could not refresh this session; try again', { cause: error })
  } finally {
    clearTimeout(timer)
  }
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
