/**
 * An app's jobs as its owner reads them, for the owner API and the MCP tools alike: the app
 * namespace a request names (production, or a development namespace), checked against the
 * caller's role, and one job's safe view. The owner and Edit holders; a Use holder gets
 * FORBIDDEN, anyone else APP_NOT_FOUND (identity's appForRole).
 */
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { isUuid } from '../lib/ids.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { appForRole, type User } from '../identity/index.ts'
import type { JobScope } from './history.ts'
import { findJob } from './queries.ts'
import { jobView, type JobView } from './views.ts'

/** Matches no namespace: an app never deployed has no production namespace, and no jobs. */
const NO_NAMESPACE = '00000000-0000-0000-0000-000000000000'

/**
 * The namespace whose jobs `user` may read: `devName` undefined is production.
 *
 * @example
 * const scope = await appJobScope(db, { user, appId: 'orders' })
 */
export async function appJobScope(db: Db, input: { user: User; appId: string; devName?: string | undefined }): Promise<JobScope> {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  if (input.devName === undefined) return { appId: app.id, namespaceId: (await findNamespace(db, app.id))?.id ?? NO_NAMESPACE }
  const devName = checkDevName(input.devName)
  const namespace = await findNamespace(db, app.id, 'development', devName)
  if (namespace === null) throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `no development namespace "${devName}" in this app`)
  return { appId: app.id, namespaceId: namespace.id }
}

/** One job of the scope, as the owner sees it (never its payload, key or enqueuing user); JOB_NOT_FOUND otherwise. */
export async function appJob(db: Db, input: { scope: JobScope; jobId: string }): Promise<JobView> {
  const { scope, jobId } = input
  const row = isUuid(jobId) ? await findJob(db, { appId: scope.appId, namespaceId: scope.namespaceId, jobId }) : undefined
  if (row === undefined) throw new ServiceError('JOB_NOT_FOUND', `no job "${jobId.slice(0, 64)}" in this app namespace`)
  return jobView(row)
}
