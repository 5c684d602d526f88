/**
 * An app's cron as its owner sees it: the declarations of the active production release
 * with their next run, and manual runs. A manual run is a job like a scheduled one, with
 * the same envelope `{ source: 'service.cron', name, scheduledAt }` where `scheduledAt` is
 * when it was asked for; it works for a disabled declaration too (`enabled` governs the
 * schedule only) and does not move the schedule.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import type { App } from '../apps/apps.ts'
import { enqueueCronRun } from '../jobs/index.ts'
import { nextOccurrences } from './next.ts'
import { listScheduleStates, productionCrons } from './queries.ts'
import { formatInstant } from './zone-time.ts'

export interface CronView {
  readonly name: string
  readonly schedule: string
  readonly timezone: string
  readonly function: string
  readonly enabled: boolean
  /** Next scheduled run (UTC), null when disabled or the app is not active. */
  readonly nextRunAt: string | null
  /** The same instant with the zone's offset, as `service cron next` prints it. */
  readonly nextRunAtLocal: string | null
  /** The latest occurrence enqueued on schedule, and its job. */
  readonly lastScheduledAt: string | null
  readonly lastJobId: string | null
}

/**
 * @example
 * const crons = await listAppCrons(db, clock, { app }) // [{ name: 'nightly', nextRunAt: '2026-11-22T03:00:00.000Z', ... }]
 */
export async function listAppCrons(db: Db, clock: Clock, target: { app: App }): Promise<CronView[]> {
  const { app } = target
  const found = await productionCrons(db, app.id)
  if (found === null) return []
  const states = new Map((await listScheduleStates(db, found.namespaceId)).map((state) => [state.name, state]))
  const now = clock.now()
  return found.cron.map((declaration) => {
    const timezone = declaration.timezone ?? 'UTC'
    const next = declaration.enabled && app.status === 'active'
      ? nextOccurrences(declaration.schedule, { timezone, from: now, count: 1 })[0] ?? null
      : null
    const state = states.get(declaration.name)
    return {
      name: declaration.name,
      schedule: declaration.schedule,
      timezone,
      function: declaration.function,
      enabled: declaration.enabled,
      nextRunAt: next?.toISOString() ?? null,
      nextRunAtLocal: next === null ? null : formatInstant(next, timezone),
      lastScheduledAt: state?.lastScheduledAt?.toISOString() ?? null,
      lastJobId: state?.lastJobId ?? null,
    }
  })
}

/**
 * Enqueues a manual run of the cron declaration `name`; CRON_NOT_FOUND when the active
 * production release declares no such cron.
 *
 * @example
 * const run = await triggerCronRun(db, clock, { app, name: 'nightly' }) // { jobId, cron: 'nightly', scheduledAt }
 */
export async function triggerCronRun(db: Db, clock: Clock, target: { app: App; name: string }): Promise<{ jobId: string; cron: string; scheduledAt: string }> {
  const found = await productionCrons(db, target.app.id)
  const declaration = found?.cron.find((cron) => cron.name === target.name)
  if (found === null || declaration === undefined) {
    throw new ServiceError('CRON_NOT_FOUND', `the active release of this app declares no cron "${target.name}"`, { details: { cron: target.name } })
  }
  const scheduledAt = clock.now()
  const { jobId } = await enqueueCronRun(db, clock, {
    appId: target.app.id, namespaceId: found.namespaceId, cronName: declaration.name, scheduledAt, manual: true,
  })
  return { jobId, cron: declaration.name, scheduledAt: scheduledAt.toISOString() }
}
