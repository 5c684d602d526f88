/**
 * Central browser sessions (the cookie on `{auth_url}`) and the central auth's refresh
 * tokens. A session lives a fixed 30 days (or until the 24-hour confirmation deadline when
 * provisional). Refresh tokens rotate on every use; presenting one that was already rotated
 * revokes the whole session, with every app session hanging off it.
 */
import { first, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { browserSecret, hashSecret } from '../browser-secrets.ts'
import { userFromRow, type User } from '../accounts/users.ts'

export interface Session {
  id: string
  userId: string
  provisional: boolean
  createdAt: Date
  expiresAt: Date
}

export async function createSession(
  db: Queryable,
  clock: Clock,
  options: { user: User; userAgent?: string | null; expiresAt?: Date },
): Promise<{ session: Session; cookie: string }> {
  const now = clock.now()
  const provisional = options.user.emailConfirmedAt === null
  const expiresAt = options.expiresAt
    ?? (provisional && options.user.confirmationDeadline ? options.user.confirmationDeadline : new Date(now.getTime() + LIFETIMES.sessionMs))
  const secret = browserSecret()
  const [row] = await db.query<{ id: string }>(
    `insert into platform.sessions (user_id, secret_hash, provisional, created_at, expires_at, user_agent)
     values ($1, $2, $3, $4, $5, $6) returning id`,
    [options.user.id, secret.hash, provisional, now, expiresAt, options.userAgent?.slice(0, 300) ?? null],
  )
  return {
    session: { id: row!.id, userId: options.user.id, provisional, createdAt: now, expiresAt },
    cookie: secret.value,
  }
}

export interface ActiveSession {
  session: Session
  user: User
}

const SESSION_USER = `s.id as session_id, s.provisional, s.created_at as session_created_at, s.expires_at as session_expires_at,
  u.id, u.organisation_id, u.email, u.display_name, u.organisation_role, u.is_platform_admin, u.email_confirmed_at,
  u.password_hash, u.confirmation_deadline, u.paused_at`

function activeFromRow(row: Record<string, unknown>): ActiveSession {
  return {
    session: {
      id: row.session_id as string,
      userId: row.id as string,
      provisional: row.provisional as boolean,
      createdAt: row.session_created_at as Date,
      expiresAt: row.session_expires_at as Date,
    },
    user: userFromRow(row as Parameters<typeof userFromRow>[0]),
  }
}

/** The live session a central cookie names, or null (unknown, revoked or expired). */
export async function sessionFromCookie(db: Queryable, clock: Clock, cookie: string | undefined): Promise<ActiveSession | null> {
  if (!cookie || cookie.length > 100) return null
  const row = await first(db,
    `select ${SESSION_USER} from platform.sessions s join platform.users u on u.id = s.user_id
      where s.secret_hash = $1 and s.revoked_at is null and s.expires_at > $2`,
    [hashSecret(cookie), clock.now()])
  return row ? activeFromRow(row) : null
}

export async function sessionById(db: Queryable, clock: Clock, id: string): Promise<ActiveSession | null> {
  const row = await first(db,
    `select ${SESSION_USER} from platform.sessions s join platform.users u on u.id = s.user_id
      where s.id = $1 and s.revoked_at is null and s.expires_at > $2`,
    [id, clock.now()])
  return row ? activeFromRow(row) : null
}

/** Revokes a session and every app session created from it. */
export async function revokeSession(db: Queryable, clock: Clock, sessionId: string, reason: string): Promise<void> {
  const now = clock.now()
  await db.query('update platform.sessions set revoked_at = $2, revoked_reason = $3 where id = $1 and revoked_at is null',
    [sessionId, now, reason])
  await db.query('update platform.app_sessions set revoked_at = $2 where session_id = $1 and revoked_at is null', [sessionId, now])
}

/** A new refresh token of a session (for a new app session). */
export async function issueRefreshToken(db: Queryable, clock: Clock, sessionId: string): Promise<string> {
  const secret = browserSecret()
  await db.query('insert into platform.refresh_tokens (session_id, token_hash, created_at) values ($1, $2, $3)',
    [sessionId, secret.hash, clock.now()])
  return secret.value
}

export type RefreshOutcome =
  | { ok: true; refreshToken: string; session: ActiveSession }
  | { ok: false; reason: 'unknown' | 'reused' | 'session_ended' }

/**
 * Rotates a refresh token: the presented one is marked rotated and a new one returned. A
 * token that was already rotated is a replay: the whole session is revoked.
 */
export async function rotateRefreshToken(db: Queryable, clock: Clock, token: string): Promise<RefreshOutcome> {
  const row = await first<{ id: string; session_id: string; rotated_at: Date | null }>(db,
    'select id, session_id, rotated_at from platform.refresh_tokens where token_hash = $1 for update', [hashSecret(token)])
  if (!row) return { ok: false, reason: 'unknown' }
  if (row.rotated_at) {
    await revokeSession(db, clock, row.session_id, 'refresh_token_reused')
    return { ok: false, reason: 'reused' }
  }
  const session = await sessionById(db, clock, row.session_id)
  if (!session) return { ok: false, reason: 'session_ended' }
  await db.query('update platform.refresh_tokens set rotated_at = $2 where id = $1', [row.id, clock.now()])
  return { ok: true, refreshToken: await issueRefreshToken(db, clock, row.session_id), session }
}
