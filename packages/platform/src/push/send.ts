/**
 * `ctx.notifications.send({ userId, title, body, url?, tag? })` as the platform answers it
 * (functions/host.ts, case 'notifications'): the notification is checked, then one durable
 * delivery per subscription the person has in the invocation's app namespace is queued in
 * PostgreSQL, in one statement, before `send` resolves to `{ id, subscriptions }`; the
 * delivery worker (delivery-worker.ts) sends them. Nothing is queued for a person who may
 * not use the app (a private app's person without access), and the answer is the same as for
 * a person without subscriptions (`subscriptions: 0`), so a Function learns nothing about
 * who exists.
 *
 * What the service worker receives is the JSON `{ id, title, body, url?, tag? }`, at most
 * MAX_PAYLOAD_BYTES in UTF-8: RFC 8030 push services take 4,096 bytes of message body, and
 * aes128gcm (RFC 8188, 8291) adds 103 (86 of header, 16 of tag, one delimiter). `url` is a
 * path on the app's own origin (or an absolute URL of that origin, sent as its path), so a
 * click never leaves the app (no open redirect).
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { findAppByIdOrSlug } from '../apps/apps.ts'
import { accessReason, findUserById } from '../identity/index.ts'
import { countPending, insertDeliveries } from './queries.ts'

/** The largest notification JSON the service worker receives (4,096 - 103 bytes). */
export const MAX_PAYLOAD_BYTES = 3993
/** Longest `url` and `tag` accepted. */
export const MAX_URL_LENGTH = 2048
export const MAX_TAG_LENGTH = 64
/** Deliveries not yet ended per app namespace; past it `send` fails NOTIFICATIONS_LIMIT_REACHED. */
export const MAX_PENDING_DELIVERIES = 10_000

const FIELDS = new Set(['userId', 'title', 'body', 'url', 'tag'])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A `ctx.notifications` call with the invocation's app and namespace. */
export interface NotificationsContextCall {
  readonly appId: string
  /** The invocation's app namespace (null: the app has none yet). */
  readonly namespaceId: string | null
  readonly method: string
  readonly args: readonly unknown[]
}

/** What the service worker receives (push-sw.js). */
export interface NotificationPayload {
  readonly id: string
  readonly title: string
  readonly body: string
  readonly url?: string
  readonly tag?: string
}

export interface SendDeps {
  readonly db: Db
  readonly clock: Clock
  /** `{app_url}` of an app slug (http/hosts.ts), for absolute `url`s. */
  readonly appOrigin: (slug: string) => string
  /** Pending deliveries per namespace (tests lower it). Default MAX_PENDING_DELIVERIES. */
  readonly maxPending?: number
}

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('NOTIFICATION_INVALID', message, { details: { field } })
}

/** The path (with query and fragment) `url` names on the app's origin; NOTIFICATION_INVALID otherwise. */
export function appPath(url: string, origin: string): string {
  if (url.length > MAX_URL_LENGTH) throw invalid(`url is over ${MAX_URL_LENGTH} characters`, 'url')
  // "//host" and "/\host" are other origins to a browser: only a plain path or this origin's URL.
  const path = url.startsWith('/') && !url.startsWith('//') && !url.startsWith('/\\')
  const absolute = url === origin || url.startsWith(`${origin}/`) || url.startsWith(`${origin}?`) || url.startsWith(`${origin}#`)
  let parsed: URL
  try {
    parsed = new URL(url, origin)
  } catch {
    throw invalid('url must be a path of this app, such as /orders/42', 'url')
  }
  if ((!path && !absolute) || parsed.origin !== origin) {
    throw invalid(`url must be a path of this app (such as /orders/42) or a URL on ${origin}`, 'url')
  }
  return `${parsed.pathname}${parsed.search}${parsed.hash}`
}

