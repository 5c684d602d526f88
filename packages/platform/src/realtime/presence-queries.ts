/**
 * Presence rows (migration 0038): who is in a channel, written by the process that holds
 * their socket and refreshed by it, so any process can answer a join with the channel's
 * state. One function per statement. Times are the database's (`now()`), as the sweep of
 * a dead process's rows compares them across processes.
 */
import type { Queryable } from '../db/db.ts'

export interface PresenceRow {
  ref: string
  key: string
  state: Record<string, unknown>
}

/** Rows not refreshed for this long belong to a process that died; swept with a leave each. */
export const PRESENCE_STALE_SECONDS = 45

export async function upsertPresence(
  db: Queryable,
  row: { ref: string; appId: string; topic: string; key: string; state: Record<string, unknown>; processId: string },
): Promise<void> {
  await db.query(
    `insert into platform.realtime_presence (ref, app_id, topic, key, state, process_id) values ($1, $2, $3, $4, $5, $6)
     on conflict (ref) do update set state = excluded.state, refreshed_at = pg_catalog.now()`,
    [row.ref, row.appId, row.topic, row.key, JSON.stringify(row.state), row.processId])
}

export async function deletePresence(db: Queryable, refs: readonly string[]): Promise<void> {
  if (refs.length === 0) return
  await db.query('delete from platform.realtime_presence where ref = any($1::text[])', [refs])
}

/** The channel's presences (at most 1000), oldest first. */
export async function channelPresence(db: Queryable, input: { appId: string; topic: string }): Promise<PresenceRow[]> {
  return db.query<PresenceRow & Record<string, unknown>>(
    `select ref, key, state from platform.realtime_presence
      where app_id = $1 and topic = $2 and refreshed_at > pg_catalog.now() - make_interval(secs => $3)
      order by refreshed_at, ref limit 1000`, [input.appId, input.topic, PRESENCE_STALE_SECONDS])
}

export async function refreshPresence(db: Queryable, processId: string): Promise<void> {
  await db.query('update platform.realtime_presence set refreshed_at = pg_catalog.now() where process_id = $1', [processId])
}

/** Removes rows no process refreshed in time (their process died); returns them, for the leaves. */
export async function sweepPresence(db: Queryable): Promise<(PresenceRow & { appId: string; topic: string })[]> {
  const rows = await db.query<{ ref: string; key: string; state: Record<string, unknown>; app_id: string; topic: string }>(
    `delete from platform.realtime_presence
      where refreshed_at < pg_catalog.now() - make_interval(secs => $1)
      returning ref, key, state, app_id, topic`, [PRESENCE_STALE_SECONDS])
  return rows.map((row) => ({ ref: row.ref, key: row.key, state: row.state, appId: row.app_id, topic: row.topic }))
}
