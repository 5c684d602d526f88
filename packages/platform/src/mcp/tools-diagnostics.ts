/**
 * Production diagnostics (spec 4.5): the jobs endpoints' data, on the full surface only (the
 * focused builder surface of an app-scoped token omits them). Safe metadata only: never a
 * job's payload, idempotency key or enqueuing user.
 */
import { z } from 'zod'
import { appJob, appJobScope, jobHistory } from '../jobs/index.ts'
import { defineTool, FULL_ONLY, type ToolDefinition } from './tool.ts'
import { personOnApp } from './scope.ts'
import { appId, sessionId } from './fields.ts'

export const diagnosticTools: ToolDefinition[] = [
  defineTool({
    name: 'list_background_jobs',
    description: 'The app\'s background jobs (production, or a development session with sessionId): a history page filtered by ' +
      'creation time (inclusive ISO 8601 from and to), queue and state, and per-queue totals. limit 1 to 100; nextCursor from a ' +
      'previous page. Needs Edit on the app.',
    input: z.object({
      appId, sessionId,
      from: z.string().max(64).optional(),
      to: z.string().max(64).optional(),
      queue: z.string().min(1).max(64).optional(),
      state: z.enum(['queued', 'running', 'retry_wait', 'succeeded', 'dead_lettered']).optional(),
      limit: z.number().int().min(1).max(100).optional(),
      nextCursor: z.string().max(500).optional(),
    }).strict(),
    surfaces: FULL_ONLY,
    readOnly: true,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      const scope = await appJobScope(context.deps.db, { user, appId: input.appId, devName: input.sessionId })
      const history = await jobHistory(context.deps.db, context.deps.clock, scope, {
        from: input.from, to: input.to, queue: input.queue, state: input.state, nextCursor: input.nextCursor,
        limit: input.limit === undefined ? undefined : String(input.limit),
      })
      return { ...history }
    },
  }),
  defineTool({
    name: 'get_background_job',
    description: 'One background job\'s state, attempts, timestamps and latest bounded error. Needs Edit on the app.',
    input: z.object({ appId, sessionId, jobId: z.string().min(1).max(64) }).strict(),
    surfaces: FULL_ONLY,
    readOnly: true,
    async run(context, input) {
      const user = await personOnApp(context, input.appId)
      const scope = await appJobScope(context.deps.db, { user, appId: input.appId, devName: input.sessionId })
      return { job: await appJob(context.deps.db, { scope, jobId: input.jobId }) }
    },
  }),
]
