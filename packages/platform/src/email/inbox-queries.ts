/**
 * SQL of inbound app email (platform.email_inbox, migration 0035), one function per
 * statement, and the read of an app's receiving facts. Results are written only while the
 * attempt is still the row's current one (`attempts = $2 and state = 'running'`).
 */
import { first, type Queryable } from '../db/db.ts'
import type { EmailDeclaration } from '../manifest/index.ts'

/** The listener notifies on this channel at commit; inbound workers LISTEN on it. */
export const INBOX_CHANNEL = 'platform_email_inbox'

export type InboxState = 'waiting' | 'running' | 'done' | 'failed'

/** The latest failure of an inbound message: bounded. */
export interface InboxError {
  readonly code: string
  readonly message: string
}

/** What receiving mail for an app depends on, by its slug. */
export interface ReceivingFacts extends Record<string, unknown> {
  app_id: string
  status: 'active' | 'paused' | 'suspended' | 'archived'
  /** The production namespace (null before the first deploy). */
  namespace_id: string | null
  /** The active production release's `email` declaration (null: none). */
  email: EmailDeclaration | null
}

export async function selectReceivingFacts(db: Queryable, slug: string): Promise<ReceivingFacts | undefined> {
  return first<ReceivingFacts>(db,
    `select a.id as app_id, a.status, n.id as namespace_id, r.manifest -> 'email' as email
       from platform.apps a
       left join platform.releases r on r.id = a.active_release_id
       left join platform.namespaces n on n.app_id = a.id and n.environment = 'production' and n.dev_name = ''
      where a.slug = $1`,
    [slug])
}

/** The `email.inbound.function` a release declares, or null. */
export async function selectInboundFunction(db: Queryable, releaseId: string): Promise<string | null> {
  const row = await first<{ name: string | null }>(db,
    `select manifest -> 'email' -> 'inbound' ->> 'function' as name from platform.releases where id = $1`, [releaseId])
  return row?.name ?? null
}

export interface InboxRow extends Record<string, unknown> {
  id: string
  app_id: string
  namespace_id: string
  mail_from: string
  recipients: string[]
  size: number
  state: InboxState
  attempts: number
  last_error: InboxError | null
  run_at: Date
  received_at: Date
  finished_at: Date | null
}

/** A claimed attempt: the row with the raw message and the event once built. */
export interface ClaimedInbound extends InboxRow {
  raw: Uint8Array | null
  event: Record<string, unknown> | null
}

export interface NewInbound {
  readonly id: string
  readonly appId: string
  readonly namespaceId: string
  readonly recipients: readonly string[]
}

/** One app's row of a received message, due now; the workers are notified at commit. */
export async function insertInbound(db: Queryable, input: NewInbound & { mailFrom: string; raw: Uint8Array; now: Date }): Promise<void> {
  await db.query(
    `with inserted as (
       insert into platform.email_inbox (id, app_id, namespace_id, mail_from, recipients, size, raw, state, run_at, received_at, updated_at)
       values ($1, $2, $3, $4, $5::text[], $6, $7, 'waiting', $8, $8, $8)
       returning 1
     )
     select pg_notify('${INBOX_CHANNEL}', '') from inserted`,
    [input.id, input.appId, input.namespaceId, input.mailFrom, input.recipients, input.raw.byteLength, input.raw, input.now])
}

/** Claims up to `limit` due messages, leased to `owner` for `leaseSeconds`; counts the attempt. */
export async function claimInbound(
  db: Queryable, options: { now: Date; limit: number; owner: string; leaseSeconds: number },
): Promise<ClaimedInbound[]> {
  return db.query<ClaimedInbound>(
    `with chosen as (
       select id from platform.email_inbox
        where state = 'waiting' and run_at <= $1
        order by run_at, id
        limit $2
        for update skip locked
     )
     update platform.email_inbox m
        set state = 'running', attempts = m.attempts + 1, updated_at = $1, lease_owner = $3,
            lease_expires_at = $1::timestamptz + make_interval(secs => $4)
       from chosen where m.id = chosen.id
     returning m.*`,
    [options.now, options.limit, options.owner, options.leaseSeconds],
  )
}

