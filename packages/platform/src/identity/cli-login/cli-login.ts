/**
 * `service login`: the CLI gets an owner API token by a person's approval in the browser,
 * and never a browser session (spec 5.3). The CLI starts a login on `{base_url}` and shows
 * an approval URL and a user code; the person opens the URL, signs in at `{auth_url}` if
 * needed, checks the code against the terminal and approves with a CSRF-protected form.
 * The CLI polls with a secret only it holds; the first poll after approval mints a new
 * owner token named `cli` for the approver and returns it, once. Later polls see
 * `collected`. Only confirmed accounts may approve; a login lives 10 minutes.
 *
 * This file is the flow itself; `routes.ts` holds its HTTP surface (and `DELETE
 * /v1/me/token`, with which `service logout` revokes the token it holds).
 */
import { randomInt } from 'node:crypto'
import { first, type Db, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { newSecret, sha256 } from '../../lib/crypto.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { issueOwnerToken, revokeOwnerToken, verifyOwnerToken } from '../accounts/owner-tokens.ts'
import { findUserById } from '../accounts/users.ts'

export const CLI_LOGIN_MS = 10 * 60 * 1000
/** The name of the owner tokens `service login` receives. */
export const CLI_TOKEN_NAME = 'cli'

/** Consonants only: no digits or vowels to misread, and no words spelled by accident. */
const CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'

/** A code like `BCDF-GHJK` that the terminal and the approval page both show. */
export function newUserCode(): string {
  let code = ''
  for (let i = 0; i < 8; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

export type CliLoginStatus = 'pending' | 'approved' | 'collected' | 'expired'

export interface LoginRow extends Record<string, unknown> {
  id: string
  user_code: string
  created_at: Date
  expires_at: Date
  approved_by: string | null
  collected_at: Date | null
}

const LOGIN_COLUMNS = 'id, user_code, created_at, expires_at, approved_by, collected_at'

export function loginStatus(row: LoginRow, now: Date): CliLoginStatus {
  if (row.collected_at) return 'collected'
  if (row.expires_at.getTime() <= now.getTime()) return 'expired'
  return row.approved_by ? 'approved' : 'pending'
}

/** Starts a login; returns the poll secret once (stored hashed). Purges logins a day past expiry. */
export async function startCliLogin(db: Queryable, clock: Clock): Promise<{ id: string; userCode: string; pollToken: string; expiresAt: Date }> {
  const now = clock.now()
  await db.query(`delete from platform.cli_logins where expires_at < $1::timestamptz - interval '1 day'`, [now])
  const pollToken = newSecret('')
  const userCode = newUserCode()
  const expiresAt = new Date(now.getTime() + CLI_LOGIN_MS)
  const [row] = await db.query<{ id: string }>(
    `insert into platform.cli_logins (poll_hash, user_code, created_at, expires_at) values ($1, $2, $3, $4) returning id`,
    [sha256(pollToken), userCode, now, expiresAt])
  return { id: row!.id, userCode, pollToken, expiresAt }
}

export async function findLogin(db: Queryable, id: string): Promise<LoginRow | null> {
  if (!isUuid(id)) return null
  return (await first<LoginRow>(db, `select ${LOGIN_COLUMNS} from platform.cli_logins where id = $1`, [id])) ?? null
}

/** Approves a pending, unexpired login for a confirmed user; otherwise says why not. */
export async function approveCliLogin(
  db: Queryable,
  clock: Clock,
  input: { id: string; userId: string },
): Promise<{ ok: true } | { ok: false; status: CliLoginStatus | 'unknown' }> {
  if (!isUuid(input.id)) return { ok: false, status: 'unknown' }
  const now = clock.now()
  const rows = await db.query(
    `update platform.cli_logins set approved_by = $2, approved_at = $3
      where id = $1 and approved_by is null and collected_at is null and expires_at > $3 returning id`,
    [input.id, input.userId, now])
  if (rows.length > 0) return { ok: true }
  const row = await findLogin(db, input.id)
  return { ok: false, status: row ? loginStatus(row, now) : 'unknown' }
}

/**
 * The CLI's poll. Run it in a transaction: the first poll after approval mints the owner
 * token (for a still-confirmed approver) and marks the login collected.
 */
export async function pollCliLogin(
  db: Queryable,
  clock: Clock,
  input: { id: string; pollToken: string },
): Promise<{ status: Exclude<CliLoginStatus, 'approved'> } | { status: 'approved'; token: string } | null> {
  if (!isUuid(input.id) || input.pollToken.length > 100) return null
  const row = await first<LoginRow>(db,
    `select ${LOGIN_COLUMNS} from platform.cli_logins where id = $1 and poll_hash = $2 for update`,
    [input.id, sha256(input.pollToken)])
  if (!row) return null
  const now = clock.now()
  const status = loginStatus(row, now)
  if (status !== 'approved') return { status }
  const user = await findUserById(db, row.approved_by!)
  // An approver who lost confirmation (or the account) since approving gets nothing.
  if (!user || !user.emailConfirmedAt) return { status: 'expired' }
  const issued = await issueOwnerToken(db, user.id, CLI_TOKEN_NAME)
  await db.query('update platform.cli_logins set collected_at = $2, token_id = $3 where id = $1', [row.id, now, issued.id])
  return { status: 'approved', token: issued.token }
}
