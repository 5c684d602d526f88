/**
 * Owner API for jobs (spec 4.1, 6.3), per app namespace like the rest of the owner API:
 * `{ns}` is nothing for production or `/dev/{devName}` for a development namespace.
 * `GET /v1/apps/{appId}{ns}/jobs` (history page and per-queue totals),
 * `GET /v1/apps/{appId}{ns}/jobs/{jobId}` and `GET /v1/apps/{appId}{ns}/signals` (the Agent
 * Feed's job signals, failure events and failure alert). The owner and Edit holders; a Use
 * holder gets FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { isUuid } from '../lib/ids.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { appForRole, type OwnerEnv } from '../identity/index.ts'
import { jobHistory, jobSignals, type JobScope } from './history.ts'
import { findJob } from './queries.ts'
import { jobView } from './views.ts'

/** Matches no namespace: an app never deployed has no production namespace, and no jobs. */
const NO_NAMESPACE = '00000000-0000-0000-0000-000000000000'

async function scopeOf(db: Db, c: Context<OwnerEnv>): Promise<JobScope> {
  const app = await appForRole(db, c.var.user, c.req.param('appId')!, 'edit')
  const devParam = c.req.param('devName')
  if (devParam === undefined) return { appId: app.id, namespaceId: (await findNamespace(db, app.id))?.id ?? NO_NAMESPACE }
  const devName = checkDevName(devParam)
  const namespace = await findNamespace(db, app.id, 'development', devName)
  if (namespace === null) throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `no development namespace "${devName}" in this app`)
  return { appId: app.id, namespaceId: namespace.id }
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
    const scope = await scopeOf(deps.db, c)
    const jobId = c.req.param('jobId')!
    const row = isUuid(jobId) ? await findJob(deps.db, { appId: scope.appId, namespaceId: scope.namespaceId, jobId }) : undefined
    if (row === undefined) throw new ServiceError('JOB_NOT_FOUND', `no job "${jobId}" in this app namespace`)
    return c.json({ job: jobView(row) })
  }
  async function signals(c: Context<OwnerEnv>) {
    return c.json(await jobSignals(deps.db, deps.clock, await scopeOf(deps.db, c), { from: c.req.query('from'), to: c.req.query('to') }))
  }
  for (const prefix of ['/:appId', '/:appId/dev/:devName']) {
    routes.get(`${prefix}/jobs`, list)
    routes.get(`${prefix}/jobs/:jobId`, one)
    routes.get(`${prefix}/signals`, signals)
  }
  return routes
}