/** Sets a running attempt's lease (once the receiver's timeout is known). */
export async function setInboundLease(db: Queryable, input: { id: string; attempt: number; until: Date }): Promise<void> {
  await db.query(`update platform.email_inbox set lease_expires_at = $3 where id = $1 and attempts = $2 and state = 'running'`,
    [input.id, input.attempt, input.until])
}

/** Keeps the event built from the raw message (its attachments stored as files), for this and later attempts. */
export async function saveInboundEvent(db: Queryable, input: { id: string; attempt: number; event: Record<string, unknown> }): Promise<boolean> {
  const rows = await db.query(`update platform.email_inbox set event = $3::jsonb where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, JSON.stringify(input.event)])
  return rows.length > 0
}

/** The receiver succeeded: done, the raw message and the event discarded. */
export async function markInboundDone(db: Queryable, input: { id: string; attempt: number; now: Date }): Promise<boolean> {
  const rows = await db.query(
    `update platform.email_inbox
        set state = 'done', raw = null, event = null, finished_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now])
  return rows.length > 0
}

/** The attempt failed: waiting again at `retryAt`, or (null) failed for good with the message discarded. */
export async function markInboundFailed(
  db: Queryable, input: { id: string; attempt: number; now: Date; error: InboxError; retryAt: Date | null },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.email_inbox
        set state = case when $5::timestamptz is null then 'failed' else 'waiting' end,
            run_at = coalesce($5::timestamptz, run_at),
            raw = case when $5::timestamptz is null then null else raw end,
            event = case when $5::timestamptz is null then null else event end,
            finished_at = case when $5::timestamptz is null then $3::timestamptz else null end,
            last_error = $4::jsonb, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now, JSON.stringify(input.error), input.retryAt])
  return rows.length > 0
}

/** The attempt did not really start (its worker was killed for another invocation): waiting again now, uncounted. */
export async function markInboundNotStarted(db: Queryable, input: { id: string; attempt: number; now: Date }): Promise<void> {
  await db.query(
    `update platform.email_inbox
        set state = 'waiting', attempts = attempts - 1, run_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running'`,
    [input.id, input.attempt, input.now])
}

/** Running attempts whose lease expired: each counts as a failed attempt, retried on the schedule or failed past it. */
export async function recoverExpiredInbound(
  db: Queryable, options: { now: Date; error: InboxError; delaysSeconds: readonly number[]; limit: number },
): Promise<number> {
  const rows = await db.query(
    `with expired as (
       select id from platform.email_inbox
        where state = 'running' and lease_expires_at < $1
        order by lease_expires_at limit $4 for update skip locked
     )
     update platform.email_inbox m
        set state = case when m.attempts > cardinality($3::float8[]) then 'failed' else 'waiting' end,
            run_at = case when m.attempts > cardinality($3::float8[]) then m.run_at
                          else $1::timestamptz + make_interval(secs => ($3::float8[])[m.attempts]) end,
            raw = case when m.attempts > cardinality($3::float8[]) then null else m.raw end,
            event = case when m.attempts > cardinality($3::float8[]) then null else m.event end,
            finished_at = case when m.attempts > cardinality($3::float8[]) then $1 else null end,
            last_error = $2::jsonb, lease_owner = null, lease_expires_at = null, updated_at = $1
       from expired where m.id = expired.id
     returning m.id`,
    [options.now, JSON.stringify(options.error), options.delaysSeconds, options.limit],
  )
  return rows.length
}

/** Deletes up to `limit` inbound messages that ended before `before`; returns how many. */
export async function purgeFinishedInbound(db: Queryable, options: { before: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.email_inbox where id in (
       select id from platform.email_inbox where state in ('done', 'failed') and finished_at < $1 limit $2)
     returning id`,
    [options.before, options.limit])
  return rows.length
}
