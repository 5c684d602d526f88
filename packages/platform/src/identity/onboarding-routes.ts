/**
 * `start_onboarding` over HTTP (the MCP tool later calls the same code): `POST /v1/onboarding`
 * and the agent's `POST /v1/onboarding/:id/poll`. No credential comes back until the person
 * has confirmed by the scanner-safe email link and belongs to a company.
 */
import { limitPerClient } from '../http/client-address.ts'
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { createRateLimiter, rateLimited } from '../lib/rate-limit.ts'
import type { HostUrls } from '../http/hosts.ts'
import { readObject } from '../http/json.ts'
import type { Mail } from './auth-routes.ts'
import { LIFETIMES } from './lifetimes.ts'
import { createOnboarding, pollOnboarding } from './onboarding.ts'
import { startRequest } from './sign-in-requests.ts'
import { createUser, findUserByEmail, normaliseEmail } from './users.ts'

export function onboardingRoutes(deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls; trustProxy?: boolean }) {
  const { db, clock } = deps
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, { name: 'onboarding-client', limit: 30, windowSeconds: 15 * 60 }))
  const limiter = createRateLimiter({ db, clock })

  routes.post('/', async (c) => {
    const body = await readObject(c)
    const email = normaliseEmail(body.email)
    const projectName = typeof body.projectName === 'string' ? body.projectName.trim() : ''
    if (projectName.length < 1 || projectName.length > 80) {
      throw new ServiceError('VALIDATION_FAILED', 'projectName must be 1 to 80 characters', { details: { field: 'projectName' } })
    }
    const limit = await limiter.hit({ name: 'onboarding-address', limit: 5, windowSeconds: 3600 }, email)
    if (!limit.allowed) throw rateLimited(limit.retryAfterSeconds)
    const result = await db.transaction(async (tx) => {
      const existing = await findUserByEmail(tx, email)
      const user = existing ?? await createUser(tx, {
        email, organisationId: null, confirmationDeadline: new Date(clock.now().getTime() + LIFETIMES.confirmationMs),
      })
      const created = await createOnboarding(tx, clock, { user, projectName, isNewIdentity: !existing })
      const link = await startRequest(tx, clock, {
        purpose: 'onboarding', email, userId: user.id, continueTo: `/launch/${created.request.id}`, claimCsrf: null,
      })
      return { ...created, isNew: !existing, link }
    })
    const url = `${deps.urls.auth}/confirm?r=${result.link.request.id}&t=${result.link.linkSecret}`
    await deps.mailer.send({
      to: email,
      subject: result.isNew ? `Confirm your email to start ${projectName}` : `Approve your coding agent for ${projectName}`,
      text: `${result.isNew
        ? `A coding agent started the project "${projectName}" for this address.`
        : `A coding agent asks to work on the project "${projectName}" with your account.`}\n\nOpen this link and press Approve if that was you (it works once, for 15 minutes):\n\n${url}\n\nIf it was not you, ignore this message; nothing happens without your approval.`,
    })
    return c.json({ id: result.request.id, status: result.request.status, pollToken: result.pollToken }, 201)
  })

  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c)
    const answer = await pollOnboarding(db, clock, c.req.param('id'), typeof body.pollToken === 'string' ? body.pollToken : '')
    if (!answer) throw new ServiceError('NOT_FOUND', 'no onboarding request with that id and poll token')
    return c.json(answer)
  })
  return routes
}
