/**
 * Test support for the jobs engine at the storage level: one organisation, owner, public app
 * and production namespace inserted directly, for tests that enqueue and claim through SQL.
 */
import type { Db } from '../db/db.ts'

/**
 * @example
 * const { appId, namespaceId } = await seedJobNamespace(t.db, { slug: 'race-app', schema: 'app_race', rolePrefix: 'ns_0123456789ab' })
 */
export async function seedJobNamespace(db: Db, input: { slug: string; schema: string; rolePrefix: string }): Promise<{ appId: string; namespaceId: string }> {
  const [org] = await db.query<{ id: string }>(`insert into platform.organisations (name) values ('o') returning id`)
  const [user] = await db.query<{ id: string }>(`insert into platform.users (organisation_id, email) values ($1, 'a@b.test') returning id`, [org!.id])
  const [app] = await db.query<{ id: string }>(
    `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, $3, $3, 'public') returning id`, [org!.id, user!.id, input.slug])
  const [ns] = await db.query<{ id: string }>(
    `insert into platform.namespaces (app_id, environment, schema_name, role_prefix) values ($1, 'production', $2, $3) returning id`,
    [app!.id, input.schema, input.rolePrefix])
  return { appId: app!.id, namespaceId: ns!.id }
}
