/**
 * `last_used_at` bookkeeping off the request path. A credential's last use is written at most
 * once a minute; this process remembers when it last wrote each one, so most requests run no
 * UPDATE at all, and the write it does run is not awaited (a failure is only logged: it must
 * never fail the request it records).
 */
import type { Queryable } from './db.ts'
import type { Clock } from '../lib/clock.ts'

const INTERVAL_MS = 60 * 1000
const MAX_TRACKED = 10_000

export function createUsageStamps(options: { table: string; onError?: (error: Error) => void }) {
  const written = new Map<string, number>()
  return {
    /** Records a use of `id` now; writes only when this process has not in the last minute. */
    touch(db: Queryable, clock: Clock, id: string): void {
      const now = clock.now().getTime()
      const last = written.get(id)
      if (last !== undefined && now - last < INTERVAL_MS) return
      if (written.size >= MAX_TRACKED) written.clear()
      written.set(id, now)
      db.query(
        `update ${options.table} set last_used_at = $2
          where id = $1 and (last_used_at is null or last_used_at < $2::timestamptz - interval '1 minute')`,
        [id, new Date(now)],
      ).catch((error: Error) => options.onError?.(error))
    },
  }
}
