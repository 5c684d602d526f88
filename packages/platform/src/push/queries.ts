/**
 * SQL of web push (migration 0037): the VAPID key pair, push subscriptions and deliveries,
 * one function per statement.
 */
import { first, type Queryable } from '../db/db.ts'

/** A send commits a notice on this channel; delivery workers LISTEN on it. */
export const PUSH_CHANNEL = 'platform_push_deliveries'

export interface VapidKeyRow extends Record<string, unknown> {
  public_key: string
  private_key_sealed: string
}

/** The platform's key pair, or undefined before the first start made it. */
export async function selectVapidKeys(db: Queryable): Promise<VapidKeyRow | undefined> {
  return first<VapidKeyRow>(db, 'select public_key, private_key_sealed from platform.push_vapid_keys')
}

/** Stores a new key pair unless one is there already (another process may have won). */
export async function insertVapidKeys(db: Queryable, input: { publicKey: string; privateKeySealed: string; now: Date }): Promise<void> {
  await db.query(
    `insert into platform.push_vapid_keys (singleton, public_key, private_key_sealed, created_at) values (true, $1, $2, $3)
     on conflict (singleton) do nothing`,
    [input.publicKey, input.privateKeySealed, input.now])
}

export interface NewSubscription {
  readonly id: string
  readonly appId: string
  readonly namespaceId: string
  readonly userId: string
  readonly endpoint: string
  readonly p256dh: string
  readonly auth: string
  readonly now: Date
}

/**
 * Stores a subscription, or takes over the namespace's row for the same endpoint (keys and
 * person refreshed, id kept). Returns the row's id.
 */
export async function upsertSubscription(db: Queryable, input: NewSubscription): Promise<string> {
  const rows = await db.query<{ id: string }>(
    `insert into platform.push_subscriptions (id, app_id, namespace_id, user_id, endpoint, p256dh, auth, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $8)
     on conflict (namespace_id, endpoint) do update
       set user_id = excluded.user_id, p256dh = excluded.p256dh, auth = excluded.auth, updated_at = excluded.updated_at,
           created_at = case when platform.push_subscriptions.user_id = excluded.user_id then platform.push_subscriptions.created_at
                             else excluded.created_at end
     returning id`,
    [input.id, input.appId, input.namespaceId, input.userId, input.endpoint, input.p256dh, input.auth, input.now])
  return rows[0]!.id
}

/**
 * Deletes the person's subscriptions in the namespace past the newest `keep`, the one just
 * saved (`keepId`) always kept; returns how many.
 */
