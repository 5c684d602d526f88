/**
 * An app's releases and development namespaces as its builders read them, for the owner API
 * and the dashboard alike: the owner and Edit holders (identity's appForRole); a Use holder
 * gets FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import type { Db, Queryable } from '../db/db.ts'
import { appForRole, type User } from '../identity/index.ts'
import { checkDevName, MAX_DEV_NAMESPACES } from '../namespaces/dev-names.ts'
import { listReleases, releaseView } from './deploy.ts'

/**
 * The releases of an app namespace (`devName` undefined is production), newest first.
 *
 * @example
 * const releases = await appReleases(db, { user, appId: 'orders' }) // [{ id, version, sdkVersion, bundleSize, activatedAt, ... }]
 */
export async function appReleases(db: Db, input: { user: User; appId: string; devName?: string | undefined }) {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  const devName = input.devName === undefined ? '' : checkDevName(input.devName)
  return (await listReleases(db, app.id, { devName })).map(releaseView)
}

export interface DevNamespaceView {
  name: string
  createdAt: string
  /** The namespace's active release, or null (a namespace exists from its first deploy). */
  activeRelease: { id: string; version: number; sdkVersion: string; activatedAt: string } | null
}

interface DevNamespaceRow extends Record<string, unknown> {
  dev_name: string
  created_at: Date
  release_id: string | null
  version: number | null
  sdk_version: string | null
  activated_at: Date | null
}

/** The app's development namespaces by name, each with its active release (at most MAX_DEV_NAMESPACES exist). */
export async function selectDevNamespaces(db: Queryable, appId: string): Promise<DevNamespaceView[]> {
  const rows = await db.query<DevNamespaceRow>(
    `select n.dev_name, n.created_at, r.id as release_id, r.version, r.sdk_version, r.activated_at
       from platform.namespaces n
       left join platform.releases r on r.app_id = n.app_id and r.dev_name = n.dev_name and r.status = 'active'
      where n.app_id = $1 and n.environment = 'development'
      order by n.dev_name limit $2`,
    [appId, MAX_DEV_NAMESPACES * 2])
  return rows.map((row) => ({
    name: row.dev_name,
    createdAt: row.created_at.toISOString(),
    activeRelease: row.release_id === null ? null : {
      id: row.release_id, version: row.version!, sdkVersion: row.sdk_version!, activatedAt: row.activated_at!.toISOString(),
    },
  }))
}

/**
 * The app's development namespaces (`service deploy --dev <name>` made them), by name.
 *
 * @example
 * const namespaces = await appDevNamespaces(db, { user, appId: 'orders' }) // [{ name: 'alice', createdAt, activeRelease }]
 */
export async function appDevNamespaces(db: Db, input: { user: User; appId: string }): Promise<DevNamespaceView[]> {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  return await selectDevNamespaces(db, app.id)
}
