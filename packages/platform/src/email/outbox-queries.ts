/**
 * SQL of outbound app email (platform.email_outbox and platform.email_send_windows,
 * migration 0035), one function per statement. Results are written only while the attempt
 * is still the message's current one (`attempts = $2 and state = 'sending'`), so a late
 * result of a process presumed dead is ignored.
 */
import { first, type Queryable } from '../db/db.ts'
import type { EmailDeclaration } from '../manifest/index.ts'

/** Acceptance notifies on this channel at commit; delivery workers LISTEN on it. */
export const OUTBOX_CHANNEL = 'platform_email_outbox'

export type OutboxState = 'queued' | 'sending' | 'sent' | 'failed'

/** The latest failure of a message: bounded, never a body. */
export interface OutboxError {
  readonly code: string
  readonly message: string
  readonly smtpCode?: number
}

export interface OutboxRow extends Record<string, unknown> {
  id: string
  app_id: string
  namespace_id: string
  from_address: string
  recipients: string[]
  reply_to: string | null
  subject: string
  message_id: string
  state: OutboxState
  attempts: number
  last_error: OutboxError | null
  rejected: string[] | null
  run_at: Date
  created_at: Date
  updated_at: Date
  sent_at: Date | null
  finished_at: Date | null
}

/** A claimed attempt: the row with its bodies. */
export interface ClaimedMessage extends OutboxRow {
  text_body: string | null
  html_body: string | null
}

const COLUMNS = `id, app_id, namespace_id, from_address, recipients, reply_to, subject, message_id, state, attempts, last_error, rejected,
  run_at, created_at, updated_at, sent_at, finished_at`

/** A release's email declaration and its app's slug (undefined: no such release). */
export async function selectSenderFacts(db: Queryable, releaseId: string): Promise<{ email: EmailDeclaration | null; slug: string } | undefined> {
  return first<{ email: EmailDeclaration | null; slug: string }>(db,
    `select r.manifest -> 'email' as email, a.slug from platform.releases r join platform.apps a on a.id = r.app_id where r.id = $1`, [releaseId])
}

export interface NewMessage {
  readonly id: string
  readonly appId: string
  readonly namespaceId: string
  readonly from: string
  readonly to: readonly string[]
  readonly replyTo: string | null
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  readonly messageId: string
  readonly now: Date
}

/**
 * Queues a message, due now, if its recipients fit in the app's window (`windowStart`, at most
 * `limit` recipients); returns whether it did. One statement, so one transaction: the
 * window's row is locked only while it runs (concurrent sends of the app serialise on it,
 * each sees the others' counts, none passes the limit), and the window is not taken unless
 * the message is stored. The delivery workers are notified at commit.
 */
export async function insertMessageWithinBudget(db: Queryable, message: NewMessage, budget: { windowStart: Date; limit: number }): Promise<boolean> {
  const rows = await db.query(
    `with window_taken as (
       insert into platform.email_send_windows (app_id, window_start, recipients) values ($2, $12, cardinality($5::text[]))
       on conflict (app_id, window_start) do update set recipients = platform.email_send_windows.recipients + excluded.recipients
         where platform.email_send_windows.recipients + excluded.recipients <= $13
       returning 1
     ), inserted as (
       insert into platform.email_outbox
         (id, app_id, namespace_id, from_address, recipients, reply_to, subject, text_body, html_body, message_id, state, run_at, created_at, updated_at)
       select $1, $2, $3, $4, $5::text[], $6, $7, $8, $9, $10, 'queued', $11, $11, $11 from window_taken
       returning 1
     )
     select pg_notify('${OUTBOX_CHANNEL}', '') from inserted`,
    [message.id, message.appId, message.namespaceId, message.from, message.to, message.replyTo, message.subject, message.text, message.html,
      message.messageId, message.now, budget.windowStart, budget.limit])
  return rows.length > 0
}

/** Claims up to `limit` due messages, leased to `owner` for `leaseSeconds`; counts the attempt. */
export async function claimMessages(
  db: Queryable, options: { now: Date; limit: number; owner: string; leaseSeconds: number },
): Promise<ClaimedMessage[]> {
  return db.query<ClaimedMessage>(
    `with chosen as (
       select id from platform.email_outbox
        where state = 'queued' and run_at <= $1
        order by run_at, id
        limit $2
        for update skip locked
     )
     update platform.email_outbox m
        set state = 'sending', attempts = m.attempts + 1, updated_at = $1, lease_owner = $3,
            lease_expires_at = $1::timestamptz + make_interval(secs => $4)
       from chosen where m.id = chosen.id
     returning m.*`,
    [options.now, options.limit, options.owner, options.leaseSeconds],
  )
}

