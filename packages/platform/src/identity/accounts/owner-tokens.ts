/**
 * Owner API tokens (`svc_owner_…`): the credential the CLI and programmatic builders use on
 * the control plane. The value is shown once at creation; only its SHA-256 is stored, so a
 * database leak reveals no usable token. Lookup is by hash, so comparing never touches the
 * secret's bytes in a way an attacker can time.
 */
import { first, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { newSecret, sha256 } from '../../lib/crypto.ts'
import { userFromRow, type User } from './users.ts'
import { createUsageStamps } from '../../db/usage-stamps.ts'

export const OWNER_TOKEN_PREFIX = 'svc_owner_'

export interface IssuedToken {
  id: string
  /** The secret: returned once, never stored. */
  token: string
}

export async function issueOwnerToken(db: Queryable, userId: string, name: string): Promise<IssuedToken> {
  const token = newSecret(OWNER_TOKEN_PREFIX)
  const [row] = await db.query<{ id: string }>(
    'insert into platform.owner_tokens (user_id, name, token_hash) values ($1, $2, $3) returning id',
    [userId, name, sha256(token)],
  )
  return { id: row!.id, token }
}

/** The user an owner token belongs to, or null when it is unknown or revoked. */
const ownerTokenUsage = createUsageStamps({ table: 'platform.owner_tokens' })

export async function verifyOwnerToken(
  db: Queryable,
  clock: Clock,
  token: string,
): Promise<{ user: User; tokenId: string } | null> {
  if (!token.startsWith(OWNER_TOKEN_PREFIX) || token.length > 200) return null
  const row = await first<Record<string, unknown>>(db,
    `select t.id as token_id, u.id, u.organisation_id, u.email, u.display_name, u.organisation_role,
            u.is_platform_admin, u.email_confirmed_at, u.confirmation_deadline, u.paused_at
       from platform.owner_tokens t join platform.users u on u.id = t.user_id
      where t.token_hash = $1 and t.revoked_at is null`, [sha256(token)])
  if (!row) return null
  ownerTokenUsage.touch(db, clock, row.token_id as string)
  return { user: userFromRow(row as Parameters<typeof userFromRow>[0]), tokenId: row.token_id as string }
}

export async function revokeOwnerToken(db: Queryable, clock: Clock, userId: string, tokenId: string): Promise<boolean> {
  const rows = await db.query('update platform.owner_tokens set revoked_at = $3 where id = $1 and user_id = $2 and revoked_at is null returning id',
    [tokenId, userId, clock.now()])
  return rows.length > 0
}
