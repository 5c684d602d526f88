/**
 * Owner API for jobs (spec 4.1, 6.3): `GET /v1/apps/{appId}/jobs` (history page and
 * per-queue totals), `GET /v1/apps/{appId}/jobs/{jobId}` and `GET /v1/apps/{appId}/signals`
 * (the Agent Feed's job signals, failure events and failure alert). Owners only; another
 * person's app answers APP_NOT_FOUND.
 */
import { Hono } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { getOwnedApp } from '../apps/apps.ts'
import type { OwnerEnv } from '../http/owner-auth.ts'
import { jobHistory, jobSignals } from './history.ts'
import { findJob } from './queries.ts'
import { jobView } from './views.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function jobRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  routes.get('/:appId/jobs', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    return c.json(await jobHistory(deps.db, deps.clock, app.id, {
      from: c.req.query('from'),
      to: c.req.query('to'),
      limit: c.req.query('limit'),
      nextCursor: c.req.query('nextCursor'),
      queue: c.req.query('queue'),
      state: c.req.query('state'),
    }))
  })
  routes.get('/:appId/jobs/:jobId', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    const jobId = c.req.param('jobId')
    const row = UUID.test(jobId) ? await findJob(deps.db, { appId: app.id, jobId }) : undefined
    if (row === undefined) throw new ServiceError('JOB_NOT_FOUND', `no job "${jobId}" in this app`)
    return c.json({ job: jobView(row) })
  })
  routes.get('/:appId/signals', async (c) => {
    const app = await getOwnedApp(deps.db, c.var.user, c.req.param('appId'))
    return c.json(await jobSignals(deps.db, deps.clock, app.id, { from: c.req.query('from'), to: c.req.query('to') }))
  })
  return routes
}
