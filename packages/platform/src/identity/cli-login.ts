/**
 * `service login`: the CLI gets an owner API token by a person's approval in the browser,
 * and never a browser session (spec 5.3). The CLI starts a login on `{base_url}` and shows
 * an approval URL and a user code; the person opens the URL, signs in at `{auth_url}` if
 * needed, checks the code against the terminal and approves with a CSRF-protected form.
 * The CLI polls with a secret only it holds; the first poll after approval mints a new
 * owner token named `cli` for the approver and returns it, once. Later polls see
 * `collected`. Only confirmed accounts may approve; a login lives 10 minutes.
 *
 * Also `DELETE /v1/me/token`, with which `service logout` revokes the token it holds.
 */
import { randomInt } from 'node:crypto'
import { limitPerClient } from '../http/client-address.ts'
import { Hono } from 'hono'
import { first, type Db, type Queryable } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { newSecret, sha256 } from '../lib/crypto.ts'
import { ServiceError } from '../lib/errors.ts'
import type { HostUrls } from '../http/hosts.ts'
import { bearerToken, requireOwner, type OwnerEnv } from '../http/owner-auth.ts'
import { readObject } from '../http/json.ts'
import { browserSession, confirmFirstPage, pageErrorHandler, signInFirst } from './app-token-pages.ts'
import { isUuid } from '../lib/ids.ts'
import type { CookieOptions } from './cookies.ts'
import { csrfToken, readForm } from './forms.ts'
import { escapeHtml, hidden, page } from '../lib/html.ts'
import { issueOwnerToken, revokeOwnerToken, verifyOwnerToken } from './owner-tokens.ts'
import { findUserById } from './users.ts'

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

interface LoginRow extends Record<string, unknown> {
  id: string
  user_code: string
  created_at: Date
  expires_at: Date
  approved_by: string | null
  collected_at: Date | null
}

const LOGIN_COLUMNS = 'id, user_code, created_at, expires_at, approved_by, collected_at'

function loginStatus(row: LoginRow, now: Date): CliLoginStatus {
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

async function findLogin(db: Queryable, id: string): Promise<LoginRow | null> {
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

/** `{base_url}/v1/cli/logins`: start (no credentials) and poll (the poll secret). */
export function cliLoginRoutes(deps: { db: Db; clock: Clock; urls: HostUrls; trustProxy?: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, { name: 'cli-login-client', limit: 30, windowSeconds: 15 * 60 }))
  routes.post('/', async (c) => {
    const login = await startCliLogin(db, clock)
    return c.json({
      id: login.id,
      approveUrl: `${deps.urls.auth}/cli/login/${login.id}`,
      userCode: login.userCode,
      pollToken: login.pollToken,
      expiresAt: login.expiresAt.toISOString(),
    }, 201, { 'cache-control': 'no-store' })
  })
  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c, 4096)
    const pollToken = typeof body.pollToken === 'string' ? body.pollToken : ''
    const outcome = await db.transaction((tx) => pollCliLogin(tx, clock, { id: c.req.param('id'), pollToken }))
    if (!outcome) throw new ServiceError('NOT_FOUND', 'no such CLI login (or the poll token does not match)')
    return c.json(outcome, 200, { 'cache-control': 'no-store' })
  })
  return routes
}

/** `{base_url}/v1/me/token`: `DELETE` revokes the owner token that authorizes the call. */
export function meTokenRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner(deps))
  routes.delete('/', async (c) => {
    const verified = await verifyOwnerToken(deps.db, deps.clock, bearerToken(c.req.header('authorization')) ?? '')
    if (!verified || !(await revokeOwnerToken(deps.db, deps.clock, verified.user.id, verified.tokenId))) {
      throw new ServiceError('UNAUTHENTICATED', 'the owner API token is unknown or revoked')
    }
    return c.body(null, 204)
  })
  return routes
}

/** `{auth_url}/cli/login/:id`: the approval page (GET shows, POST with CSRF approves). */
export function cliLoginPages(deps: { db: Db; clock: Clock; logger: Logger; urls: HostUrls; cookies: CookieOptions }) {
  const { db, clock } = deps
  const routes = new Hono()
  routes.onError(pageErrorHandler(deps.logger, 'CLI sign-in'))

  const problem = (c: Parameters<typeof page>[0], status: CliLoginStatus | 'unknown') => {
    const [code, title, text] = status === 'unknown'
      ? [404, 'No such sign-in', 'This CLI sign-in does not exist. Run <code>service login</code> again.']
      : status === 'expired'
        ? [410, 'Sign-in expired', 'This CLI sign-in has expired (they last 10 minutes). Run <code>service login</code> again.']
        : [410, 'Already approved', 'This CLI sign-in was already approved. You can close this window.']
    return page(c, title, `<h1>${title}</h1><p>${text}</p>`, { status: code })
  }

  routes.get('/cli/login/:id', async (c) => {
    const id = c.req.param('id')
    const active = await browserSession(c, deps)
    if (!active) return signInFirst(c, `/cli/login/${encodeURIComponent(id)}`)
    const login = await findLogin(db, id)
    if (!login) return problem(c, 'unknown')
    const status = loginStatus(login, clock.now())
    if (status !== 'pending') return problem(c, status)
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    return page(c, 'Sign in the service CLI', `<h1>Sign in the service CLI?</h1>
      <p>The command line asks to act as <strong>${escapeHtml(active.user.email)}</strong>: it can manage and deploy your apps.</p>
      <p>Check that your terminal shows this code:</p>
      <p class="code">${escapeHtml(login.user_code)}</p>
      <p class="muted">Approve only if you ran <code>service login</code> yourself just now. If someone sent you this link, close this window.</p>
      <form method="post" action="/cli/login/${escapeHtml(login.id)}">${hidden('csrf', csrfToken(c, deps.cookies))}
        <button>Approve</button></form>`)
  })

  routes.post('/cli/login/:id', async (c) => {
    await readForm(c, { origin: deps.urls.auth, cookies: deps.cookies })
    const active = await browserSession(c, deps)
    if (!active) throw new ServiceError('AUTH_REQUIRED', 'sign in first, then open the link from your terminal again')
    if (!active.user.emailConfirmedAt) return confirmFirstPage(c, active.user.email)
    const outcome = await approveCliLogin(db, clock, { id: c.req.param('id'), userId: active.user.id })
    if (!outcome.ok) return problem(c, outcome.status)
    return page(c, 'CLI signed in', `<h1>Approved</h1>
      <p>The service CLI is signed in as <strong>${escapeHtml(active.user.email)}</strong>. You can close this window
      and return to your terminal.</p>`)
  })

  return routes
}
