/**
 * App access tokens as the owner API and the MCP tools issue them (spec 2.3, 4.5): an agent's
 * request for owner approval, which emails the app's owner the approval link; and the owner's
 * own creation, which answers a one-time reveal link. Neither ever answers the token's value.
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { createRateLimiter, rateLimited } from '../../db/rate-limit.ts'
import { findAppByIdOrSlug, type App } from '../../apps/apps.ts'
import type { HostUrls } from '../../http/hosts.ts'
import type { User } from '../accounts/users.ts'
import { findUserById } from '../accounts/users.ts'
import { appForRole, effectiveRole } from '../access/roles.ts'
import type { Mail } from '../sign-in/routes.ts'
import { checkTokenName, createAppToken, createReveal, createTokenRequest, requireConfirmed } from './app-tokens.ts'

/** The one-time link that shows a new token's value to the app's owner. */
export function revealUrl(urls: HostUrls, reveal: { id: string; k: string }): string {
  return `${urls.auth}/app-tokens/reveal?id=${encodeURIComponent(reveal.id)}&k=${encodeURIComponent(reveal.k)}`
}

/** Approval emails to one app's owner, at most this many an hour (requests beyond fail RATE_LIMITED). */
export const REQUEST_EMAILS_PER_APP_HOUR = 10

export interface TokenRequestDeps {
  db: Db
  clock: Clock
  urls: HostUrls
  /** Emails the owner the approval link; absent, the requester passes the link on alone. */
  mailer?: Mail
}

/**
 * Files a request for a token of the app `app` (slug or id; archived apps do not exist here)
 * and emails its owner the approval link. The requester polls with `pollToken` and learns
 * the new token's id once approved, never its value.
 *
 * @example
 * const request = await requestAppToken(deps, { app: 'orders', name: 'nightly export' })
 * // { id, approveUrl, pollToken, expiresAt }
 */
export async function requestAppToken(deps: TokenRequestDeps, input: { app: unknown; name: unknown }) {
  const { db, clock } = deps
  const key = typeof input.app === 'string' ? input.app.trim().toLowerCase() : ''
  const app = key === '' ? null : await findAppByIdOrSlug(db, key)
  if (!app || app.status === 'archived') throw new ServiceError('APP_NOT_FOUND', `no app "${key.slice(0, 64)}" is deployed here`)
  const name = checkTokenName(input.name, 'requested token')
  if (deps.mailer !== undefined) {
    const limit = await createRateLimiter(deps).hit({ name: 'app-token-request-app', limit: REQUEST_EMAILS_PER_APP_HOUR, windowSeconds: 3600 }, app.id)
    if (!limit.allowed) throw rateLimited(limit.retryAfterSeconds)
  }
  const request = await createTokenRequest(db, clock, { appId: app.id, name })
  const approveUrl = `${deps.urls.auth}/app-tokens/requests/${request.id}`
  const owner = deps.mailer === undefined ? null : await findUserById(db, app.ownerId)
  if (owner !== null && deps.mailer !== undefined) {
    await deps.mailer.send({
      to: owner.email,
      subject: `Approve an access token for ${app.slug}?`,
      text: `Someone (a coding agent or a program) asks for an access token named "${name}" for your app ${app.slug}.\n\n` +
        `A token acts as you, the owner, on the app's runtime APIs. Open this link to review the request; nothing happens unless you press Approve there. It works for 15 minutes:\n\n${approveUrl}\n\n` +
        'If you did not expect this, ignore this message.',
    })
  }
  return { id: request.id, approveUrl, pollToken: request.pollToken, expiresAt: request.expiresAt.toISOString() }
}

/**
 * The app when `user` owns it. A member gets FORBIDDEN with `details: {role, required:
 * "owner"}`: a token acts as the owner, so another person minting one would act as the owner
 * too (and `verifyAppToken` accepts only tokens whose creator owns the app).
 */
export async function ownedApp(db: Db, user: User, idOrSlug: string): Promise<App> {
  const app = await appForRole(db, user, idOrSlug, 'use')
  if (app.ownerId !== user.id) {
    throw new ServiceError('FORBIDDEN', `only the owner of "${app.slug}" creates its access tokens: a token acts as the owner`, {
      details: { role: await effectiveRole(db, { app, user }), required: 'owner' },
    })
  }
  return app
}

/**
 * Creates a token as the app's confirmed owner and answers its one-time reveal link (valid 15
 * minutes), never the value.
 *
 * @example
 * const created = await createOwnerAppToken(deps, { user, appId: 'orders', name: 'export' })
 * // { token: { id, name, createdAt }, revealUrl, revealExpiresAt }
 */
export async function createOwnerAppToken(
  deps: { db: Db; clock: Clock; urls: HostUrls; revealKey: Uint8Array }, input: { user: User; appId: string; name: unknown },
) {
  const { db, clock } = deps
  const app = await ownedApp(db, input.user, input.appId)
  requireConfirmed(input.user)
  const name = checkTokenName(input.name, 'access token')
  const { token, reveal } = await db.transaction(async (tx) => {
    const created = await createAppToken(tx, clock, { appId: app.id, name, createdBy: input.user.id })
    const reveal = await createReveal(tx, clock, { key: deps.revealKey, tokenId: created.token.id, secret: created.secret })
    return { token: created.token, reveal }
  })
  return {
    token: { id: token.id, name: token.name, createdAt: token.createdAt.toISOString() },
    revealUrl: revealUrl(deps.urls, reveal),
    revealExpiresAt: reveal.expiresAt.toISOString(),
  }
}
