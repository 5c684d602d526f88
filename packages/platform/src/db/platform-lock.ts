/**
 * Cross-process locks for the platform's own work, held until the transaction ends: a row of
 * `platform.locks` (migration 0040), which no app role can reach. Not an advisory lock: app
 * SQL may take any advisory key, the platform's included.
 */
import type { Queryable } from './db.ts'

/**
 * Waits for and holds the lock `name` until `tx` ends. The upsert takes the row's lock on
 * first use and every use after.
 *
 * @example
 * await db.transaction(async (tx) => {
 *   await lockPlatform(tx, `deploy:${app.id}`)
 *   …
 * })
 */
export async function lockPlatform(tx: Queryable, name: string): Promise<void> {
  await tx.query('insert into platform.locks (name) values ($1) on conflict (name) do update set name = excluded.name', [name])
}
