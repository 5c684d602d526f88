/**
 * Unconfirmed accounts (password registration, agent onboarding) have 24 hours to confirm
 * their email. When the deadline passes: their provisional browser sessions and grants are
 * revoked and every app they own is paused (runtime, Functions and cron stop; data, files,
 * deployments, secrets and backups stay). Confirming resumes exactly the apps the deadline
 * paused. `enforceConfirmationDeadlines` runs on a timer and is safe to run from several
 * processes at once (each user is handled by one statement's row locks).
 */
import type { Db } from '../../db/db.ts'
import { APP_CHANGED } from '../../apps/apps.ts'
import type { Clock } from '../../lib/clock.ts'
import { announceChange, dropLocal } from '../../db/notified-cache.ts'
import { LIFETIMES } from '../lifetimes.ts'

export const VERIFICATION_REQUIRED = 'verification_required'

/**
 * Pauses the accounts whose deadline passed; returns how many were paused. The pause is
 * announced on APP_CHANGED at commit, and this process's app caches are emptied before
 * returning, so the very next request here is refused (other processes: on the notice).
 */
export async function enforceConfirmationDeadlines(db: Db, clock: Clock): Promise<number> {
  const now = clock.now()
  const paused = await db.transaction(async (tx) => {
    const users = await tx.query<{ id: string }>(
      `update platform.users set paused_at = $1
        where email_confirmed_at is null and paused_at is null and confirmation_deadline <= $1
        returning id`, [now])
    for (const { id } of users) {
      await tx.query(`update platform.sessions set revoked_at = $2, revoked_reason = 'confirmation_deadline'
                       where user_id = $1 and revoked_at is null`, [id, now])
      await tx.query('update platform.app_sessions set revoked_at = $2 where user_id = $1 and revoked_at is null', [id, now])
      await tx.query('delete from platform.app_grants where user_id = $1', [id])
      await tx.query(`update platform.apps set status = 'paused', paused_reason = $2, updated_at = $3
                       where owner_id = $1 and status = 'active'`, [id, VERIFICATION_REQUIRED, now])
      await announceChange(tx, APP_CHANGED, `owner:${id}`)
    }
    return users.length
  })
  if (paused > 0) dropLocal(db, APP_CHANGED)
  return paused
}

/** What the first proof of a mailbox took from an account that someone else may have set up. */
export interface ConfirmationOutcome {
  /** A password set while the address was unconfirmed was removed. */
  passwordDiscarded: boolean
  /** Browser sessions (with their app sessions) that existed before were ended. */
  sessionsEnded: number
}

/**
 * Marks an email confirmed and resumes what its deadline paused (announced like a pause).
 *
 * Account pre-hijacking: anyone can register someone else's address with a password and keep
 * the provisional session. So when the mailbox is first proven by a browser that does not
 * hold a session of this account (`byRegistrant: false`), the password set while unconfirmed
 * is discarded and every session and app session that existed before is ended, in the same
 * transaction: whoever registered the address keeps nothing. The registrant confirming in
 * their own browser keeps both, and its provisional sessions, which ended at the deadline,
 * now last the 30 days of a confirmed session. An address confirmed already is left as it is.
 */
export async function confirmEmail(db: Db, clock: Clock, input: { userId: string; byRegistrant: boolean }): Promise<ConfirmationOutcome> {
  const now = clock.now()
  const userId = input.userId
  const outcome = await db.transaction(async (tx) => {
    const [before] = await tx.query<{ unconfirmed: boolean; has_password: boolean }>(
      `select email_confirmed_at is null as unconfirmed, password_hash is not null as has_password
         from platform.users where id = $1 for update`, [userId])
    const result: ConfirmationOutcome = { passwordDiscarded: false, sessionsEnded: 0 }
    if (before?.unconfirmed && !input.byRegistrant) {
      result.passwordDiscarded = before.has_password
      if (before.has_password) await tx.query('update platform.users set password_hash = null where id = $1', [userId])
      const ended = await tx.query<{ id: string }>(
        `update platform.sessions set revoked_at = $2, revoked_reason = 'mailbox_proven_elsewhere'
          where user_id = $1 and revoked_at is null returning id`, [userId, now])
      await tx.query('update platform.app_sessions set revoked_at = $2 where user_id = $1 and revoked_at is null', [userId, now])
      result.sessionsEnded = ended.length
    }
    await tx.query(`update platform.users set email_confirmed_at = coalesce(email_confirmed_at, $2),
                     confirmation_deadline = null, paused_at = null where id = $1`, [userId, now])
    // The sessions that survive (the registrant's own) become confirmed sessions: a fixed 30
    // days from their start (spec 2.1), no longer the confirmation deadline; their app
    // sessions live as long as their own 30 days and the central session allow.
    await tx.query(`update platform.sessions set provisional = false, expires_at = created_at + $3 * interval '1 millisecond'
                     where user_id = $1 and provisional and revoked_at is null and expires_at > $2`, [userId, now, LIFETIMES.sessionMs])
    await tx.query(`update platform.app_sessions a set expires_at = least(a.created_at + $3 * interval '1 millisecond', s.expires_at)
                      from platform.sessions s
                     where s.id = a.session_id and a.user_id = $1 and a.revoked_at is null and a.expires_at > $2 and s.revoked_at is null`,
    [userId, now, LIFETIMES.sessionMs])
    await tx.query(`update platform.apps set status = 'active', paused_reason = null, updated_at = $3
                     where owner_id = $1 and status = 'paused' and paused_reason = $2`, [userId, VERIFICATION_REQUIRED, now])
    await announceChange(tx, APP_CHANGED, `owner:${userId}`)
    return result
  })
  dropLocal(db, APP_CHANGED)
  return outcome
}
