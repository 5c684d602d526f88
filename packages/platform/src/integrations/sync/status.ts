/**
 * What people who see a connection learn about its sync (the connection's page on
 * `{auth_url}`): when it last ran, how that ended, whether one is running, and the next
 * occurrence. Never a credential or a Function's output.
 */
import type { Queryable } from '../../db/db.ts'
import { isUuid } from '../../lib/ids.ts'
import { selectSyncState, type SyncOutcome } from './queries.ts'

export interface SyncStatus {
  readonly lastStartedAt: Date | null
  readonly lastFinishedAt: Date | null
  readonly lastOutcome: SyncOutcome | null
  /** The latest failure's code and message (the provider's own words for a typed error). */
  readonly lastError: { readonly code: string; readonly message: string } | null
  /** Whether a run holds the connection's lease now. */
  readonly running: boolean
  /**
   * When the next run is due: the next occurrence, or for the first run after a first binding
   * the binding's instant (due at once, run at the next tick); null while stopped (no binding,
   * Reconnect required, no sync published).
   */
  readonly nextRunAt: Date | null
}

/**
 * The connection's sync status at `now`, or null when it never had one (no sync declared, or
 * never bound).
 *
 * @example
 * const status = await syncStatus(db, { connectionId, now: clock.now() })
 */
export async function syncStatus(db: Queryable, input: { connectionId: string; now: Date }): Promise<SyncStatus | null> {
  if (!isUuid(input.connectionId)) return null
  const row = await selectSyncState(db, input.connectionId)
  if (!row) return null
  const at = (value: Date | null) => (value === null ? null : new Date(value))
  return {
    lastStartedAt: at(row.last_started_at),
    lastFinishedAt: at(row.last_finished_at),
    lastOutcome: row.last_outcome,
    lastError: row.last_error,
    running: row.running_until !== null && new Date(row.running_until).getTime() > input.now.getTime(),
    nextRunAt: at(row.next_run_at),
  }
}
