/**
 * Unconfirmed accounts (password registration, agent onboarding) have 24 hours to confirm
 * their email. When the deadline passes: their provisional browser sessions and grants are
 * revoked and every app they own is paused (runtime, Functions and cron stop; data, files,
 * deployments, secrets and backups stay). Confirming resumes exactly the apps the deadline
 * paused. `enforceConfirmationDeadlines` runs on a timer and is safe to run from several
 * processes at once (each user is handled by one statement's row locks).
 */
import type { Db } from '../db/db.ts'
import { APP_CHANGED } from '../apps/apps.ts'
import type { Clock } from '../lib/clock.ts'
import { announceChange, dropLocal } from '../lib/notified-cache.ts'

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

/** Marks an email confirmed and resumes what its deadline paused (announced like a pause). */
export async function confirmEmail(db: Db, clock: Clock, userId: string): Promise<void> {
  const now = clock.now()
  await db.transaction(async (tx) => {
    await tx.query(`update platform.users set email_confirmed_at = coalesce(email_confirmed_at, $2),
                     confirmation_deadline = null, paused_at = null where id = $1`, [userId, now])
    await tx.query('update platform.sessions set provisional = false where user_id = $1 and revoked_at is null', [userId])
    await tx.query(`update platform.apps set status = 'active', paused_reason = null, updated_at = $3
                     where owner_id = $1 and status = 'paused' and paused_reason = $2`, [userId, VERIFICATION_REQUIRED, now])
    await announceChange(tx, APP_CHANGED, `owner:${userId}`)
  })
  dropLocal(db, APP_CHANGED)
}
