/**
 * Development namespace names (`alice`, `pr-12`): 1 to 12 lowercase letters, digits and
 * single inner hyphens, starting with a letter. Short because the namespace's schema
 * `app_<slug>__dev_<name>` must fit PostgreSQL's 63-byte identifiers with the longest slug.
 * `''` stands for production wherever a dev name is stored.
 */
import type { Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'

export const DEV_NAME_PATTERN = /^[a-z](?:[a-z0-9]|-(?=[a-z0-9])){0,11}$/
/** Most development namespaces per app (DEV_NAMESPACE_LIMIT_REACHED past it). */
export const MAX_DEV_NAMESPACES = 10

/** A development namespace name from a request, or VALIDATION_FAILED. */
export function checkDevName(value: unknown): string {
  if (typeof value !== 'string' || !DEV_NAME_PATTERN.test(value)) {
    throw new ServiceError('VALIDATION_FAILED',
      'a development namespace name has 1 to 12 lowercase letters, digits or single hyphens and starts with a letter',
      { details: { field: 'devName' } })
  }
  return value
}

/** The active release of an app namespace (`devName` '' is production), or null before its first deploy. */
export async function activeReleaseOf(db: Queryable, appId: string, devName: string): Promise<string | null> {
  const rows = await db.query<{ id: string }>(
    `select id from platform.releases where app_id = $1 and dev_name = $2 and status = 'active'`,
    [appId, devName],
  )
  return rows[0]?.id ?? null
}