export async function trimSubscriptions(db: Queryable, input: { namespaceId: string; userId: string; keepId: string; keep: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.push_subscriptions where id in (
       select id from platform.push_subscriptions
        where namespace_id = $1 and user_id = $2 and id <> $3
        order by created_at desc, id desc
        offset greatest($4::int - 1, 0))
     returning id`,
    [input.namespaceId, input.userId, input.keepId, input.keep])
  return rows.length
}

/** Deletes the person's subscription with that endpoint in the namespace; whether there was one. */
export async function deleteSubscription(db: Queryable, input: { namespaceId: string; userId: string; endpoint: string }): Promise<boolean> {
  const rows = await db.query(
    'delete from platform.push_subscriptions where namespace_id = $1 and user_id = $2 and endpoint = $3 returning id',
    [input.namespaceId, input.userId, input.endpoint])
  return rows.length > 0
}

/** Deletes a subscription the push service called gone (404 or 410). */
export async function deleteSubscriptionById(db: Queryable, id: string): Promise<void> {
  await db.query('delete from platform.push_subscriptions where id = $1', [id])
}

/** Deliveries of the namespace not yet ended, counted up to `cap`. */
export async function countPending(db: Queryable, input: { namespaceId: string; cap: number }): Promise<number> {
  const row = await first<{ n: number }>(db,
    `select count(*)::int as n from (
       select 1 from platform.push_deliveries where namespace_id = $1 and state in ('waiting', 'running') limit $2) x`,
    [input.namespaceId, input.cap])
  return row?.n ?? 0
}

/**
 * One waiting delivery of `payload` per subscription the person has in the namespace, due
 * now; notifies the workers at commit when there is any. Returns how many.
 */
export async function insertDeliveries(
  db: Queryable,
  input: { notificationId: string; appId: string; namespaceId: string; userId: string; payload: string; now: Date },
): Promise<number> {
  const rows = await db.query<{ inserted: number }>(
    `with inserted as (
       insert into platform.push_deliveries
         (id, notification_id, app_id, namespace_id, subscription_id, payload, state, run_at, created_at, updated_at)
       select gen_random_uuid(), $1, $2, $3, s.id, $5::jsonb, 'waiting', $6, $6, $6
         from platform.push_subscriptions s
        where s.namespace_id = $3 and s.user_id = $4
       returning 1
     ), counted as (select count(*)::int as n from inserted)
     select n as inserted, (select count(*) from (select pg_notify('${PUSH_CHANNEL}', '') from counted where n > 0) x) as notified
       from counted`,
    [input.notificationId, input.appId, input.namespaceId, input.userId, input.payload, input.now])
  return rows[0]?.inserted ?? 0
}

/** A claimed attempt: the delivery with its subscription (null fields: the subscription is gone) and app. */
export interface ClaimedDelivery extends Record<string, unknown> {
  id: string
  notification_id: string
  subscription_id: string
  payload: Record<string, unknown> | null
  attempts: number
  endpoint: string | null
  p256dh: string | null
  auth: string | null
  app_status: string | null
}

/** The latest failure of a delivery: bounded, never the payload. */
export interface DeliveryError {
  readonly code: string
  readonly message: string
  readonly status?: number
}

/** Claims up to `limit` due deliveries, leased to `owner` for `leaseSeconds`; counts the attempt. */
export async function claimDeliveries(
  db: Queryable, options: { now: Date; limit: number; owner: string; leaseSeconds: number },
): Promise<ClaimedDelivery[]> {
  return db.query<ClaimedDelivery>(
    `with chosen as (
       select id from platform.push_deliveries
        where state = 'waiting' and run_at <= $1
        order by run_at, id
        limit $2
        for update skip locked
     ), claimed as (
       update platform.push_deliveries d
          set state = 'running', attempts = d.attempts + 1, updated_at = $1, lease_owner = $3,
              lease_expires_at = $1::timestamptz + make_interval(secs => $4)
         from chosen where d.id = chosen.id
       returning d.id, d.notification_id, d.subscription_id, d.payload, d.attempts, d.app_id
     )
     select c.id, c.notification_id, c.subscription_id, c.payload, c.attempts, s.endpoint, s.p256dh, s.auth, a.status as app_status
       from claimed c
       left join platform.push_subscriptions s on s.id = c.subscription_id
       left join platform.apps a on a.id = c.app_id`,
    [options.now, options.limit, options.owner, options.leaseSeconds],
  )
}

/**
 * Running attempts whose lease expired (their process died): each counts as a failed
 * attempt: waiting again after the schedule's delay for that attempt, or failed past it.
 * `delaysSeconds[n - 1]` is the wait after attempt n.
 */
export async function recoverExpiredLeases(
  db: Queryable, options: { now: Date; error: DeliveryError; delaysSeconds: readonly number[]; limit: number },
): Promise<number> {
  const rows = await db.query<{ id: string }>(
    `with expired as (
       select id from platform.push_deliveries
        where state = 'running' and lease_expires_at < $1
        order by lease_expires_at limit $4 for update skip locked
     )
     update platform.push_deliveries d
        set state = case when d.attempts > cardinality($3::float8[]) then 'failed' else 'waiting' end,
            run_at = case when d.attempts > cardinality($3::float8[]) then d.run_at
                          else $1::timestamptz + make_interval(secs => ($3::float8[])[d.attempts]) end,
            payload = case when d.attempts > cardinality($3::float8[]) then null else d.payload end,
            finished_at = case when d.attempts > cardinality($3::float8[]) then $1 else null end,
            last_error = $2::jsonb, lease_owner = null, lease_expires_at = null, updated_at = $1
       from expired where d.id = expired.id
     returning d.id`,
    [options.now, JSON.stringify(options.error), options.delaysSeconds, options.limit],
  )
  return rows.length
}

/** The push service took the message: delivered, payload discarded. False when it is no longer the current attempt. */
export async function markDelivered(db: Queryable, input: { id: string; attempt: number; now: Date }): Promise<boolean> {
  const rows = await db.query(
    `update platform.push_deliveries
        set state = 'delivered', payload = null, finished_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now])
  return rows.length > 0
}

/**
 * The attempt failed: waiting again at `retryAt`, or (null) failed for good with its
 * payload discarded. False when it is no longer the current attempt.
 */
export async function markFailed(
  db: Queryable, input: { id: string; attempt: number; now: Date; error: DeliveryError; retryAt: Date | null },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.push_deliveries
        set state = case when $5::timestamptz is null then 'failed' else 'waiting' end,
            run_at = coalesce($5::timestamptz, run_at),
            payload = case when $5::timestamptz is null then null else payload end,
            finished_at = case when $5::timestamptz is null then $3::timestamptz else null end,
            last_error = $4::jsonb, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now, JSON.stringify(input.error), input.retryAt])
  return rows.length > 0
}

/** Deletes up to `limit` deliveries that ended before `before`; returns how many. */
export async function purgeFinished(db: Queryable, options: { before: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.push_deliveries where id in (
       select id from platform.push_deliveries
        where state in ('delivered', 'failed') and finished_at < $1 limit $2)
     returning id`,
    [options.before, options.limit])
  return rows.length
}
