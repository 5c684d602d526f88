/**
 * `start_onboarding` over HTTP (onboarding-start.ts holds the flow; the MCP tool calls the
 * same functions): `POST /v1/onboarding`, the agent's `POST /v1/onboarding/:id/poll`, and
 * `POST /v1/onboarding/:id/resend`, which emails a new link while the person has not
 * confirmed (the newest link alone works). No credential comes back until the person has
 * confirmed by the scanner-safe email link (valid 24 hours, the owner's confirmation
 * deadline) and belongs to a company.
 */
import { limitPerClient } from '../../http/client-address.ts'
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { readObject } from '../../http/json.ts'
import type { Mail } from '../sign-in/routes.ts'
import { ONBOARDING_CLIENT_LIMIT, pollOnboardingRequest, resendOnboarding, startOnboarding } from './onboarding-start.ts'

export function onboardingRoutes(deps: { db: Db; clock: Clock; mailer: Mail; urls: HostUrls; registration: boolean; trustProxy?: boolean }) {
  const routes = new Hono()
  // Unauthenticated: bounded per client address so nobody can flood it.
  routes.post('/', limitPerClient({ db: deps.db, clock: deps.clock, trustProxy: deps.trustProxy ?? false }, ONBOARDING_CLIENT_LIMIT))

  routes.post('/', async (c) => {
    const body = await readObject(c)
    return c.json(await startOnboarding(deps, { email: body.email, projectName: body.projectName }), 201)
  })

  routes.post('/:id/resend', async (c) => {
    const body = await readObject(c)
    return c.json(await resendOnboarding(deps, { id: c.req.param('id'), pollToken: typeof body.pollToken === 'string' ? body.pollToken : '' }))
  })

  routes.post('/:id/poll', async (c) => {
    const body = await readObject(c)
    return c.json(await pollOnboardingRequest(deps.db, deps.clock, { id: c.req.param('id'), pollToken: typeof body.pollToken === 'string' ? body.pollToken : '' }))
  })
  return routes
}
