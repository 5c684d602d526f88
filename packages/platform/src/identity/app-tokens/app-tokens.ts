/**
 * App access tokens (`svc_app_…`, spec 2.3): one deployed app's programmatic credential that
 * acts as the app's owner on runtime APIs only (the control plane refuses it). The value is
 * shown once and only its SHA-256 is stored. Every request checks the token: it must be
 * unrevoked, its creator must still own the app and that owner's email must be confirmed.
 * Spec 2.3 says revalidated on every new request, so nothing is cached: each request reads
 * the token's state once, from `platform.app_token_callers` (migration 0033: a row per
 * unrevoked token with its app's owner and that owner's confirmation, kept by triggers in
 * the transactions that change them), either inside the data statement or as a prepared
 * statement on the platform's read pool (`Db.read`). A revocation, an ownership change or a
 * lost confirmation bites on the next request in every process.
 *
 * Two ways to hand the value to a person, neither of which puts it in an API response:
 * - the owner API creates a token and returns a one-time reveal link (15 minutes) that shows
 *   the value once to the app's owner signed in at `{auth_url}`;
 * - an agent without credentials files a request; the owner approves it in the browser and
 *   sees the value on that page; the agent's poll learns only the token's id.
 */
import { randomUUID } from 'node:crypto'
import { first, type Db, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { newSecret, sha256, sha256Hex } from '../../lib/crypto.ts'
import { decrypt, encrypt } from '../../lib/encryption.ts'
import { ServiceError } from '../../lib/errors.ts'
import { createUsageStamps } from '../../db/usage-stamps.ts'
import { isUuid } from '../../lib/ids.ts'
import { userFromRow, type User } from '../accounts/users.ts'

export const APP_TOKEN_PREFIX = 'svc_app_'

export const APP_TOKEN_LIFETIMES = {
  /** A reveal link shows the value at most once, within this time of creation. */
  revealMs: 15 * 60 * 1000,
  /** An agent's token request waits this long for the owner's approval. */
  requestMs: 15 * 60 * 1000,
} as const

/** Active tokens per app; the owner revokes one before creating more. Keeps lists bounded. */
export const MAX_ACTIVE_APP_TOKENS = 50

export interface AppToken {
  id: string
  appId: string
  name: string
  createdBy: string
  createdAt: Date
  lastUsedAt: Date | null
}

interface TokenRow extends Record<string, unknown> {
  id: string
  app_id: string
  name: string
  created_by: string
  created_at: Date
  last_used_at: Date | null
}

const TOKEN_COLUMNS = 'id, app_id, name, created_by, created_at, last_used_at'

function tokenFromRow(row: TokenRow): AppToken {
  return {
    id: row.id,
    appId: row.app_id,
    name: row.name,
    createdBy: row.created_by,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
  }
}

/** The public shape of a token in API responses: never the value, never its hash. */
export function appTokenView(token: AppToken) {
  return {
    id: token.id,
    name: token.name,
    createdAt: token.createdAt.toISOString(),
    lastUsedAt: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
  }
}

/** A token name: 1 to 80 characters after trimming; `fallback` when none was sent. */
export function checkTokenName(raw: unknown, fallback: string): string {
  if (raw === undefined || raw === null) return fallback
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (name.length < 1 || name.length > 80 || /[\u0000-\u001f\u007f]/.test(name)) {
    throw new ServiceError('VALIDATION_FAILED', 'name must be 1 to 80 printable characters', { details: { field: 'name' } })
  }
  return name
}

/** Refuses owner-only actions to an owner whose email is not confirmed (spec 5.2). */
export function requireConfirmed(user: User): void {
  if (!user.emailConfirmedAt) {
    throw new ServiceError('CONFIRMATION_REQUIRED', 'confirm your email address before managing app access tokens')
  }
}

/**
 * Creates a token for an app. Returns the value once; the caller must not log or store it.
 *
 * @example
 *   const { token, secret } = await createAppToken(tx, clock, { appId: app.id, name: 'ci', createdBy: user.id })
 */
export async function createAppToken(
  db: Queryable,
  clock: Clock,
  input: { appId: string; name: string; createdBy: string },
): Promise<{ token: AppToken; secret: string }> {
  // Serialises concurrent creations for one app so the limit holds.
  await db.query('select id from platform.apps where id = $1 for update', [input.appId])
  const [count] = await db.query<{ n: number }>(
    'select count(*)::int as n from platform.app_access_tokens where app_id = $1 and revoked_at is null', [input.appId])
  if ((count?.n ?? 0) >= MAX_ACTIVE_APP_TOKENS) {
    throw new ServiceError('CONFLICT', `an app may have at most ${MAX_ACTIVE_APP_TOKENS} active access tokens; revoke one first`)
  }
  const secret = newSecret(APP_TOKEN_PREFIX)
  const [row] = await db.query<TokenRow>(
    `insert into platform.app_access_tokens (app_id, name, token_hash, created_by, created_at)
     values ($1, $2, $3, $4, $5) returning ${TOKEN_COLUMNS}`,
    [input.appId, input.name, sha256(secret), input.createdBy, clock.now()])
  return { token: tokenFromRow(row!), secret }
}

/** The app's active tokens, newest first (at most MAX_ACTIVE_APP_TOKENS exist). */
export async function listAppTokens(db: Queryable, appId: string): Promise<AppToken[]> {
  const rows = await db.query<TokenRow>(
    `select ${TOKEN_COLUMNS} from platform.app_access_tokens
      where app_id = $1 and revoked_at is null order by created_at desc, id limit ${MAX_ACTIVE_APP_TOKENS}`, [appId])
  return rows.map(tokenFromRow)
}

/**
 * Revokes a token of this app and burns its pending reveal; false when there is no such
 * active token. The next request with the token is refused everywhere: tokens are read on
 * every request, never cached.
 */
export async function revokeAppToken(db: Queryable, clock: Clock, input: { appId: string; tokenId: string }): Promise<boolean> {
  if (!isUuid(input.tokenId)) return false
  // One statement: the revocation and the burnt reveal commit together or not at all.
  const rows = await db.query(
    `with revoked as (
       update platform.app_access_tokens set revoked_at = $3
        where id = $1 and app_id = $2 and revoked_at is null
       returning id
     ), burned as (
       update platform.app_token_reveals set secret_enc = null where token_id in (select id from revoked)
     )
     select id from revoked`,
    [input.tokenId, input.appId, clock.now()])
  return rows.length > 0
}

export interface VerifiedAppToken {
  tokenId: string
  app: { id: string; slug: string }
  /** The app's current owner, as whom the token acts. */
  owner: User
}

/**
 * The app and owner a token acts for, or null when the token is unknown or revoked, its
 * creator no longer owns the app, or the owner's email is not confirmed: one prepared read,
 * run for every request that presents a token. `last_used_at` is written at most once a
 * minute.
 *
 * @example
 *   const verified = await verifyAppToken(db, clock, bearer)
 *   if (!verified || verified.app.id !== app.id) throw new ServiceError('AUTH_REQUIRED', '…')
 */
const appTokenUsage = createUsageStamps({ table: 'platform.app_access_tokens' })

export async function verifyAppToken(db: Db, clock: Clock, token: string): Promise<VerifiedAppToken | null> {
  if (!token.startsWith(APP_TOKEN_PREFIX) || token.length > 200) return null
  const verified = await findByHash(db, sha256(token))
  if (verified) appTokenUsage.touch(db, clock, verified.tokenId)
  return verified
}

/**
 * What the data API's statement checks in its first CTE for a request with an app token
 * (`platform_gate.app_token_caller`, migrations 0027 and 0033: one index probe on
 * `platform.app_token_callers`; the same rules as `verifyAppToken`), so the check and the
 * data are one statement; null for a value that is not an app token. The token is still
 * revalidated on every request, in the statement itself (spec 2.3).
 * `passed` stamps `last_used_at` (at most once a minute), as `verifyAppToken` does.
 *
 * @example
 *   const gate = appTokenGate(db, clock, { token: bearer, appId: app.id })
 */
export function appTokenGate(db: Db, clock: Clock, input: { token: string; appId: string }): DataGate | null {
  if (!input.token.startsWith(APP_TOKEN_PREFIX) || input.token.length > 200) return null
  return {
    check: 'app_token',
    args: [input.appId, sha256Hex(input.token)],
    passed: (answer) => {
      if (answer.tokenId) appTokenUsage.touch(db, clock, answer.tokenId)
    },
  }
}

/**
 * A caller checked inside the data statement by `platform_gate.<check>_caller` (migrations
 * 0027 and 0033): which check, its arguments, and what to do once it has answered.
 * Structurally the data API's `CallerGate` (namespaces/namespace-sql.ts).
 */
export interface DataGate {
  check: 'app_token' | 'app_session' | 'app_cookie'
  args: readonly unknown[]
  passed?: (answer: { tokenId: string | null }) => void
}

/**
 * The token's row in `platform.app_token_callers` (the rule the data statement's check
 * applies: unrevoked, its creator the app's owner, the owner confirmed), with the app's slug
 * and the owner's record.
 */
async function findByHash(db: Pick<Db, 'read'>, hash: Uint8Array): Promise<VerifiedAppToken | null> {
  const [row] = await db.read<Record<string, unknown>>(
    `select c.token_id, a.id as app_id, a.slug as app_slug,
            u.id, u.organisation_id, u.email, u.display_name, u.organisation_role,
            u.is_platform_admin, u.email_confirmed_at, u.confirmation_deadline, u.paused_at
       from platform.app_token_callers c
       join platform.apps a on a.id = c.app_id
       join platform.users u on u.id = c.owner_id
      where c.token_hash = $1 and c.created_by = c.owner_id and c.owner_confirmed`,
    [hash])
  if (!row) return null
  return Object.freeze({
    tokenId: row.token_id as string,
    app: Object.freeze({ id: row.app_id as string, slug: row.app_slug as string }),
    owner: Object.freeze(userFromRow(row as Parameters<typeof userFromRow>[0])),
  })
}


// ---- One-time reveal links ----

const revealPurpose = (id: string) => `app-token-reveal:${id}`

/**
 * Seals a new token's value for one view through a link: returns the link's id and secret
 * `k` (only its hash is stored). Also clears the sealed values of expired links.
 */
export async function createReveal(
  db: Queryable,
  clock: Clock,
  input: { key: Uint8Array; tokenId: string; secret: string },
): Promise<{ id: string; k: string; expiresAt: Date }> {
  const now = clock.now()
  await db.query('update platform.app_token_reveals set secret_enc = null where secret_enc is not null and expires_at <= $1', [now])
  const id = randomUUID()
  const k = newSecret('')
  const expiresAt = new Date(now.getTime() + APP_TOKEN_LIFETIMES.revealMs)
  await db.query(
    `insert into platform.app_token_reveals (id, token_id, secret_enc, key_hash, expires_at) values ($1, $2, $3, $4, $5)`,
    [id, input.tokenId, encrypt(input.key, revealPurpose(id), input.secret), sha256(k), expiresAt])
  return { id, k, expiresAt }
}

export type RevealState = 'valid' | 'used' | 'expired' | 'revoked' | 'unknown'

export interface RevealInfo {
  state: RevealState
  tokenName: string
  app: { id: string; slug: string; ownerId: string }
}

interface RevealRow extends Record<string, unknown> {
  secret_enc: string | null
  expires_at: Date
  viewed_at: Date | null
  token_name: string
  revoked_at: Date | null
  created_by: string
  app_id: string
  app_slug: string
  owner_id: string
}

async function revealRow(db: Queryable, id: string, k: string, lock: boolean): Promise<RevealRow | undefined> {
  if (!isUuid(id) || k.length < 20 || k.length > 100) return undefined
  return first<RevealRow>(db,
    `select r.secret_enc, r.expires_at, r.viewed_at, t.name as token_name, t.revoked_at, t.created_by,
            a.id as app_id, a.slug as app_slug, a.owner_id
       from platform.app_token_reveals r
       join platform.app_access_tokens t on t.id = r.token_id
       join platform.apps a on a.id = t.app_id
      where r.id = $1 and r.key_hash = $2${lock ? ' for update of r' : ''}`,
    [id, sha256(k)])
}

function revealState(row: RevealRow | undefined, now: Date): RevealState {
  if (!row) return 'unknown'
  if (row.viewed_at) return 'used'
  if (row.revoked_at || row.created_by !== row.owner_id) return 'revoked'
  if (row.expires_at.getTime() <= now.getTime() || !row.secret_enc) return 'expired'
  return 'valid'
}

/** What a reveal link is about, without showing or burning anything. */
export async function inspectReveal(db: Queryable, clock: Clock, input: { id: string; k: string }): Promise<RevealInfo | null> {
  const row = await revealRow(db, input.id, input.k, false)
  if (!row) return null
  return {
    state: revealState(row, clock.now()),
    tokenName: row.token_name,
    app: { id: row.app_id, slug: row.app_slug, ownerId: row.owner_id },
  }
}

/**
 * Shows a token's value once: marks the link viewed, clears the sealed value and returns the
 * plaintext. Run it in a transaction (the row is locked so two views cannot both succeed).
 */
export async function openReveal(
  db: Queryable,
  clock: Clock,
  input: { key: Uint8Array; id: string; k: string },
): Promise<{ ok: true; secret: string } | { ok: false; state: RevealState }> {
  const row = await revealRow(db, input.id, input.k, true)
  const state = revealState(row, clock.now())
  if (state !== 'valid' || !row?.secret_enc) return { ok: false, state }
  await db.query('update platform.app_token_reveals set viewed_at = $2, secret_enc = null where id = $1', [input.id, clock.now()])
  return { ok: true, secret: decrypt(input.key, revealPurpose(input.id), row.secret_enc) }
}

// ---- Agent requests for a token ----

export interface TokenRequest {
  id: string
  appId: string
  appSlug: string
  ownerId: string
  name: string
  requestedAt: Date
  expiresAt: Date
  approvedAt: Date | null
  tokenId: string | null
}

export type TokenRequestStatus = 'pending' | 'approved' | 'expired'

export function tokenRequestStatus(request: TokenRequest, now: Date): TokenRequestStatus {
  if (request.approvedAt) return 'approved'
  return request.expiresAt.getTime() <= now.getTime() ? 'expired' : 'pending'
}

interface RequestRow extends Record<string, unknown> {
  id: string
  app_id: string
  app_slug: string
  owner_id: string
  name: string
  requested_at: Date
  expires_at: Date
  approved_at: Date | null
  token_id: string | null
}

function requestFromRow(row: RequestRow): TokenRequest {
  return {
    id: row.id,
    appId: row.app_id,
    appSlug: row.app_slug,
    ownerId: row.owner_id,
    name: row.name,
    requestedAt: row.requested_at,
    expiresAt: row.expires_at,
    approvedAt: row.approved_at,
    tokenId: row.token_id,
  }
}

const REQUEST_SELECT = `select r.id, r.app_id, a.slug as app_slug, a.owner_id, r.name, r.requested_at, r.expires_at,
    r.approved_at, r.token_id
  from platform.app_token_requests r join platform.apps a on a.id = r.app_id`

/** Files a request for a token; returns the id and the poll secret (stored hashed). */
export async function createTokenRequest(
  db: Queryable,
  clock: Clock,
  input: { appId: string; name: string },
): Promise<{ id: string; pollToken: string; expiresAt: Date }> {
  const now = clock.now()
  await db.query(`delete from platform.app_token_requests where expires_at < $1::timestamptz - interval '1 day'`, [now])
  const pollToken = newSecret('')
  const expiresAt = new Date(now.getTime() + APP_TOKEN_LIFETIMES.requestMs)
  const [row] = await db.query<{ id: string }>(
    `insert into platform.app_token_requests (app_id, name, poll_hash, requested_at, expires_at)
     values ($1, $2, $3, $4, $5) returning id`,
    [input.appId, input.name, sha256(pollToken), now, expiresAt])
  return { id: row!.id, pollToken, expiresAt }
}

export async function findTokenRequest(db: Queryable, id: string, options: { lock?: boolean } = {}): Promise<TokenRequest | null> {
  if (!isUuid(id)) return null
  const row = await first<RequestRow>(db, `${REQUEST_SELECT} where r.id = $1${options.lock ? ' for update of r' : ''}`, [id])
  return row ? requestFromRow(row) : null
}

/** The request a poll secret opens, or null (unknown id or wrong secret look the same). */
export async function pollTokenRequest(db: Queryable, input: { id: string; pollToken: string }): Promise<TokenRequest | null> {
  if (!isUuid(input.id) || input.pollToken.length > 100) return null
  const row = await first<RequestRow>(db, `${REQUEST_SELECT} where r.id = $1 and r.poll_hash = $2`, [input.id, sha256(input.pollToken)])
  return row ? requestFromRow(row) : null
}

/**
 * Approves a pending request as the app's confirmed owner, creating the token. Run it in a
 * transaction; the caller shows the returned value to the owner once.
 */
export async function approveTokenRequest(
  db: Queryable,
  clock: Clock,
  input: { id: string; owner: User },
): Promise<{ ok: true; token: AppToken; secret: string; request: TokenRequest } | { ok: false; status: TokenRequestStatus | 'unknown' }> {
  const request = await findTokenRequest(db, input.id, { lock: true })
  if (!request || request.ownerId !== input.owner.id) return { ok: false, status: 'unknown' }
  const status = tokenRequestStatus(request, clock.now())
  if (status !== 'pending') return { ok: false, status }
  requireConfirmed(input.owner)
  const created = await createAppToken(db, clock, { appId: request.appId, name: request.name, createdBy: input.owner.id })
  await db.query('update platform.app_token_requests set approved_at = $2, approved_by = $3, token_id = $4 where id = $1',
    [request.id, clock.now(), input.owner.id, created.token.id])
  return { ok: true, ...created, request: { ...request, approvedAt: clock.now(), tokenId: created.token.id } }
}