/** The server took the message (for all recipients but `rejected`): sent, bodies discarded. False when no longer the current attempt. */
export async function markSent(db: Queryable, input: { id: string; attempt: number; now: Date; rejected: readonly string[] }): Promise<boolean> {
  const rows = await db.query(
    `update platform.email_outbox
        set state = 'sent', text_body = null, html_body = null, rejected = $4::text[], sent_at = $3, finished_at = $3, updated_at = $3,
            lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'sending' returning id`,
    [input.id, input.attempt, input.now, input.rejected.length === 0 ? null : input.rejected])
  return rows.length > 0
}

/**
 * markSent and claimMessages in one statement (one round trip): records the sent message and
 * claims up to `limit` due messages for the slot it frees. The claim cannot see the message
 * just marked (one snapshot), which is `sending`, so never claims it again.
 */
export async function markSentAndClaim(
  db: Queryable,
  input: { id: string; attempt: number; now: Date; rejected: readonly string[]; limit: number; owner: string; leaseSeconds: number },
): Promise<ClaimedMessage[]> {
  return db.query<ClaimedMessage>(
    `with sent as (
       update platform.email_outbox
          set state = 'sent', text_body = null, html_body = null, rejected = $4::text[], sent_at = $3, finished_at = $3, updated_at = $3,
              lease_owner = null, lease_expires_at = null
        where id = $1 and attempts = $2 and state = 'sending' returning id
     ), chosen as (
       select id from platform.email_outbox
        where state = 'queued' and run_at <= $3
        order by run_at, id
        limit $5
        for update skip locked
     )
     update platform.email_outbox m
        set state = 'sending', attempts = m.attempts + 1, updated_at = $3, lease_owner = $6,
            lease_expires_at = $3::timestamptz + make_interval(secs => $7)
       from chosen where m.id = chosen.id
     returning m.*`,
    [input.id, input.attempt, input.now, input.rejected.length === 0 ? null : input.rejected, input.limit, input.owner, input.leaseSeconds])
}

/**
 * The attempt failed: queued again at `retryAt`, or (null) failed for good with its bodies
 * discarded. False when it is no longer the current attempt.
 */
export async function markFailed(
  db: Queryable, input: { id: string; attempt: number; now: Date; error: OutboxError; retryAt: Date | null },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.email_outbox
        set state = case when $5::timestamptz is null then 'failed' else 'queued' end,
            run_at = coalesce($5::timestamptz, run_at),
            text_body = case when $5::timestamptz is null then null else text_body end,
            html_body = case when $5::timestamptz is null then null else html_body end,
            finished_at = case when $5::timestamptz is null then $3::timestamptz else null end,
            last_error = $4::jsonb, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'sending' returning id`,
    [input.id, input.attempt, input.now, JSON.stringify(input.error), input.retryAt])
  return rows.length > 0
}

/**
 * Sending attempts whose lease expired (their process died): each counts as a failed attempt,
 * queued again after the schedule's delay for that attempt, or failed past the schedule.
 * `delaysSeconds[n - 1]` is the wait after attempt n.
 */
export async function recoverExpiredSends(
  db: Queryable, options: { now: Date; error: OutboxError; delaysSeconds: readonly number[]; limit: number },
): Promise<number> {
  const rows = await db.query(
    `with expired as (
       select id from platform.email_outbox
        where state = 'sending' and lease_expires_at < $1
        order by lease_expires_at limit $4 for update skip locked
     )
     update platform.email_outbox m
        set state = case when m.attempts > cardinality($3::float8[]) then 'failed' else 'queued' end,
            run_at = case when m.attempts > cardinality($3::float8[]) then m.run_at
                          else $1::timestamptz + make_interval(secs => ($3::float8[])[m.attempts]) end,
            text_body = case when m.attempts > cardinality($3::float8[]) then null else m.text_body end,
            html_body = case when m.attempts > cardinality($3::float8[]) then null else m.html_body end,
            finished_at = case when m.attempts > cardinality($3::float8[]) then $1 else null end,
            last_error = $2::jsonb, lease_owner = null, lease_expires_at = null, updated_at = $1
       from expired where m.id = expired.id
     returning m.id`,
    [options.now, JSON.stringify(options.error), options.delaysSeconds, options.limit],
  )
  return rows.length
}

/** One message of an app, without its bodies. */
export async function findMessage(db: Queryable, key: { appId: string; namespaceId: string; id: string }): Promise<OutboxRow | undefined> {
  return first<OutboxRow>(db, `select ${COLUMNS} from platform.email_outbox where id = $1 and app_id = $2 and namespace_id = $3`,
    [key.id, key.appId, key.namespaceId])
}

/** Deletes up to `limit` messages that ended before `before`; returns how many. */
export async function purgeFinishedMessages(db: Queryable, options: { before: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.email_outbox where id in (
       select id from platform.email_outbox where state in ('sent', 'failed') and finished_at < $1 limit $2)
     returning id`,
    [options.before, options.limit])
  return rows.length
}

/** Deletes send windows that started before `before`; returns how many. */
export async function purgeSendWindows(db: Queryable, before: Date): Promise<number> {
  const rows = await db.query(`delete from platform.email_send_windows where window_start < $1 returning 1`, [before])
  return rows.length
}
