/**
 * One sync run (spec 2.6 `sync`, 4.4, 8): the provider's sync Function, run for one
 * connection through the same provider invocation the broker uses (provider-invocation.ts),
 * with input `{}`, `ctx.integration` = `{ connectionId, trigger: 'sync' }`, the connection's
 * credentials (and an OAuth contract's fresh access token) in the invocation's secrets
 * overlay exactly as the broker builds it (broker.ts invocationSecrets), `emit` allowed, and
 * the full 15-minute timeout. Its outcome is recorded on the connection's sync row; an
 * `errors.unauthorized` marks the connection Reconnect required, which stops its sync until
 * someone reconnects it. A run is never retried: the next one is the next occurrence.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { coerceError, ServiceError } from '../../lib/errors.ts'
import type { Logger } from '../../lib/logger.ts'
import { findConnection, markReconnectRequired, type ConnectionKeyring } from '../connections/index.ts'
import { selectCredentials } from '../connections/queries.ts'
import { publishedContract } from '../bindings/index.ts'
import { invocationSecrets, type AccessTokenSource } from '../broker.ts'
import type { InvokeProvider } from '../provider-invocation.ts'
import { finishSync, type SyncOutcome } from './queries.ts'

/** How long a sync run may take (spec 8: the full 15-minute Function timeout). */
export const SYNC_TIMEOUT_MS = 15 * 60 * 1000

/** Longest message kept in a row's `last_error`. */
const MAX_ERROR_MESSAGE = 500

export interface SyncRunDeps {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly keyring: ConnectionKeyring
  readonly invokeProvider: InvokeProvider
  readonly accessToken?: AccessTokenSource
}

interface Ended {
  readonly outcome: SyncOutcome
  readonly error: { code: string; message: string } | null
}

/**
 * Runs the sync of `connectionId` under the lease `runId` (already claimed) and records how
 * it ended. Never throws: a failure of the platform itself is recorded as `failed`.
 *
 * @example
 * await runSync(deps, { connectionId, runId })
 */
export async function runSync(deps: SyncRunDeps, input: { connectionId: string; runId: string }): Promise<SyncOutcome> {
  const requestId = `sync_${randomUUID()}`
  let ended: Ended
  try {
    ended = await attempt(deps, { connectionId: input.connectionId, requestId })
  } catch (error) {
    const failure = coerceError(error)
    deps.logger.error('integration sync: the run could not be made', { connectionId: input.connectionId, requestId, error: failure.message })
    ended = { outcome: 'failed', error: { code: 'INTERNAL', message: 'the platform could not run the sync' } }
  }
  const bounded = ended.error === null ? null : { code: ended.error.code.slice(0, 100), message: ended.error.message.slice(0, MAX_ERROR_MESSAGE) }
  const recorded = await finishSync(deps.db, { connectionId: input.connectionId, runId: input.runId, outcome: ended.outcome, error: bounded, now: deps.clock.now() })
    .catch((error: unknown) => {
      deps.logger.error('integration sync: the outcome could not be recorded', { connectionId: input.connectionId, error: coerceError(error).message })
      return false
    })
  const fields = { connectionId: input.connectionId, requestId, outcome: ended.outcome, ...(bounded ? { code: bounded.code } : {}) }
  if (!recorded) deps.logger.warn('integration sync: the run ended after its lease was taken over', fields)
  else if (ended.outcome === 'succeeded') deps.logger.info('integration sync: run finished', fields)
  else deps.logger.warn('integration sync: run failed; the next occurrence runs again', fields)
  return ended.outcome
}

async function attempt(deps: SyncRunDeps, input: { connectionId: string; requestId: string }): Promise<Ended> {
  const { db, logger } = deps
  const connection = await findConnection(db, input.connectionId)
  if (!connection) return { outcome: 'failed', error: { code: 'CONNECTION_NOT_FOUND', message: 'the connection is gone' } }
  const published = await publishedContract(db, { organisationId: connection.organisationId, name: connection.integration })
  const sync = published?.providerAppId === connection.providerAppId ? published.contract.sync : undefined
  if (!published || !sync) {
    return { outcome: 'failed', error: { code: 'INTEGRATION_NOT_FOUND', message: 'the provider app no longer publishes a sync for this integration' } }
  }
  let secrets: Record<string, string | null>
  try {
    secrets = await invocationSecrets(deps, { connection, credentials: await selectCredentials(db, connection.id), contract: published.contract, requestId: input.requestId })
  } catch (error) {
    // A rejected OAuth refresh has marked the connection Reconnect required already.
    if (error instanceof ServiceError && error.code === 'INTEGRATION_RECONNECT_REQUIRED') {
      return { outcome: 'unauthorized', error: { code: error.code, message: 'the OAuth refresh was rejected; the connection needs reconnecting' } }
    }
    throw error
  }
  const result = await deps.invokeProvider({
    providerAppId: connection.providerAppId,
    functionName: sync.function,
    input: {},
    integration: { connectionId: connection.id, trigger: 'sync' },
    secrets,
    mayEmit: true,
    timeoutMs: SYNC_TIMEOUT_MS,
    fixedTimeout: true,
    requestId: input.requestId,
  })
  if (result.ok) return { outcome: 'succeeded', error: null }
  if (result.kind === 'timeout') return { outcome: 'timed_out', error: { code: 'INTEGRATION_SYNC_TIMEOUT', message: 'the sync Function did not finish in time' } }
  if (result.kind === 'failed') {
    // The invoker's message is for the platform's logs (it may name internals), not for managers.
    logger.warn('integration sync: the sync Function failed', { connectionId: connection.id, requestId: input.requestId, error: result.message })
    return { outcome: 'failed', error: { code: 'INTEGRATION_PROVIDER_FAILED', message: 'the sync Function failed' } }
  }
  if (result.error.status === 401) {
    await markReconnectRequired(db, { connection, reason: 'the provider\'s sync answered unauthorized', at: deps.clock.now() })
    return { outcome: 'unauthorized', error: { code: result.error.code, message: result.error.message } }
  }
  return { outcome: 'failed', error: { code: result.error.code, message: result.error.message } }
}
