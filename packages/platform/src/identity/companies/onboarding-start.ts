/**
 * `start_onboarding` itself (spec 2.2, 5.3), for the HTTP endpoint and the MCP tool alike:
 * a new email gets a provisional identity and a retained project request (only while
 * registration is open: REGISTRATION_CLOSED otherwise), an existing one an approval email;
 * both at most 5 emails an hour per address, and both callers also bound each client address
 * to ONBOARDING_CLIENT_LIMIT. Resends end the links sent before.
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { createRateLimiter, rateLimited, type RateRule } from '../../db/rate-limit.ts'
import type { HostUrls } from '../../http/hosts.ts'
import type { Mail } from '../sign-in/routes.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { createOnboarding, findOnboardingForAgent, pollOnboarding, type OnboardingStatus, type PollAnswer } from './onboarding.ts'
import { expirePendingLinks, startRequest, type StartedRequest } from '../sign-in/requests.ts'
import { createUser, findUserByEmail, normaliseEmail } from '../accounts/users.ts'

/** Unauthenticated starts, per client address: the HTTP endpoint and the MCP tool share the count. */
export const ONBOARDING_CLIENT_LIMIT: RateRule = { name: 'onboarding-client', limit: 30, windowSeconds: 15 * 60 }

export interface OnboardingDeps {
  db: Db
  clock: Clock
  mailer: Mail
  urls: HostUrls
  /** SERVICE_REGISTRATION: whether a new address may get an identity (spec 5.1.5). */
  registration: boolean
}

const launchPath = (id: string) => `/launch/${id}`

/** Starts and resends both count against the address: at most 5 emails an hour. */
async function limitAddress(deps: OnboardingDeps, email: string): Promise<void> {
  const limit = await createRateLimiter(deps).hit({ name: 'onboarding-address', limit: 5, windowSeconds: 3600 }, email)
  if (!limit.allowed) throw rateLimited(limit.retryAfterSeconds)
}

async function sendLink(deps: OnboardingDeps, input: { email: string; projectName: string; isNew: boolean; link: StartedRequest }): Promise<void> {
  const url = `${deps.urls.auth}/confirm?r=${input.link.request.id}&t=${input.link.linkSecret}`
  await deps.mailer.send({
    to: input.email,
    subject: input.isNew ? `Confirm your email to start ${input.projectName}` : `Approve your coding agent for ${input.projectName}`,
    text: `${input.isNew
      ? `A coding agent started the project "${input.projectName}" for this address.`
      : `A coding agent asks to work on the project "${input.projectName}" with your account.`}\n\nOpen this link and press Approve if that was you. It works once, within 24 hours; a newer link from us replaces it:\n\n${url}\n\nIf it was not you, ignore this message; nothing happens without your approval.`,
  })
}

/**
 * Starts onboarding for `email` and the project `projectName` (1 to 80 characters); the agent
 * keeps `pollToken` to poll (and resend) with.
 *
 * @example
 * const started = await startOnboarding(deps, { email: 'ada@example.com', projectName: 'Orders' })
 * // { id, status: 'organisation_setup_required', pollToken }
 */
export async function startOnboarding(
  deps: OnboardingDeps, input: { email: unknown; projectName: unknown },
): Promise<{ id: string; status: OnboardingStatus; pollToken: string }> {
  const { db, clock } = deps
  const email = normaliseEmail(input.email)
  const projectName = typeof input.projectName === 'string' ? input.projectName.trim() : ''
  if (projectName.length < 1 || projectName.length > 80) {
    throw new ServiceError('VALIDATION_FAILED', 'projectName must be 1 to 80 characters', { details: { field: 'projectName' } })
  }
  await limitAddress(deps, email)
  const result = await db.transaction(async (tx) => {
    const existing = await findUserByEmail(tx, email)
    if (!existing && !deps.registration) {
      throw new ServiceError('REGISTRATION_CLOSED',
        'registration is closed on this platform: only an address that already has an account can start onboarding')
    }
    const user = existing ?? await createUser(tx, {
      email, organisationId: null, confirmationDeadline: new Date(clock.now().getTime() + LIFETIMES.confirmationMs),
    })
    const created = await createOnboarding(tx, clock, { user, projectName, isNewIdentity: !existing })
    const link = await startRequest(tx, clock, {
      purpose: 'onboarding', email, userId: user.id, continueTo: launchPath(created.request.id), claimCsrf: null,
    })
    return { ...created, isNew: !existing, link }
  })
  await sendLink(deps, { email, projectName, isNew: result.isNew, link: result.link })
  return { id: result.request.id, status: result.request.status, pollToken: result.pollToken }
}

/** Emails a new link while the person has not confirmed (only the newest link works). */
export async function resendOnboarding(
  deps: OnboardingDeps, input: { id: string; pollToken: string },
): Promise<{ id: string; status: OnboardingStatus; expiresAt: string }> {
  const { db, clock } = deps
  const { id } = input
  const found = await findOnboardingForAgent(db, input)
  if (!found) throw new ServiceError('NOT_FOUND', 'no onboarding request with that id and poll token')
  if (found.request.confirmedAt) {
    throw new ServiceError('CONFLICT', 'the person has already confirmed this request; poll it instead', { details: { status: found.request.status } })
  }
  await limitAddress(deps, found.email)
  const link = await db.transaction(async (tx) => {
    // Only the newest link works: a resend ends the links sent before it.
    await expirePendingLinks(tx, clock, { purpose: 'onboarding', continueTo: launchPath(id) })
    return startRequest(tx, clock, {
      purpose: 'onboarding', email: found.email, userId: found.request.userId, continueTo: launchPath(id), claimCsrf: null,
    })
  })
  await sendLink(deps, { email: found.email, projectName: found.request.projectName, isNew: found.request.status === 'organisation_setup_required', link })
  return { id, status: found.request.status, expiresAt: link.request.expiresAt.toISOString() }
}

/**
 * What the agent sees of its request; the first poll after it is ready carries a new owner API
 * token, once. NOT_FOUND for an unknown id or a poll token that does not match.
 */
export async function pollOnboardingRequest(db: Db, clock: Clock, input: { id: string; pollToken: string }): Promise<NonNullable<PollAnswer>> {
  const answer = await pollOnboarding(db, clock, input.id, input.pollToken)
  if (!answer) throw new ServiceError('NOT_FOUND', 'no onboarding request with that id and poll token')
  return answer
}
