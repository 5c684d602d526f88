/**
 * Owner API for jobs (spec 4.1, 6.3), per app namespace like the rest of the owner API:
 * `{ns}` is nothing for production or `/dev/{devName}` for a development namespace.
 * `GET /v1/apps/{appId}{ns}/jobs` (history page and per-queue totals),
 * `GET /v1/apps/{appId}{ns}/jobs/{jobId}`, `GET /v1/apps/{appId}{ns}/jobs/timeline` (jobs over
 * time by state), `GET /v1/apps/{appId}{ns}/queues` (per-queue policy) and
 * `GET /v1/apps/{appId}{ns}/signals` (the Agent Feed's job signals, failure events and failure
 * alert). The owner and Edit holders; a Use
 * holder gets FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { OwnerEnv } from '../identity/index.ts'
import { jobHistory, jobSignals, type JobScope } from './history.ts'
import { appJob, appJobScope } from './app-jobs.ts'
import { jobTimeline, queuePolicies } from './timeline.ts'

function scopeOf(db: Db, c: Context<OwnerEnv>): Promise<JobScope> {
  return appJobScope(db, { user: c.var.user, appId: c.req.param('appId')!, devName: c.req.param('devName') })
}

export function jobRoutes(deps: { db: Db; clock: Clock }) {
  const routes = new Hono<OwnerEnv>()
  async function list(c: Context<OwnerEnv>) {
    return c.json(await jobHistory(deps.db, deps.clock, await scopeOf(deps.db, c), {
      from: c.req.query('from'),
      to: c.req.query('to'),
      limit: c.req.query('limit'),
      nextCursor: c.req.query('nextCursor'),
      queue: c.req.query('queue'),
      state: c.req.query('state'),
    }))
  }
  async function one(c: Context<OwnerEnv>) {
    return c.json({ job: await appJob(deps.db, { scope: await scopeOf(deps.db, c), jobId: c.req.param('jobId')! }) })
  }
  async function timeline(c: Context<OwnerEnv>) {
    return c.json(await jobTimeline(deps.db, deps.clock, await scopeOf(deps.db, c), { from: c.req.query('from'), to: c.req.query('to') }))
  }
  async function queues(c: Context<OwnerEnv>) {
    return c.json({ queues: await queuePolicies(deps.db, await scopeOf(deps.db, c)) })
  }
  async function signals(c: Context<OwnerEnv>) {
    return c.json(await jobSignals(deps.db, deps.clock, await scopeOf(deps.db, c), { from: c.req.query('from'), to: c.req.query('to') }))
  }
  for (const prefix of ['/:appId', '/:appId/dev/:devName']) {
    routes.get(`${prefix}/jobs`, list)
    routes.get(`${prefix}/jobs/timeline`, timeline)
    routes.get(`${prefix}/jobs/:jobId`, one)
    routes.get(`${prefix}/queues`, queues)
    routes.get(`${prefix}/signals`, signals)
  }
  return routes
}
