/**
 * A consumer app's event deliveries as its owner reads them (spec 4.1, 6.1), for the owner
 * API and the MCP tool `list_integration_event_deliveries` alike: newest first, with their
 * attempts and last error and never their payload. Needs Edit on the app (identity's
 * appForRole).
 */
import type { Db } from '../../db/db.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import { appForRole, type User } from '../../identity/index.ts'
import { listDeliveries, type DeliveryRow, type DeliveryState } from './queries.ts'

const STATES: ReadonlySet<string> = new Set(['waiting', 'running', 'delivered', 'failed'])
export const DELIVERY_PAGE_SIZES = { default: 50, max: 100 } as const

/** What the API shows of a delivery. */
export interface DeliveryView {
  readonly id: string
  readonly eventId: string
  readonly type: string
  readonly slot: string
  /** The slot's `provider` (`custom`), as the handler receives it. */
  readonly provider: string
  /** The published integration's name and the app that provides it. */
  readonly integration: string
  readonly providerAppId: string
  readonly bindingId: string
  readonly state: DeliveryState
  readonly attempts: number
  readonly lastError: { code: string; message: string; status?: number } | null
  readonly occurredAt: string
  readonly createdAt: string
  readonly deliveredAt: string | null
  readonly finishedAt: string | null
  /** When a waiting delivery is due next; null otherwise. */
  readonly nextAttemptAt: string | null
}

function iso(value: Date | string | null): string | null {
  return value === null ? null : new Date(value).toISOString()
}

export function deliveryView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id, eventId: row.event_id, type: row.type, slot: row.slot, provider: row.provider, integration: row.integration_name, providerAppId: row.provider_app_id,
    bindingId: row.binding_id, state: row.state, attempts: row.attempts, lastError: row.last_error,
    occurredAt: iso(row.occurred_at)!, createdAt: iso(row.created_at)!, deliveredAt: iso(row.delivered_at), finishedAt: iso(row.finished_at),
    nextAttemptAt: row.state === 'waiting' ? iso(row.run_at) : null,
  }
}

function invalid(field: string, message: string): ServiceError {
  return new ServiceError('VALIDATION_FAILED', message, { details: { field } })
}

function encodeCursor(view: DeliveryView): string {
  return Buffer.from(JSON.stringify([view.createdAt, view.id])).toString('base64url')
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]
    const at = new Date(String(createdAt))
    if (typeof createdAt === 'string' && typeof id === 'string' && !Number.isNaN(at.getTime()) && isUuid(id)) return { createdAt: at, id }
  } catch { /* reported below */ }
  throw invalid('nextCursor', 'nextCursor is not a cursor this API returned')
}

/**
 * One page of the app's deliveries: `limit` 1 to 100 (default 50), `state` (waiting, running,
 * delivered, failed), `nextCursor` from a previous page.
 *
 * @example
 * const page = await listAppDeliveries(db, { user, appId: 'desk', query: { state: 'failed' } })
 */
export async function listAppDeliveries(
  db: Db,
  input: { user: User; appId: string; query: { limit?: string | number | undefined; state?: string | undefined; nextCursor?: string | undefined } },
): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }> {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  const rawLimit = input.query.limit
  const limit = rawLimit === undefined ? DELIVERY_PAGE_SIZES.default : Number(rawLimit)
  if (!Number.isInteger(limit) || limit < 1 || limit > DELIVERY_PAGE_SIZES.max) {
    throw invalid('limit', `limit must be an integer from 1 to ${DELIVERY_PAGE_SIZES.max}`)
  }
  const state = input.query.state
  if (state !== undefined && !STATES.has(state)) throw invalid('state', `state must be one of ${[...STATES].join(', ')}`)
  const cursor = input.query.nextCursor
  const rows = await listDeliveries(db, {
    appId: app.id, state: (state as DeliveryState | undefined) ?? null, before: cursor ? decodeCursor(cursor) : null, limit: limit + 1,
  })
  const deliveries = rows.slice(0, limit).map(deliveryView)
  const last = deliveries[deliveries.length - 1]
  return { deliveries, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last) : null }
}