/** The checked notification, as the payload the service worker receives (its id given). */
export function notificationPayload(input: unknown, options: { id: string; origin: string }): { userId: string; payload: NotificationPayload } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw invalid('send takes { userId, title, body, url?, tag? }', 'notification')
  }
  const fields = input as Record<string, unknown>
  for (const key of Object.keys(fields)) {
    if (!FIELDS.has(key)) throw invalid(`a notification has no field ${key.slice(0, 64)} (userId, title, body, url, tag)`, key.slice(0, 64))
  }
  const { userId, title, body, url, tag } = fields
  if (typeof userId !== 'string' || !UUID.test(userId)) throw invalid('userId must be the id of a person (ctx.user.id)', 'userId')
  if (typeof title !== 'string' || title.trim() === '') throw invalid('title must be a non-empty string', 'title')
  if (typeof body !== 'string') throw invalid('body must be a string', 'body')
  if (url !== undefined && typeof url !== 'string') throw invalid('url must be a string', 'url')
  if (tag !== undefined && (typeof tag !== 'string' || tag.length === 0 || tag.length > MAX_TAG_LENGTH)) {
    throw invalid(`tag must be a string of 1 to ${MAX_TAG_LENGTH} characters`, 'tag')
  }
  const payload: NotificationPayload = {
    id: options.id, title, body,
    ...(url === undefined ? {} : { url: appPath(url, options.origin) }),
    ...(tag === undefined ? {} : { tag: tag as string }),
  }
  const bytes = Buffer.byteLength(JSON.stringify(payload))
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new ServiceError('NOTIFICATION_TOO_LARGE',
      `The notification is ${bytes} bytes as JSON; at most ${MAX_PAYLOAD_BYTES} fit a push message (shorten title or body)`,
      { details: { bytes, limit: MAX_PAYLOAD_BYTES } })
  }
  return { userId: userId.toLowerCase(), payload }
}

/** Whether the person may use the app: anyone signed in for a public app, else access (identity). */
async function mayUse(db: Db, app: NonNullable<Awaited<ReturnType<typeof findAppByIdOrSlug>>>, userId: string): Promise<boolean> {
  const user = await findUserById(db, userId)
  if (user === null) return false
  if (app.visibility === 'public') return true
  return (await accessReason(db, { app, user })) !== null
}

/**
 * Answers `ctx.notifications.send`.
 *
 * @example
 * const answer = createNotificationsContext({ db, clock, appOrigin: (slug) => urls.app(slug) })
 * await answer({ appId, namespaceId, method: 'send', args: [{ userId, title: 'Order shipped', body: 'It is on its way', url: '/orders/42' }] })
 * // { id: '…', subscriptions: 2 }
 */
export function createNotificationsContext(deps: SendDeps): (call: NotificationsContextCall) => Promise<{ id: string; subscriptions: number }> {
  const maxPending = deps.maxPending ?? MAX_PENDING_DELIVERIES
  return async (call) => {
    if (call.method !== 'send') throw new ServiceError('BAD_REQUEST', `ctx.notifications has no method ${call.method.slice(0, 64)}`)
    const app = await findAppByIdOrSlug(deps.db, call.appId)
    if (app === null) throw new ServiceError('APP_NOT_FOUND', 'the app is gone')
    const id = randomUUID()
    const { userId, payload } = notificationPayload(call.args[0], { id, origin: deps.appOrigin(app.slug) })
    if (call.namespaceId === null || !(await mayUse(deps.db, app, userId))) return { id, subscriptions: 0 }
    const namespaceId = call.namespaceId
    const subscriptions = await deps.db.transaction(async (tx) => {
      if ((await countPending(tx, { namespaceId, cap: maxPending })) >= maxPending) {
        throw new ServiceError('NOTIFICATIONS_LIMIT_REACHED',
          `This app has ${maxPending} notification deliveries waiting; send again once they are delivered`, { details: { limit: maxPending } })
      }
      return await insertDeliveries(tx, { notificationId: id, appId: app.id, namespaceId, userId, payload: JSON.stringify(payload), now: deps.clock.now() })
    })
    return { id, subscriptions }
  }
}
