/**
 * Deleting a development namespace (`DELETE /v1/apps/{app}/dev/{devName}`): its schema,
 * roles and wrappers, its releases with their files and logs, its secrets, migrations,
 * jobs and cron rows, in one transaction. The production namespace is never touched.
 */
import type { Db } from '../db/db.ts'
import { lockPlatform } from '../db/platform-lock.ts'
import { ServiceError } from '../lib/errors.ts'
import { announceChange, dropLocal } from '../db/notified-cache.ts'
import { SECRET_CHANGED } from '../secrets/index.ts'
import { dropNamespace, findNamespace } from '../namespaces/namespaces.ts'

/**
 * Removes the development namespace `devName` of an app; DEV_NAMESPACE_NOT_FOUND when it
 * has neither a namespace nor a release.
 *
 * @example
 * await deleteDevNamespace(db, { appId: app.id, devName: 'alice' })
 */
export async function deleteDevNamespace(db: Db, target: { appId: string; devName: string }): Promise<void> {
  const { appId, devName } = target
  if (devName === '') throw new ServiceError('VALIDATION_FAILED', 'the production namespace cannot be deleted this way', { details: { field: 'devName' } })
  await db.transaction(async (tx) => {
    // Serialised with deploys of the app, so no deploy recreates half of it meanwhile.
    await lockPlatform(tx, `deploy:${appId}`)
    const namespace = await findNamespace(tx, appId, 'development', devName)
    // Namespace first: its migrations rows (cascade) point at its releases.
    if (namespace !== null) await dropNamespace(tx, namespace)
    const releases = await tx.query(`delete from platform.releases where app_id = $1 and dev_name = $2 returning id`, [appId, devName])
    if (namespace === null && releases.length === 0) {
      throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} does not exist`)
    }
    await tx.query(`delete from platform.function_logs where app_id = $1 and dev_name = $2`, [appId, devName])
    await tx.query(`delete from platform.app_secrets where app_id = $1 and dev_name = $2`, [appId, devName])
    await announceChange(tx, SECRET_CHANGED, `${appId}:${devName}`)
  })
  dropLocal(db, SECRET_CHANGED)
}
