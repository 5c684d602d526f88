/**
 * SQL of integration sync (platform.integration_syncs, migration 0024), one function per
 * statement, and the reads of connections, contracts and bindings the scheduler needs.
 *
 * A row's next_run_at is normally the first occurrence after its handled_through; a row whose
 * next_run_at is not after its handled_through (equal to it) owes the connection its first run
 * after a first binding, due at once (scheduler.ts, "Start").
 */
import { first, type Queryable } from '../../db/db.ts'
import type { IntegrationSync } from '../../manifest/index.ts'

/** How a run ended (the row's `last_outcome`). */
export type SyncOutcome = 'succeeded' | 'failed' | 'timed_out' | 'unauthorized'

/**
 * A connection the scheduler looks at in a tick, with the facts that decide whether it may
 * sync now and its row (null columns when it has none yet).
 */
export interface CandidateRow extends Record<string, unknown> {
  connection_id: string
  connection_status: 'active' | 'reconnect_required'
  status_changed_at: Date
  /** The `sync` of the contract the ACTIVE provider app publishes now (null: none). */
  sync: IntegrationSync | null
  published_at: Date | null
  /** When the oldest live binding that counts was made (null: the connection is bound into no app). */
  bound_since: Date | null
  schedule: string | null
  timezone: string | null
  handled_through: Date | null
  next_run_at: Date | null
  has_row: boolean
}

/**
 * The live bindings that count for sync (spec 8 "bound into at least one app"): not revoked,
 * in an app that is active, whose running production release still declares the slot for
 * the connection's integration. Suspension is decided in TypeScript (bindings' standingFrom).
 */
const COUNTED_BINDINGS = `platform.integration_bindings b
    join platform.apps ca on ca.id = b.consumer_app_id and ca.status = 'active'
    join platform.releases r on r.id = ca.active_release_id
   where b.connection_id = c.id and b.status = 'active'
     and r.manifest -> 'integrations' -> b.slot ->> 'integration' = c.integration_name`

/**
 * At `now`, the connections with something to do, oldest due first, at most `limit`:
 * rows whose next occurrence is due, and connections that may sync but have no row, a
 * stopped row, or a row on another schedule than the contract's. Rows with a run in
 * progress (lease not expired) are left out.
 */
export async function selectCandidates(db: Queryable, input: { now: Date; limit: number }): Promise<CandidateRow[]> {
  return db.query<CandidateRow>(
    `with facts as (
       select c.id as connection_id, c.status as connection_status, c.status_changed_at,
              pc.contract -> 'sync' as sync, pc.published_at,
              (select min(b.created_at) from ${COUNTED_BINDINGS}) as bound_since,
              s.schedule, s.timezone, s.handled_through, s.next_run_at, s.connection_id is not null as has_row
         from platform.connections c
         left join (platform.integration_contracts pc join platform.apps pa on pa.id = pc.app_id and pa.status = 'active')
           on pc.app_id = c.provider_app_id and pc.name = c.integration_name
         left join platform.integration_syncs s on s.connection_id = c.id
        where (s.running_until is null or s.running_until <= $1)
          and ((s.connection_id is not null and s.next_run_at <= $1)
               or (pc.contract -> 'sync' is not null and c.status = 'active'
                   and (s.connection_id is null or s.next_run_at is null
                        or s.schedule <> pc.contract -> 'sync' ->> 'schedule' or s.timezone <> pc.contract -> 'sync' ->> 'timezone'))))
     select * from facts
      where next_run_at <= $1 or bound_since is not null
      order by next_run_at nulls first, connection_id
      limit $2`,
    [input.now, input.limit],
  )
}

/** Starts the connection's row at `handledThrough`; false when another process made it first. */
export async function insertSync(
  db: Queryable,
  row: { connectionId: string; schedule: string; timezone: string; handledThrough: Date; nextRunAt: Date | null; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `insert into platform.integration_syncs (connection_id, schedule, timezone, handled_through, next_run_at, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $6)
     on conflict (connection_id) do nothing
     returning connection_id`,
    [row.connectionId, row.schedule, row.timezone, row.handledThrough, row.nextRunAt, row.now],
  )
  return rows.length === 1
}

