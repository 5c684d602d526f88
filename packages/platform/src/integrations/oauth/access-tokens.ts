/**
 * The current access token of an OAuth connection, for the broker (and, next, sync and
 * webhooks): refreshed first when it expires within a minute (spec 5.6), by the provider's
 * `refresh` Function, once at a time per connection across every platform process.
 *
 * Two layers make it one refresh: inside a process, concurrent callers share one promise per
 * connection; across processes, a lease on the token row (`refresh_claim`, taken by one
 * conditional UPDATE) lets one process refresh while the others wait and then re-read the
 * row. A lease rather than a row lock held through the Function call: the call runs Deno for
 * up to 30 s, and no transaction stays open across it (PGlite has a single session, which a
 * held transaction would block for every other request). A lease left by a crashed process
 * lapses after the Function's timeout.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { Logger } from '../../lib/logger.ts'
import { findConnection, markReconnectRequired, readConnectionCredentials, type Connection, type ConnectionKeyring } from '../connections/index.ts'
import type { InvokeProvider } from '../provider-invocation.ts'
import { activeAuthorization } from './authorization.ts'
import { OAUTH_FUNCTION_TIMEOUT_MS, providerFailure } from './flow.ts'
import { claimRefresh, releaseClaim, selectTokens, updateRefreshed, type TokenRow } from './queries.ts'
import { openAccess, openRefresh, readTokenResult, sealTokens } from './tokens.ts'

/** A token that expires within this is refreshed before use. */
export const REFRESH_MARGIN_MS = 60_000
/** How long a process waiting for another's refresh polls the row. */
const WAIT_STEP_MS = 25

export interface AccessTokenDeps {
  db: Db
  clock: Clock
  logger: Logger
  keyring: ConnectionKeyring
  invokeProvider: InvokeProvider
  /** The page where a connection's managers reconnect it (`details.connectUrl`). */
  connectUrl: (connection: Connection) => string
}

export interface AccessTokens {
  /**
   * The connection's access token, refreshed first when needed. Fails CONNECTION_NOT_FOUND,
   * INTEGRATION_RECONNECT_REQUIRED (with `details.connectUrl`), or, when the refresh Function
   * failed without rejecting the token, INTEGRATION_PROVIDER_UNAVAILABLE / _FAILED (the
   * connection stays as it was).
   *
   * @example
   * const token = await oauth.accessTokenFor({ connectionId, requestId })
   */
  accessTokenFor(input: { connectionId: string; requestId?: string }): Promise<string>
}

export function createAccessTokens(deps: AccessTokenDeps): AccessTokens {
  const inFlight = new Map<string, Promise<string>>()

  function reconnectRequired(connection: Connection): ServiceError {
    return new ServiceError('INTEGRATION_RECONNECT_REQUIRED',
      `the connection "${connection.label}" must be reconnected by signing in at the provider again`,
      { details: { connectionId: connection.id, connectUrl: deps.connectUrl(connection) } })
  }

  function fresh(row: TokenRow): boolean {
    return row.expires_at === null || row.expires_at.getTime() - REFRESH_MARGIN_MS > deps.clock.now().getTime()
  }

  /** The connection and its tokens, or the error a caller gets instead. */
  async function current(connectionId: string): Promise<{ connection: Connection; row: TokenRow }> {
    const connection = await findConnection(deps.db, connectionId)
    if (!connection) throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection with this id')
    if (connection.status === 'reconnect_required') throw reconnectRequired(connection)
    const row = await selectTokens(deps.db, connection.id)
    if (!row) throw reconnectRequired(connection)
    return { connection, row }
  }

  async function rejected(connection: Connection, reason: string): Promise<ServiceError> {
    await markReconnectRequired(deps.db, { connection, reason, at: deps.clock.now() })
    deps.logger.warn('oauth refresh rejected; connection needs reconnecting', { connectionId: connection.id, reason })
    return reconnectRequired({ ...connection, status: 'reconnect_required' })
  }

  /** Runs the refresh Function under a lease this process holds. */
  async function refreshUnderClaim(connection: Connection, row: TokenRow, claim: string, requestId: string | undefined): Promise<string> {
    let stored = false
    try {
      const authorization = await activeAuthorization(deps.db, { providerAppId: connection.providerAppId, integration: connection.integration })
      if (!authorization) throw new ServiceError('INTEGRATION_NOT_FOUND', 'the provider app no longer publishes this integration with OAuth 2.0')
      const refreshToken = openRefresh(deps.keyring, row)
      if (authorization.refresh === null || refreshToken === null) {
        throw await rejected(connection, authorization.refresh === null ? 'the access token expired and the integration declares no refresh' : 'the access token expired and there is no refresh token')
      }
      const { values } = await readConnectionCredentials(deps.db, { keyring: deps.keyring, connectionId: connection.id })
      const result = await deps.invokeProvider({
        providerAppId: connection.providerAppId,
        functionName: authorization.refresh,
        input: { refreshToken },
        redact: [refreshToken],
        integration: { connectionId: connection.id, trigger: 'oauth' },
        // Credential values entered beside `authorization`; never the access token.
        secrets: Object.fromEntries(values),
        mayEmit: false,
        timeoutMs: OAUTH_FUNCTION_TIMEOUT_MS,
        ...(requestId ? { requestId } : {}),
      })
      if (!result.ok && result.kind === 'typed' && result.error.status === 401) throw await rejected(connection, 'the provider rejected the refresh token')
      if (!result.ok) throw providerFailure(result, 'the provider\'s refresh Function')
      const tokens = readTokenResult(result.value)
      if (!tokens) throw await rejected(connection, 'the provider\'s refresh returned no access token')
      const sealed = sealTokens({ keyring: deps.keyring, clock: deps.clock, connectionId: connection.id, tokens, keptRefresh: refreshToken })
      stored = await updateRefreshed(deps.db, { connectionId: connection.id, claim, ...sealed, at: deps.clock.now() })
      if (!stored) throw new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', 'the token refresh took too long; try again')
      deps.logger.info('oauth token refreshed', { connectionId: connection.id, rotated: tokens.refreshToken !== null })
      return tokens.accessToken
    } finally {
      if (!stored) await releaseClaim(deps.db, { connectionId: connection.id, claim })
    }
  }

  async function refresh(connectionId: string, requestId: string | undefined): Promise<string> {
    // Real time, not the platform clock: a waiter must not outlive the lease it waits for.
    const giveUpAt = Date.now() + OAUTH_FUNCTION_TIMEOUT_MS + 5_000
    for (;;) {
      const { connection, row } = await current(connectionId)
      if (fresh(row)) return openAccess(deps.keyring, row)
      const at = deps.clock.now()
      const claim = randomUUID()
      const claimed = await claimRefresh(deps.db, {
        connectionId, claim, at, until: new Date(at.getTime() + OAUTH_FUNCTION_TIMEOUT_MS + 5_000),
        staleBefore: new Date(at.getTime() + REFRESH_MARGIN_MS),
      })
      if (claimed) return refreshUnderClaim(connection, claimed, claim, requestId)
      // Another process holds the lease: wait for it, then read what it stored.
      if (Date.now() > giveUpAt) throw new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', 'the token refresh is taking too long; try again')
      await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS))
    }
  }

  return {
    async accessTokenFor(input) {
      const { row } = await current(input.connectionId)
      if (fresh(row)) return openAccess(deps.keyring, row)
      let flight = inFlight.get(row.connection_id)
      if (!flight) {
        flight = refresh(row.connection_id, input.requestId).finally(() => inFlight.delete(row.connection_id))
        inFlight.set(row.connection_id, flight)
      }
      return flight
    },
  }
}
