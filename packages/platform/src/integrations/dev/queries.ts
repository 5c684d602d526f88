/**
 * SQL of development-mode settings (platform.dev_integration_settings, migration 0025), one
 * function per statement.
 */
import { first, type Queryable } from '../../db/db.ts'

export interface DevSettingRow extends Record<string, unknown> {
  integration_name: string
  mode: 'live' | 'fake' | null
  test_connection_id: string | null
  updated_at: Date
}

const COLUMNS = 'integration_name, mode, test_connection_id, updated_at'

/** The setting of one integration in a development namespace, by app and namespace name. */
export async function selectDevSetting(
  db: Queryable, key: { appId: string; devName: string; integration: string },
): Promise<DevSettingRow | undefined> {
  return first<DevSettingRow>(db,
    `select s.integration_name, s.mode, s.test_connection_id, s.updated_at
       from platform.dev_integration_settings s
       join platform.namespaces n on n.id = s.namespace_id
      where n.app_id = $1 and n.environment = 'development' and n.dev_name = $2 and s.integration_name = $3`,
    [key.appId, key.devName, key.integration])
}

export async function selectDevSettings(db: Queryable, namespaceId: string): Promise<DevSettingRow[]> {
  return db.query<DevSettingRow>(
    `select ${COLUMNS} from platform.dev_integration_settings where namespace_id = $1 order by integration_name`, [namespaceId])
}

/** Sets the mode (leaving the test connection as it is). */
export async function upsertDevMode(
  tx: Queryable, row: { namespaceId: string; integration: string; mode: 'live' | 'fake'; by: string; at: Date },
): Promise<DevSettingRow> {
  const [stored] = await tx.query<DevSettingRow>(
    `insert into platform.dev_integration_settings (namespace_id, integration_name, mode, updated_by, updated_at)
     values ($1, $2, $3, $4, $5)
     on conflict (namespace_id, integration_name) do update set mode = excluded.mode, updated_by = excluded.updated_by, updated_at = excluded.updated_at
     returning ${COLUMNS}`,
    [row.namespaceId, row.integration, row.mode, row.by, row.at])
  return stored!
}

/** Sets or clears (null) the test connection (leaving the mode as it is). */
export async function upsertDevTestConnection(
  tx: Queryable, row: { namespaceId: string; integration: string; connectionId: string | null; by: string; at: Date },
): Promise<DevSettingRow> {
  const [stored] = await tx.query<DevSettingRow>(
    `insert into platform.dev_integration_settings (namespace_id, integration_name, test_connection_id, updated_by, updated_at)
     values ($1, $2, $3, $4, $5)
     on conflict (namespace_id, integration_name) do update
       set test_connection_id = excluded.test_connection_id, updated_by = excluded.updated_by, updated_at = excluded.updated_at
     returning ${COLUMNS}`,
    [row.namespaceId, row.integration, row.connectionId, row.by, row.at])
  return stored!
}
