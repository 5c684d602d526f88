/**
 * Email sign-in, scanner-safe. The person submits an address in one window (which gets a
 * path-scoped claim cookie) and opens the emailed link, perhaps elsewhere. Opening the link
 * only renders a review page (GET never approves) and sets a short-lived preview cookie;
 * approval is a POST that must carry that cookie, so a mail scanner that prefetches, or that
 * submits the form without the cookie, approves nothing. The approving window gets no
 * session; the initiating window claims the approval with its claim cookie and creates its
 * own. Links are single-use and expire after 15 minutes (an agent onboarding's after 24 hours,
 * the owner's confirmation deadline).
 *
 * The claim is bound to the initiating browser twice: its claim cookie, and the CSRF cookie
 * the sign-in form was posted with (stored hash covers both). The claim cookie is path-scoped
 * (spec 5.1), so over https it can carry only the `__Secure-` prefix, which a page on a
 * sibling subdomain can still plant; the CSRF cookie is `__Host-`, which it cannot. A planted
 * claim therefore never matches, and no browser can be made to claim someone else's approval.
 */
import { first, type Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { browserSecret, hashSecret as sha256, matchesHash } from '../browser-secrets.ts'

export type Purpose = 'sign_in' | 'confirm_email' | 'onboarding'

export interface SignInRequest {
  id: string
  purpose: Purpose
  email: string
  userId: string | null
  continueTo: string | null
  createdAt: Date
  expiresAt: Date
  approvedAt: Date | null
  claimedAt: Date | null
}

interface RequestRow extends Record<string, unknown> {
  id: string
  purpose: Purpose
  email: string
  user_id: string | null
  continue_to: string | null
  created_at: Date
  expires_at: Date
  approved_at: Date | null
  claimed_at: Date | null
  link_hash: Uint8Array
  claim_hash: Uint8Array | null
  preview_hash: Uint8Array | null
}

function fromRow(row: RequestRow): SignInRequest {
  return {
    id: row.id,
    purpose: row.purpose,
    email: row.email,
    userId: row.user_id,
    continueTo: row.continue_to,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    approvedAt: row.approved_at,
    claimedAt: row.claimed_at,
  }
}

const COLUMNS = 'id, purpose, email, user_id, continue_to, created_at, expires_at, approved_at, claimed_at, link_hash, claim_hash, preview_hash'

/** What the initiating browser holds: its claim cookie and the CSRF cookie of its form. */
export interface ClaimProof {
  claim: string | undefined
  csrf: string | undefined
}

function claimValue(proof: ClaimProof): string | undefined {
  return proof.claim && proof.csrf ? `${proof.claim}.${proof.csrf}` : undefined
}

export interface StartedRequest {
  request: SignInRequest
  /** The secret that goes into the emailed link. */
  linkSecret: string
  /** The initiating browser's claim cookie (null when no browser waits, e.g. a resend). */
  claimSecret: string | null
}

export async function startRequest(
  db: Queryable,
  clock: Clock,
  input: {
    purpose: Purpose; email: string; userId: string | null; continueTo: string | null
    /** The initiating browser's CSRF token, when a browser waits to claim the approval. */
    claimCsrf: string | null
  },
): Promise<StartedRequest> {
  const now = clock.now()
  const link = browserSecret()
  const claim = input.claimCsrf ? browserSecret() : null
  const claimHash = claim ? sha256(claimValue({ claim: claim.value, csrf: input.claimCsrf! })!) : null
  const [row] = await db.query<RequestRow>(
    `insert into platform.sign_in_requests (purpose, email, user_id, link_hash, claim_hash, continue_to, created_at, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning ${COLUMNS}`,
    [input.purpose, input.email, input.userId, link.hash, claimHash, input.continueTo, now,
      new Date(now.getTime() + (input.purpose === 'onboarding' ? LIFETIMES.onboardingLinkMs : LIFETIMES.linkMs))],
  )
  return { request: fromRow(row!), linkSecret: link.value, claimSecret: claim?.value ?? null }
}

/**
 * Ends the unapproved links that lead to `continueTo` (a resend replaces them: only the
 * newest link of a request works).
 */
export async function expirePendingLinks(db: Queryable, clock: Clock, input: { purpose: Purpose; continueTo: string }): Promise<void> {
  await db.query(
    `update platform.sign_in_requests set expires_at = $3
      where purpose = $1 and continue_to = $2 and approved_at is null and expires_at > $3`,
    [input.purpose, input.continueTo, clock.now()])
}

export type LinkState = 'valid' | 'expired' | 'used' | 'unknown'

/** Looks a link up without changing it: the review page's GET. */
export async function inspectLink(db: Queryable, clock: Clock, id: string, linkSecret: string): Promise<{ state: LinkState; request?: SignInRequest }> {
  const row = await byId(db, id)
  if (!row || !matchesHash(row.link_hash, linkSecret)) return { state: 'unknown' }
  if (row.approved_at) return { state: 'used', request: fromRow(row) }
  if (row.expires_at <= clock.now()) return { state: 'expired', request: fromRow(row) }
  return { state: 'valid', request: fromRow(row) }
}

/** Binds a new preview cookie to the request (the latest review page wins). */
export async function bindPreview(db: Queryable, id: string): Promise<string> {
  const preview = browserSecret()
  await db.query('update platform.sign_in_requests set preview_hash = $2 where id = $1 and approved_at is null', [id, preview.hash])
  return preview.value
}

export type ApproveOutcome = { ok: true; request: SignInRequest } | { ok: false; reason: LinkState | 'preview_missing' }

/**
 * Approves a link: valid, unexpired, unused, and presented with the preview cookie its
 * review page set. Single-use: the approval is recorded atomically.
 */
export async function approveLink(
  db: Queryable,
  clock: Clock,
  input: { id: string; linkSecret: string; previewSecret: string | undefined },
): Promise<ApproveOutcome> {
  const inspected = await inspectLink(db, clock, input.id, input.linkSecret)
  if (inspected.state !== 'valid') return { ok: false, reason: inspected.state }
  const row = (await byId(db, input.id))!
  if (!matchesHash(row.preview_hash, input.previewSecret)) return { ok: false, reason: 'preview_missing' }
  const now = clock.now()
  const updated = await db.query<RequestRow>(
    `update platform.sign_in_requests set approved_at = $2, preview_hash = null
      where id = $1 and approved_at is null and expires_at > $2 returning ${COLUMNS}`, [input.id, now])
  if (!updated[0]) return { ok: false, reason: 'used' }
  return { ok: true, request: fromRow(updated[0]) }
}

export type ClaimState = 'pending' | 'approved' | 'expired' | 'claimed' | 'unknown'

/** What the initiating window sees while it waits (only with its claim cookie). */
export async function claimState(db: Queryable, clock: Clock, input: { id: string; proof: ClaimProof }): Promise<ClaimState> {
  const row = await byId(db, input.id)
  if (!row || !matchesHash(row.claim_hash, claimValue(input.proof))) return 'unknown'
  if (row.claimed_at) return 'claimed'
  if (row.approved_at) return 'approved'
  return row.expires_at <= clock.now() ? 'expired' : 'pending'
}

/** Claims an approved request for the browser holding the claim cookie, once. */
export async function claimApproved(db: Queryable, clock: Clock, input: { id: string; proof: ClaimProof }): Promise<SignInRequest | null> {
  const id = input.id
  if ((await claimState(db, clock, input)) !== 'approved') return null
  const now = clock.now()
  // The claim must follow approval within the link's lifetime.
  const rows = await db.query<RequestRow>(
    `update platform.sign_in_requests set claimed_at = $2
      where id = $1 and approved_at is not null and claimed_at is null and approved_at + interval '15 minutes' > $2
      returning ${COLUMNS}`, [id, now])
  return rows[0] ? fromRow(rows[0]) : null
}

async function byId(db: Queryable, id: string): Promise<RequestRow | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined
  return first<RequestRow>(db, `select ${COLUMNS} from platform.sign_in_requests where id = $1`, [id])
}

/** Records whose the request is once its address has an account (a new address proved by its own mailbox). */
export async function attachRequestUser(db: Queryable, input: { requestId: string; userId: string }): Promise<void> {
  await db.query('update platform.sign_in_requests set user_id = $2 where id = $1', [input.requestId, input.userId])
}
