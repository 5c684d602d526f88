/**
 * How a consumer's development namespace answers calls to an integration (spec 4.5
 * `set_dev_integration_mode`): `fake`, the default, returns each operation's declared `fake`;
 * `live` calls through the app's real bindings as production does. Apart from dev-mode.ts
 * so that the broker reads it without importing what imports the broker.
 */
import type { Db } from '../../db/db.ts'
import { selectDevSetting } from './queries.ts'

export type DevMode = 'live' | 'fake'

/** A development namespace answers with fakes until someone chooses `live`. */
export const DEFAULT_DEV_MODE: DevMode = 'fake'

/** How a consumer's development namespace answers calls to `integration`. */
export async function devModeOf(db: Db, key: { appId: string; devName: string; integration: string }): Promise<DevMode> {
  return (await selectDevSetting(db, key))?.mode ?? DEFAULT_DEV_MODE
}
