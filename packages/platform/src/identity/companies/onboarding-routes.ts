/**
 * `start_onboarding` over HTTP (the MCP tool later calls the same code): `POST /v1/onboarding`,
 * the agent's `POST /v1/onboarding/:id/poll`, and `POST /v1/onboarding/:id/resend`, which
 * emails a new link while the person has not confirmed (the newest link alone works). No
 * credential comes back until the person has confirmed by the scanner-safe email link (valid
 * 24 hours, the owner's confirmation deadline) and belongs to a company.
 */
import { limitPerClient } from '../../http/client-address.ts'
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import { createRateLimiter, rateLimited } from '../../db/rate-limit.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { readObject } from '../../http/json.ts'
import type { Mail } from '../sign-in/routes.ts'
import { LIFETIMES } from '../lifetimes.ts'
import { createOnboarding, findOnboardingForAgent, pollOnboarding } from './onboarding.ts'
import { expirePendingLinks, startRequest, type StartedRequest } from '../sign-in/requests.ts'
import { createUser, findUserByEmail, normaliseEmail } from '../accounts/users.ts'

export function onboardingRoutes(deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls; trustProxy?: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, { name: 'onboarding-client', limit: 30, windowSeconds: 15 * 60 }))
  const limiter = createRateLimiter({ db, clock })
  const launchPath = (id: string) => `/launch/${id}`

  /** Starts and resends both count against the address: at most 5 emails an hour. */
  async function limitAddress(email: string): Promise<void> {
    const limit = await limiter.hit({ name: 'onboarding-address', limit: 5, windowSeconds: 3600 }, email)
    if (!limit.allowed) throw rateLimited(limit.retryAfterSeconds)
  }

  async function sendLink(input: { email: string; projectName: string; isNew: boolean; link: StartedRequest }): Promise<void> {
    const url = `${deps.urls.auth}/confirm?r=${input.link.request.id}&t=${input.link.linkSecret}`
    await deps.mailer.send({
      to: input.email,
      subject: input.isNew ? `Confirm your email to start ${input.projectName}` : `Approve your coding agent for ${input.projectName}`,
      text: `${input.isNew
        ? `A coding agent started the project "${input.projectName}" for this address.`
        : `A coding agent asks to work on the project "${input.projectName}" with your account.`}\n\nOpen this link and press Approve if that was you. It works once, within 24 hours; a newer link from us replaces it:\n\n${url}\n\nIf it was not you, ignore this message; nothing happens without your approval.`,
    })
  }

  routes.post('/', async (c) => {
    const body = await readObject(c)
    const email = normaliseEmail(body.email)
    const projectName = typeof body.projectName === 'string' ? body.projectName.trim() : ''
    if (projectName.length < 1 || projectName.length > 80) {
      throw new ServiceError('VALIDATION_FAILED', 'projectName must be 1 to 80 characters', { details: { field: 'projectName' } })
    }
    await limitAddress(email)
    const result = await db.transaction(async (tx) => {
      const existing = await findUserByEmail(tx, email)
      const user = existing ?? await createUser(tx, {
        email, organisationId: null, confirmationDeadline: new Date(clock.now().getTime() + LIFETIMES.confirmationMs),
      })
      const created = await createOnboarding(tx, clock, { user, projectName, isNewIdentity: !existing })
      const link = await startRequest(tx, clock, {
        purpose: 'onboarding', email, userId: user.id, continueTo: launchPath(created.request.id), claimCsrf: null,
      })
      return { ...created, isNew: !existing, link }
    })
    await sendLink({ email, projectName, isNew: result.isNew, link: result.link })
    return c.json({ id: result.request.id, status: result.request.status, pollToken: result.pollToken }, 201)
  })

  routes.post('/:id/resend', async (c) => {
    const body = await readObject(c)
    const id = c.req.param('id')
    const found = await findOnboardingForAgent(db, { id, pollToken: typeof body.pollToken === 'string' ? body.pollToken : '' })
    if (!found) throw new ServiceError('NOT_FOUND', 'no onboarding request with that id and poll token')
    if (found.request.confirmedAt) {
      throw new ServiceError('CONFLICT', 'the person has already confirmed this request; poll it instead', { details: { status: found.request.status } })
    }
    await limitAddress(found.email)
    const link = await db.transaction(async (tx) => {
      // Only the newest link works: a resend ends the links sent before it.
      await expirePendingLinks(tx, clock, { purpose: 'onboarding', continueTo: launchPath(id) })
      return startRequest(tx, clock, {
        purpose: 'onboarding', email: found.email, userId: found.request.userId, continueTo: launchPath(id), claimCsrf: null,
      })
    })
    await sendLink({ email: found.email, projectName: found.request.projectName, isNew: found.request.status === 'organisation_setup_required', link })
    return c.json({ id, status: found.request.status, expiresAt: link.request.expiresAt.toISOString() })
  })

  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c)
    const answer = await pollOnboarding(db, clock, c.req.param('id'), typeof body.pollToken === 'string' ? body.pollToken : '')
    if (!answer) throw new ServiceError('NOT_FOUND', 'no onboarding request with that id and poll token')
    return c.json(answer)
  })
  return routes
}
