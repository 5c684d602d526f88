/**
 * The webhook receiver (spec 6.2): a POST to a connection's secret URL runs the provider
 * app's webhook Function (its published contract's `webhook.function`) as a `system`
 * invocation of its active production release, through the same InvokeProvider the broker
 * uses: `ctx.integration` is `{ connectionId, trigger: 'webhook' }`, the connection's
 * credentials (and, for an OAuth 2.0 contract, the fresh access token under its declared
 * name) are the invocation's secrets overlay (broker.ts `invocationSecrets`), `emit` is
 * allowed, and the input is `{ method, headers, body, receivedAt }` with `body` the exact
 * request text and `headers` filtered (headers.ts). The outcome becomes the sender's answer
 * (answers.ts).
 *
 * A wrong URL of any kind (malformed token, unknown token, the connection removed, its
 * provider app not active, no contract or no `webhook` in it) is the same one statement
 * finding no row, then the same 404: no hint of which part was wrong, in the same work.
 * `errors.unauthorized` from a webhook Function refuses the SENDER (a bad signature), so,
 * unlike an operation's, it does not mark the connection Reconnect required. A connection
 * that is Reconnect required answers 503 without running anything: its credentials were
 * rejected, and the sender's retries reach the Function once someone reconnects it.
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { sha256Hex } from '../../lib/crypto.ts'
import { ServiceError, coerceError } from '../../lib/errors.ts'
import type { Logger } from '../../lib/logger.ts'
import { invocationSecrets, type AccessTokenSource } from '../broker.ts'
import { toConnection, type ConnectionKeyring } from '../connections/index.ts'
import type { InvokeProvider } from '../provider-invocation.ts'
import { NOT_FOUND, NOT_UTF8, RECONNECT_REQUIRED, UNAVAILABLE, outcomeOf, senderAnswer, type SenderAnswer } from './answers.ts'
import { exactText } from './body.ts'
import { forwardedHeaders, type WebhookHeader } from './headers.ts'
import { selectWebhookTarget } from './queries.ts'

/** How long a webhook Function may run (or its own timeout when shorter), like an operation. */
export const WEBHOOK_TIMEOUT_MS = 25_000

/** The webhook Function's input (spec 4.4). */
export interface WebhookInput {
  readonly method: string
  readonly headers: readonly WebhookHeader[]
  /** The exact request text. */
  readonly body: string
  /** ISO 8601, when the platform received the request. */
  readonly receivedAt: string
}

export interface WebhookDeps {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly keyring: ConnectionKeyring
  readonly invokeProvider: InvokeProvider
  /** OAuth connections' fresh access token (integrations/oauth `accessTokenFor`). */
  readonly accessToken?: AccessTokenSource
}

/** One POST as the route read it: its body already bounded (body.ts). */
export interface WebhookRequest {
  /** The path segment after `/v1/hooks/`, as sent (never logged). */
  readonly token: string
  readonly method: string
  readonly headers: Headers
  readonly body: Uint8Array
  readonly receivedAt: Date
  readonly requestId?: string
}

export interface WebhookReceiver {
  receive(request: WebhookRequest): Promise<SenderAnswer>
}

/**
 * @example
 * const receiver = createWebhookReceiver({ db, clock, logger, keyring, invokeProvider, accessToken })
 * const { status, body } = await receiver.receive({ token, method: 'POST', headers, body: bytes, receivedAt: clock.now() })
 */
export function createWebhookReceiver(deps: WebhookDeps): WebhookReceiver {
  return {
    async receive(request) {
      // Always hashed and looked up, whatever the token looks like: the same work for every miss.
      const target = await selectWebhookTarget(deps.db, sha256Hex(request.token))
      const functionName = target?.contract.webhook?.function
      if (!target || functionName === undefined) return NOT_FOUND
      const body = exactText(request.body)
      if (body === null) return NOT_UTF8
      const connection = toConnection(target)
      const context = { requestId: request.requestId, connectionId: connection.id, providerAppId: connection.providerAppId }
      if (connection.status === 'reconnect_required') return RECONNECT_REQUIRED
      let secrets: Record<string, string | null>
      try {
        secrets = await invocationSecrets(deps, {
          connection, credentials: target.credentials, contract: target.contract,
          ...(request.requestId === undefined ? {} : { requestId: request.requestId }),
        })
      } catch (error) {
        const code = error instanceof ServiceError ? error.code : 'INTERNAL_ERROR'
        deps.logger.warn('webhook: no credentials for the provider', { ...context, code })
        return code === 'INTEGRATION_RECONNECT_REQUIRED' ? RECONNECT_REQUIRED : UNAVAILABLE
      }
      const input: WebhookInput = {
        method: request.method, headers: forwardedHeaders(request.headers), body, receivedAt: request.receivedAt.toISOString(),
      }
      const result = await deps.invokeProvider({
        providerAppId: connection.providerAppId,
        functionName,
        input,
        integration: { connectionId: connection.id, trigger: 'webhook' },
        secrets,
        mayEmit: true,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        ...(request.requestId === undefined ? {} : { requestId: request.requestId }),
      }).catch((error: unknown) => ({ ok: false as const, kind: 'failed' as const, message: coerceError(error).message }))
      const answer = senderAnswer(result)
      if (answer.status >= 500) {
        deps.logger.warn('webhook: the provider did not take it', {
          ...context, outcome: outcomeOf(result), ...(!result.ok && result.kind === 'failed' ? { error: result.message.slice(0, 500) } : {}),
        })
      }
      return answer
    },
  }
}
