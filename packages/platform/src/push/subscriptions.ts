/**
 * Push subscriptions: what a browser's `PushSubscription.toJSON()` gives (`endpoint`,
 * `keys.p256dh`, `keys.auth`, `expirationTime`), checked and stored for the signed-in person
 * in the app's namespace. The keys are checked as RFC 8291 needs them (a 65-byte
 * uncompressed P-256 point and a 16-byte secret) and stored in base64url without padding.
 * A person keeps at most `maxPerUser` subscriptions per namespace: past it the oldest goes
 * (a person who reinstalls browsers would otherwise be locked out by dead ones).
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { checkEndpoint, MAX_ENDPOINT_LENGTH, type EndpointPolicy } from './endpoints.ts'
import { deleteSubscription, trimSubscriptions, upsertSubscription } from './queries.ts'

/** Subscriptions a person keeps per app namespace by default (PUSH_MAX_SUBSCRIPTIONS_PER_USER). */
export const DEFAULT_MAX_SUBSCRIPTIONS_PER_USER = 10

export interface SubscriptionInput {
  readonly endpoint: string
  readonly p256dh: string
  readonly auth: string
}

export interface SubscriptionOwner {
  readonly appId: string
  readonly namespaceId: string
  readonly userId: string
}

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('PUSH_SUBSCRIPTION_INVALID', message, { details: { field } })
}

/** Decodes base64url (or base64, padded or not) into bytes; null when it is not. */
function base64Bytes(value: unknown): Uint8Array | null {
  if (typeof value !== 'string' || value.length > 200 || !/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) return null
  return new Uint8Array(Buffer.from(value.replace(/=+$/, '').replaceAll('+', '-').replaceAll('/', '_'), 'base64url'))
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * The subscription a browser sent, checked; PUSH_SUBSCRIPTION_INVALID naming the field otherwise.
 *
 * @example
 * const input = parseSubscription(await request.json(), { allowLoopbackHttp: false })
 */
export function parseSubscription(body: unknown, policy: EndpointPolicy): SubscriptionInput {
  if (!isRecord(body)) throw invalid('send the PushSubscription as JSON: { endpoint, keys: { p256dh, auth } }', 'subscription')
  const endpoint = checkEndpoint(body.endpoint, policy).toString()
  if (!isRecord(body.keys)) throw invalid('the subscription needs keys.p256dh and keys.auth', 'keys')
  const p256dh = base64Bytes(body.keys.p256dh)
  if (p256dh === null || p256dh.length !== 65 || p256dh[0] !== 0x04) {
    throw invalid('keys.p256dh must be an uncompressed P-256 public key (65 bytes, base64url)', 'keys.p256dh')
  }
  const auth = base64Bytes(body.keys.auth)
  if (auth === null || auth.length !== 16) throw invalid('keys.auth must be 16 bytes in base64url', 'keys.auth')
  return { endpoint, p256dh: Buffer.from(p256dh).toString('base64url'), auth: Buffer.from(auth).toString('base64url') }
}

/**
 * Stores the subscription for its owner (one transaction: the row, then the owner's oldest
 * past the bound removed); returns its id.
 */
export async function saveSubscription(
  deps: { db: Db; clock: Clock; maxPerUser: number },
  input: { owner: SubscriptionOwner; subscription: SubscriptionInput },
): Promise<string> {
  const { owner, subscription } = input
  return await deps.db.transaction(async (tx) => {
    const id = await upsertSubscription(tx, { id: randomUUID(), ...owner, ...subscription, now: deps.clock.now() })
    await trimSubscriptions(tx, { namespaceId: owner.namespaceId, userId: owner.userId, keepId: id, keep: deps.maxPerUser })
    return id
  })
}

/** Removes the owner's subscription with that endpoint; whether there was one. */
export async function removeSubscription(deps: { db: Db }, input: { owner: SubscriptionOwner; endpoint: unknown }): Promise<boolean> {
  if (typeof input.endpoint !== 'string' || input.endpoint.length === 0 || input.endpoint.length > MAX_ENDPOINT_LENGTH) {
    throw invalid('send the endpoint of the subscription to remove', 'endpoint')
  }
  let endpoint: string
  try {
    // As parseSubscription stored it.
    endpoint = new URL(input.endpoint).toString()
  } catch {
    throw invalid('the endpoint is not an absolute URL', 'endpoint')
  }
  return await deleteSubscription(deps.db, { namespaceId: input.owner.namespaceId, userId: input.owner.userId, endpoint })
}
