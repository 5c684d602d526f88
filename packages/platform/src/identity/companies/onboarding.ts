/**
 * Agent-driven onboarding (`start_onboarding`, spec 2.2 and 5.3). An agent names a person's
 * email and a project. A new email gets a provisional identity and a retained project
 * request with status `organisation_setup_required` (no app, no credential). An existing
 * email gets an approval email; the request waits. Either way the agent's credential (an
 * owner API token) is released only after the person confirms by the scanner-safe link and
 * belongs to a company, and only once, to the holder of the request's poll token.
 */
import { first, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { issueOwnerToken } from '../accounts/owner-tokens.ts'
import { browserSecret, matchesHash } from '../browser-secrets.ts'
import type { User } from '../accounts/users.ts'

export type OnboardingStatus = 'awaiting_confirmation' | 'organisation_setup_required' | 'ready'

export interface OnboardingRequest {
  id: string
  userId: string
  projectName: string
  status: OnboardingStatus
  confirmedAt: Date | null
}

interface Row extends Record<string, unknown> {
  id: string
  user_id: string
  project_name: string
  status: OnboardingStatus
  confirmed_at: Date | null
  poll_hash: Uint8Array
  credential_collected_at: Date | null
}

const COLUMNS = 'id, user_id, project_name, status, confirmed_at, poll_hash, credential_collected_at'

function fromRow(row: Row): OnboardingRequest {
  return { id: row.id, userId: row.user_id, projectName: row.project_name, status: row.status, confirmedAt: row.confirmed_at }
}

export async function createOnboarding(
  db: Queryable,
  clock: Clock,
  input: { user: User; projectName: string; isNewIdentity: boolean },
): Promise<{ request: OnboardingRequest; pollToken: string }> {
  const poll = browserSecret()
  const status: OnboardingStatus = input.isNewIdentity ? 'organisation_setup_required' : 'awaiting_confirmation'
  const [row] = await db.query<Row>(
    `insert into platform.onboarding_requests (user_id, project_name, status, poll_hash, created_at)
     values ($1, $2, $3, $4, $5) returning ${COLUMNS}`,
    [input.user.id, input.projectName, status, poll.hash, clock.now()])
  return { request: fromRow(row!), pollToken: poll.value }
}

export async function findOnboarding(db: Queryable, id: string): Promise<OnboardingRequest | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null
  const row = await first<Row>(db, `select ${COLUMNS} from platform.onboarding_requests where id = $1`, [id])
  return row ? fromRow(row) : null
}

/** Recomputes the status of a user's requests from confirmation and company membership. */
export async function settleOnboarding(db: Queryable, userId: string): Promise<void> {
  await db.query(
    `update platform.onboarding_requests r set status = case
        when r.confirmed_at is null then r.status
        when u.organisation_id is null then 'organisation_setup_required'
        else 'ready' end
       from platform.users u where u.id = r.user_id and r.user_id = $1 and r.status <> 'ready'`, [userId])
}

/** The person confirmed the request's email link. */
export async function confirmOnboarding(db: Queryable, clock: Clock, id: string): Promise<void> {
  const rows = await db.query<{ user_id: string }>(
    'update platform.onboarding_requests set confirmed_at = coalesce(confirmed_at, $2) where id = $1 returning user_id', [id, clock.now()])
  if (rows[0]) await settleOnboarding(db, rows[0].user_id)
}

/**
 * A request as its agent sees it (the poll token must match), with the person's address. Until
 * confirmation, `status` tells a new identity (`organisation_setup_required`) from an existing
 * one (`awaiting_confirmation`).
 */
export async function findOnboardingForAgent(
  db: Queryable,
  input: { id: string; pollToken: string },
): Promise<{ request: OnboardingRequest; email: string } | null> {
  if (!/^[0-9a-f-]{36}$/i.test(input.id) || input.pollToken.length > 100) return null
  const row = await first<Row & { email: string }>(db,
    `select r.id, r.user_id, r.project_name, r.status, r.confirmed_at, r.poll_hash, r.credential_collected_at, u.email
       from platform.onboarding_requests r join platform.users u on u.id = r.user_id where r.id = $1`, [input.id])
  if (!row || !matchesHash(row.poll_hash, input.pollToken)) return null
  return { request: fromRow(row), email: row.email }
}

export type PollAnswer = { status: OnboardingStatus; token?: string } | null

/**
 * What the agent sees. When the request is ready, the first poll receives a new owner API
 * token for the person; later polls never see it again.
 */
export async function pollOnboarding(db: Queryable, clock: Clock, id: string, pollToken: string): Promise<PollAnswer> {
  if (!/^[0-9a-f-]{36}$/i.test(id) || pollToken.length > 100) return null
  const row = await first<Row>(db, `select ${COLUMNS} from platform.onboarding_requests where id = $1 for update`, [id])
  if (!row || !matchesHash(row.poll_hash, pollToken)) return null
  if (row.status !== 'ready' || row.credential_collected_at) return { status: row.status }
  const issued = await issueOwnerToken(db, row.user_id, `agent onboarding: ${row.project_name}`.slice(0, 120))
  await db.query('update platform.onboarding_requests set credential_collected_at = $2 where id = $1', [id, clock.now()])
  return { status: 'ready', token: issued.token }
}