/**
 * Where a row stands: its handled_through and next_run_at as the caller read them. Moves and
 * claims compare both, so a process that read the row before another moved it loses; the pair
 * is needed because a first run's claim may leave handled_through where it was (claimed at the
 * binding's own instant) while it always moves next_run_at past it.
 */
export interface SyncPosition {
  from: Date
  fromNextRunAt: Date | null
}

/**
 * Moves a row that stands at `from`/`fromNextRunAt` and holds no live lease: to a new schedule,
 * a new handled_through and next_run_at (null: stopped). False when another process moved it first.
 */
export async function moveSync(
  db: Queryable,
  move: SyncPosition & { connectionId: string; schedule: string; timezone: string; handledThrough: Date; nextRunAt: Date | null; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.integration_syncs
        set schedule = $3, timezone = $4, handled_through = $5, next_run_at = $6, updated_at = $7
      where connection_id = $1 and handled_through = $2 and next_run_at is not distinct from $8
        and (running_until is null or running_until <= $7)
      returning connection_id`,
    [move.connectionId, move.from, move.schedule, move.timezone, move.handledThrough, move.nextRunAt, move.now, move.fromNextRunAt],
  )
  return rows.length === 1
}

/**
 * Claims a run for `owner`: handled_through moves from `from` to `due` (the occurrence it runs,
 * or for a first run the claim's instant) and the lease lasts until `runningUntil`, only when
 * no other run holds a live lease and no other process moved the row first. False when the
 * claim was lost.
 */
export async function claimSync(
  db: Queryable,
  claim: SyncPosition & { connectionId: string; due: Date; nextRunAt: Date | null; runningUntil: Date; owner: string; runId: string; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.integration_syncs
        set handled_through = $3, next_run_at = $4, running_until = $5, lease_owner = $6, run_id = $7,
            last_started_at = $8, updated_at = $8
      where connection_id = $1 and handled_through = $2 and next_run_at is not distinct from $9
        and (running_until is null or running_until <= $8)
      returning connection_id`,
    [claim.connectionId, claim.from, claim.due, claim.nextRunAt, claim.runningUntil, claim.owner, claim.runId, claim.now, claim.fromNextRunAt],
  )
  return rows.length === 1
}

/** Records how the run `runId` ended and gives its lease up; false when the lease was taken over meanwhile. */
export async function finishSync(
  db: Queryable,
  end: { connectionId: string; runId: string; outcome: SyncOutcome; error: { code: string; message: string } | null; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.integration_syncs
        set running_until = null, lease_owner = null, run_id = null,
            last_finished_at = $3, last_outcome = $4, last_error = $5::jsonb, updated_at = $3
      where connection_id = $1 and run_id = $2
      returning connection_id`,
    [end.connectionId, end.runId, end.now, end.outcome, end.error === null ? null : JSON.stringify(end.error)],
  )
  return rows.length === 1
}

export interface CountedBindingRow extends Record<string, unknown> {
  id: string
  consumer_app_id: string
  slot: string
  connection_id: string
  user_id: string | null
  created_by: string
  capabilities: string[]
  created_at: Date
}

/** The live bindings of a connection that count for sync (see COUNTED_BINDINGS), oldest first, at most `limit`. */
export async function selectCountedBindings(db: Queryable, input: { connectionId: string; limit: number }): Promise<CountedBindingRow[]> {
  return db.query<CountedBindingRow>(
    `select b.id, b.consumer_app_id, b.slot, b.connection_id, b.user_id, b.created_by, b.capabilities, b.created_at
       from platform.connections c, lateral (select b.* from ${COUNTED_BINDINGS} order by b.created_at, b.id limit $2) b
      where c.id = $1`,
    [input.connectionId, input.limit],
  )
}

export interface SyncStateRow extends Record<string, unknown> {
  next_run_at: Date | null
  running_until: Date | null
  last_started_at: Date | null
  last_finished_at: Date | null
  last_outcome: SyncOutcome | null
  last_error: { code: string; message: string } | null
}

/** The connection's sync row as managers see it, or undefined. */
export async function selectSyncState(db: Queryable, connectionId: string): Promise<SyncStateRow | undefined> {
  return first<SyncStateRow>(db,
    `select next_run_at, running_until, last_started_at, last_finished_at, last_outcome, last_error
       from platform.integration_syncs where connection_id = $1`,
    [connectionId])
}
