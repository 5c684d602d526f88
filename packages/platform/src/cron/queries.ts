// SQL of the cron scheduler: the lease, per-declaration state, and the lookups the owner
// API needs. One function per statement.

import type { Queryable } from '../db/db.ts'
import type { CronDeclaration } from '../manifest/index.ts'

/**
 * Takes or renews the scheduler lease for `owner` until `expiresAt`; true when `owner`
 * holds it afterwards. A lease held by another process is taken only once it has expired.
 */
export async function acquireLease(db: Queryable, lease: { owner: string; now: Date; expiresAt: Date }): Promise<boolean> {
  const rows = await db.query(
    `insert into platform.cron_lease (id, owner, expires_at) values (true, $1, $2)
     on conflict (id) do update set owner = excluded.owner, expires_at = excluded.expires_at
      where platform.cron_lease.owner = excluded.owner or platform.cron_lease.expires_at <= $3
     returning owner`,
    [lease.owner, lease.expiresAt, lease.now],
  )
  return rows.length === 1
}

/** Gives the lease up (on shutdown), so another process need not wait for it to expire. */
export async function releaseLease(db: Queryable, owner: string): Promise<void> {
  await db.query('delete from platform.cron_lease where owner = $1', [owner])
}

export interface ScheduleState {
  readonly namespaceId: string
  readonly name: string
  readonly schedule: string
  readonly timezone: string
  readonly handledThrough: Date
  readonly lastScheduledAt: Date | null
  readonly lastJobId: string | null
}

type ScheduleRow = {
  namespace_id: string
  name: string
  schedule: string
  timezone: string
  handled_through: Date | string
  last_scheduled_at: Date | string | null
  last_job_id: string | null
}

const SCHEDULE_COLUMNS = 'namespace_id, name, schedule, timezone, handled_through, last_scheduled_at, last_job_id'

function fromRow(row: ScheduleRow): ScheduleState {
  return {
    namespaceId: row.namespace_id,
    name: row.name,
    schedule: row.schedule,
    timezone: row.timezone,
    handledThrough: new Date(row.handled_through),
    lastScheduledAt: row.last_scheduled_at === null ? null : new Date(row.last_scheduled_at),
    lastJobId: row.last_job_id,
  }
}

/** Every declaration's state (one row per enabled cron of an active release). */
export async function listScheduleStates(db: Queryable, namespaceId?: string): Promise<ScheduleState[]> {
  const rows = namespaceId === undefined
    ? await db.query<ScheduleRow>(`select ${SCHEDULE_COLUMNS} from platform.cron_schedules`)
    : await db.query<ScheduleRow>(`select ${SCHEDULE_COLUMNS} from platform.cron_schedules where namespace_id = $1`, [namespaceId])
  return rows.map(fromRow)
}

/**
 * Starts a declaration's state at `handledThrough`: a new row, or a reset of a row whose
 * schedule or zone differs. Returns false when the row already holds this schedule (another
 * process got there first).
 */
export async function startSchedule(
  db: Queryable,
  state: { namespaceId: string; name: string; schedule: string; timezone: string; handledThrough: Date; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `insert into platform.cron_schedules (namespace_id, name, schedule, timezone, handled_through, updated_at)
     values ($1, $2, $3, $4, $5, $6)
     on conflict (namespace_id, name) do update
       set schedule = excluded.schedule, timezone = excluded.timezone,
           handled_through = excluded.handled_through, updated_at = excluded.updated_at
       where platform.cron_schedules.schedule <> excluded.schedule or platform.cron_schedules.timezone <> excluded.timezone
     returning 1`,
    [state.namespaceId, state.name, state.schedule, state.timezone, state.handledThrough, state.now],
  )
  return rows.length === 1
}

/**
 * Moves `handled_through` from `from` to `to`, recording the job when an occurrence was
 * enqueued. Compare-and-set: false when another process moved it first, in which case the
 * caller's transaction must roll back (its job, if any, was that process's to create).
 */
export async function advanceSchedule(
  db: Queryable,
  change: { namespaceId: string; name: string; from: Date; to: Date; jobId: string | null; now: Date },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.cron_schedules
        set handled_through = $4,
            last_scheduled_at = case when $5::uuid is null then last_scheduled_at else $4 end,
            last_job_id = coalesce($5::uuid, last_job_id),
            updated_at = $6
      where namespace_id = $1 and name = $2 and handled_through = $3
     returning 1`,
    [change.namespaceId, change.name, change.from, change.to, change.jobId, change.now],
  )
  return rows.length === 1
}

/** Forgets the state of declarations that are gone or disabled. */
export async function deleteScheduleStates(db: Queryable, keys: readonly { namespaceId: string; name: string }[]): Promise<void> {
  if (keys.length === 0) return
  await db.query(
    `delete from platform.cron_schedules s
      using jsonb_to_recordset($1::jsonb) as gone (namespace_id uuid, name text)
      where s.namespace_id = gone.namespace_id and s.name = gone.name`,
    [JSON.stringify(keys.map((key) => ({ namespace_id: key.namespaceId, name: key.name })))],
  )
}

/** When a release became active: where its new cron declarations start. */
export async function releaseActivatedAt(db: Queryable, releaseId: string): Promise<Date | null> {
  const rows = await db.query<{ activated_at: Date | string }>('select activated_at from platform.releases where id = $1', [releaseId])
  return rows[0] === undefined ? null : new Date(rows[0].activated_at)
}

/** An app's production namespace and the cron declarations of its active release. */
export async function productionCrons(db: Queryable, appId: string): Promise<{ namespaceId: string; cron: CronDeclaration[] } | null> {
  const rows = await db.query<{ namespace_id: string; cron: CronDeclaration[] | null }>(
    `select n.id as namespace_id, r.manifest -> 'cron' as cron
       from platform.apps a
       join platform.releases r on r.id = a.active_release_id
       join platform.namespaces n on n.app_id = a.id and n.environment = 'production' and n.dev_name = ''
      where a.id = $1`,
    [appId],
  )
  const row = rows[0]
  return row === undefined ? null : { namespaceId: row.namespace_id, cron: row.cron ?? [] }
}
