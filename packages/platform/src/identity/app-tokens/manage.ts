/**
 * An app's access tokens and pending token requests as the people who manage them see them,
 * for the owner API and the dashboard's Access screen alike. Listing and revoking tokens: the
 * owner and Administer holders, confirmed (who reaches the app from outside is an access
 * decision). Pending requests: the owner only, who alone approves them (pages.ts); refusing
 * one ends it at once, and the agent's poll reads `expired` as for a request nobody answered.
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { User } from '../accounts/users.ts'
import { appForRole } from '../access/roles.ts'
import { appTokenView, listAppTokens, requireConfirmed, revokeAppToken } from './app-tokens.ts'
import { ownedApp } from './issue.ts'

/**
 * The app's active tokens, newest first: names and dates, never a value.
 *
 * @example
 * const tokens = await appTokensOf(db, { user, appId: 'orders' }) // [{ id, name, createdAt, lastUsedAt }]
 */
export async function appTokensOf(db: Db, input: { user: User; appId: string }) {
  const app = await appForRole(db, input.user, input.appId, 'administer')
  requireConfirmed(input.user)
  return (await listAppTokens(db, app.id)).map(appTokenView)
}

/**
 * Revokes one active token of the app; NOT_FOUND when there is none with that id.
 *
 * @example
 * await revokeAppTokenOf(db, clock, { user, appId: 'orders', tokenId })
 */
export async function revokeAppTokenOf(db: Db, clock: Clock, input: { user: User; appId: string; tokenId: string }): Promise<void> {
  const app = await appForRole(db, input.user, input.appId, 'administer')
  requireConfirmed(input.user)
  const revoked = await revokeAppToken(db, clock, { appId: app.id, tokenId: input.tokenId })
  if (!revoked) throw new ServiceError('NOT_FOUND', 'no such active access token for this app')
}

export interface PendingTokenRequest {
  id: string
  name: string
  requestedAt: string
  expiresAt: string
}

/**
 * The app's token requests still waiting for the owner, newest first (requests last 15
 * minutes, and at most ten an hour are mailed, so the list stays short; bounded at 50).
 *
 * @example
 * const requests = await pendingTokenRequests(db, clock, { user, appId: 'orders' })
 */
export async function pendingTokenRequests(db: Db, clock: Clock, input: { user: User; appId: string }): Promise<PendingTokenRequest[]> {
  const app = await ownedApp(db, input.user, input.appId)
  const rows = await db.query<{ id: string; name: string; requested_at: Date; expires_at: Date }>(
    `select id, name, requested_at, expires_at from platform.app_token_requests
      where app_id = $1 and approved_at is null and expires_at > $2
      order by requested_at desc, id limit 50`, [app.id, clock.now()])
  return rows.map((row) => ({
    id: row.id, name: row.name, requestedAt: row.requested_at.toISOString(), expiresAt: row.expires_at.toISOString(),
  }))
}

/**
 * Refuses a pending request as the app's owner: it ends now, unapproved. NOT_FOUND when the
 * app has no pending request with that id (already approved, expired or refused).
 *
 * @example
 * await refuseTokenRequest(db, clock, { user, appId: 'orders', requestId })
 */
export async function refuseTokenRequest(db: Db, clock: Clock, input: { user: User; appId: string; requestId: string }): Promise<void> {
  const app = await ownedApp(db, input.user, input.appId)
  requireConfirmed(input.user)
  const now = clock.now()
  const rows = isUuid(input.requestId)
    ? await db.query(
      `update platform.app_token_requests set expires_at = $3
        where id = $1 and app_id = $2 and approved_at is null and expires_at > $3 returning id`, [input.requestId, app.id, now])
    : []
  if (rows.length === 0) throw new ServiceError('NOT_FOUND', 'no pending token request with this id for this app')
}
