/**
 * `start_onboarding` (spec 2.2, 5.3) and its poll, callable without a credential: the same
 * functions as `POST /v1/onboarding` and its poll, under the same limits (30 starts per client
 * address in 15 minutes, shared with the HTTP endpoint; 5 emails an hour per address).
 */
import { z } from 'zod'
import { createRateLimiter, rateLimited } from '../db/rate-limit.ts'
import { ONBOARDING_CLIENT_LIMIT, pollOnboardingRequest, startOnboarding } from '../identity/index.ts'
import { defineTool, type ToolDefinition } from './tool.ts'

const ANYONE = ['anonymous', 'full', 'focused'] as const

export const onboardingTools: ToolDefinition[] = [
  defineTool({
    name: 'start_onboarding',
    description: 'Start onboarding a person and their project by email, without any credential. A new email gets a provisional ' +
      'identity (status organisation_setup_required: no app, no credential yet), or REGISTRATION_CLOSED when the platform ' +
      'admits no new accounts; an existing one gets an approval email (status awaiting_confirmation). The person confirms the emailed link within 24 hours and sets up or joins a company; ' +
      'then poll_onboarding with the returned id and pollToken yields an owner API token, once. Keep pollToken secret.',
    input: z.object({
      email: z.string().min(3).max(254).describe('The person\'s email address'),
      projectName: z.string().min(1).max(80).describe('What the person is building, shown in the email'),
    }).strict(),
    surfaces: ANYONE,
    readOnly: false,
    async run(context, input) {
      const { db, clock } = context.deps
      const limit = await createRateLimiter({ db, clock }).hit(ONBOARDING_CLIENT_LIMIT, context.clientAddress)
      if (!limit.allowed) throw rateLimited(limit.retryAfterSeconds)
      return startOnboarding(context.deps, input)
    },
  }),
  defineTool({
    name: 'poll_onboarding',
    description: 'Poll an onboarding request started with start_onboarding. Answers its status; the first poll after the person ' +
      'confirmed and belongs to a company also answers `token`, an owner API token for Authorization: Bearer, exactly once.',
    input: z.object({
      id: z.string().min(1).max(64),
      pollToken: z.string().min(1).max(100),
    }).strict(),
    surfaces: ANYONE,
    readOnly: false,
    run: (context, input) => pollOnboardingRequest(context.deps.db, context.deps.clock, input),
  }),
]
