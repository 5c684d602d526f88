/**
 * The change log's statements (migration 0038): one function per statement. Triggers on
 * subscribed app tables append rows without a position and wake every process on
 * RAW_CHANNEL; `sequence` gives the committed ones positions in one transaction under a
 * lock, so positions become visible in order (a reader that saw n saw everything before
 * n) and wakes every process on POSITION_CHANNEL; readers take rows past their cursor.
 */
import type { Db, Queryable } from '../db/db.ts'

/** The triggers' notice: changes without a position are waiting. */
export const RAW_CHANNEL = 'platform_realtime_raw'
/** The sequencer's notice (payload the last position given): changes to read. */
export const POSITION_CHANNEL = 'platform_realtime'

export interface LoggedChange {
  position: number
  schema: string
  table: string
  op: 'insert' | 'update' | 'delete'
  /** The primary key as jsonb text (the same spelling the visibility check builds). */
  keyText: string
  key: Record<string, unknown>
  /** Deletes: the row as it was (read only for schemas with subscribers here). */
  oldRow: Record<string, unknown> | null
}

interface ChangeRow extends Record<string, unknown> {
  position: number
  schema_name: string
  table_name: string
  op: LoggedChange['op']
  key_text: string
  key: Record<string, unknown>
  old_row: Record<string, unknown> | null
}

function fromRow(row: ChangeRow): LoggedChange {
  return {
    position: Number(row.position), schema: row.schema_name, table: row.table_name, op: row.op,
    keyText: row.key_text, key: row.key, oldRow: row.old_row,
  }
}

/**
 * Gives committed changes without a position the next positions, oldest first, at most
 * `limit` a run (the rest on the next run: a notice or the feed's poll), and announces the
 * last on POSITION_CHANNEL. One sequencer at a time across processes: the lock (the row of
 * platform.realtime_state, which no app role can reach, where an advisory key app SQL could
 * hold) is taken by a statement of its own, before the numbering statement's snapshot, so
 * nothing committed before a run's positions is left for a later run to number lower. The two
 * statements go as one script in one transaction (each takes its own snapshot, READ COMMITTED).
 */
export async function sequenceChanges(db: Db, limit = 10_000): Promise<void> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new Error('limit must be a positive whole number')
  // In a driver transaction: a script's own `begin` on a pooled connection is refused by
  // postgres.js (UNSAFE_TRANSACTION, after the server has run it all) and was logged as a
  // failure on every run.
  await db.transaction((tx) => tx.exec(`select 1 from platform.realtime_state for update;
with pending as materialized (
  select id, row_number() over (order by id) as n from platform.realtime_changes
   where position is null order by id limit ${limit}),
head as (
  update platform.realtime_state set last_position = last_position + (select count(*) from pending)
   where (select count(*) from pending) > 0
  returning last_position - (select count(*) from pending) as base, last_position),
numbered as (
  update platform.realtime_changes c set position = head.base + pending.n
    from pending, head where c.id = pending.id returning c.position)
select pg_notify('${POSITION_CHANNEL}', (select last_position from head)::text) where exists (select from numbered);`))
}

/** The last position given, and the last purged (a resume from before it has lost changes). */
export async function logState(db: Queryable): Promise<{ last: number; purgedThrough: number }> {
  const [row] = await db.query<{ last_position: number; purged_through: number }>(
    'select last_position, purged_through from platform.realtime_state')
  return { last: Number(row?.last_position ?? 0), purgedThrough: Number(row?.purged_through ?? 0) }
}

/**
 * Changes after `after`, in position order, at most `limit`; old rows only for `schemas`
 * (the others' are not needed here, and may be large).
 */
export async function readChanges(db: Queryable, input: { after: number; limit: number; schemas: readonly string[] }): Promise<LoggedChange[]> {
  const rows = await db.query<ChangeRow>(
    `select position, schema_name, table_name, op, key::text as key_text, key,
            case when schema_name = any($3::text[]) then old_row end as old_row
       from platform.realtime_changes where position > $1 order by position limit $2`,
    [input.after, input.limit, input.schemas])
  return rows.map(fromRow)
}

/** Changes of some tables of one schema in (after, through], for a resuming subscription; at most `limit`. */
export async function readTableChanges(
  db: Queryable,
  input: { after: number; through: number; schema: string; tables: readonly string[]; limit: number },
): Promise<LoggedChange[]> {
  const rows = await db.query<ChangeRow>(
    `select position, schema_name, table_name, op, key::text as key_text, key, old_row
       from platform.realtime_changes
      where position > $1 and position <= $2 and schema_name = $3 and table_name = any($4::text[])
      order by position limit $5`,
    [input.after, input.through, input.schema, input.tables, input.limit])
  return rows.map(fromRow)
}

/**
 * Removes changes older than `retentionSeconds` by the database's clock (the triggers stamp
 * rows with it), and moves `purged_through` past the positions removed; how many.
 */
export async function purgeChanges(db: Db, retentionSeconds: number): Promise<number> {
  return db.transaction(async (tx) => {
    const [row] = await tx.query<{ count: number; through: number | null }>(
      `with gone as (
         delete from platform.realtime_changes
          where changed_at < pg_catalog.now() - make_interval(secs => $1) returning position)
       select count(*)::int as count, max(position) as through from gone`, [retentionSeconds])
    const through = row?.through === null || row?.through === undefined ? null : Number(row.through)
    if (through !== null) {
      await tx.query('update platform.realtime_state set purged_through = greatest(purged_through, $1)', [through])
    }
    return Number(row?.count ?? 0)
  })
}
