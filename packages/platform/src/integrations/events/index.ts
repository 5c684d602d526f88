/**
 * Integration events (spec 2.9, 6.1): the public surface for the composition root and for
 * development mode. `createIntegrationEvents` answers `ctx.integration.emit` (emit.ts), runs
 * the delivery worker and its 14-day retention purge (delivery-worker.ts) and serves the
 * owner API's integration-events listing (routes.ts). `eventEnvelope` and
 * `runEventHandler` hand an event to a slot's handler (development's injected events).
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import type { FunctionHost } from '../../functions/index.ts'
import { createDeliveryWorker, type DeliveryWorkerOptions } from './delivery-worker.ts'
import { emitEvent, type EmitCall } from './emit.ts'
import { integrationEventRoutes } from './routes.ts'

export { eventEnvelope, runEventHandler, type EventEnvelope } from './envelope.ts'
export { MAX_EVENT_DATA_BYTES, MAX_EVENT_ID_LENGTH, readEvent, type EmitCall } from './emit.ts'
export { DELIVERY_RETENTION_MS, RETRY_DELAYS_SECONDS, type DeliveryWorkerOptions } from './delivery-worker.ts'
export { slotHandler } from './subscription.ts'
export { DELIVERY_PAGE_SIZES, listAppDeliveries, type DeliveryView } from './deliveries.ts'

export interface IntegrationEventsDeps extends DeliveryWorkerOptions {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  /** The Functions host (a getter: the composition root builds it after this). */
  readonly host: () => FunctionHost
  readonly production: boolean
}

export interface IntegrationEvents {
  /** Answers `ctx.integration.emit`: the number of new deliveries. */
  emit(call: EmitCall): Promise<number>
  /** Starts the delivery worker and the retention purge. */
  start(): Promise<void>
  /** Stops both; waits for attempts in flight. */
  stop(): Promise<void>
  /** One delivery pass, awaited to its end; returns how many attempts ran. */
  runDue(): Promise<number>
  /** Deletes delivery records past retention; returns how many. */
  purge(): Promise<number>
  /** `GET /v1/apps/{appId}/integration-events`, for the owner API. */
  readonly routes: ReturnType<typeof integrationEventRoutes>
}

/**
 * @example
 * const events = createIntegrationEvents({ db, clock, logger, host: () => functions, production: true })
 * await events.start()
 */
export function createIntegrationEvents(deps: IntegrationEventsDeps): IntegrationEvents {
  const worker = createDeliveryWorker(deps)
  return {
    emit: (call) => emitEvent(deps, call),
    start: () => worker.start(),
    stop: () => worker.stop(),
    runDue: () => worker.runDue(),
    purge: () => worker.purge(),
    routes: integrationEventRoutes({ db: deps.db }),
  }
}
