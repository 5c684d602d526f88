/**
 * The broker (spec 4.3, 5.5, 5.6, 7): answers `ctx.integrations.use(slot).call(operation,
 * input)` from a consumer app's Function. At EVERY call, nothing cached: the consumer's
 * runtime SDK (2.2.0 or later), the slot in the running release, the operation in the
 * contract its organisation publishes now, the capability requested by the slot and granted
 * by the binding, the binding's standing (bindings/: suspended, revoked), the person for a
 * `calling_user` slot, and the connection's status. Then the provider's operation Function
 * runs as a `system` invocation with the connection's credentials as an invocation-scoped
 * secrets overlay (provider-invocation.ts), and its outcome is mapped:
 * - a value: returned when its JSON is at most MAX_OPERATION_RESULT_BYTES;
 * - a typed 4xx: passed through unchanged, except 401 (`errors.unauthorized`), which marks
 *   the connection Reconnect required and fails INTEGRATION_RECONNECT_REQUIRED;
 * - 503 (`errors.unavailable`) or a timeout: INTEGRATION_PROVIDER_UNAVAILABLE (503, so a queue
 *   consumer's attempt is retryable);
 * - anything else: INTEGRATION_PROVIDER_FAILED.
 * A development namespace's call is answered in its integration's development mode
 * (integrations/dev): `fake`, the default, returns the operation's declared `fake` after the
 * slot, operation, capability and person checks; `live` goes on as production does.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError, type ErrorCode } from '../lib/errors.ts'
import type { HostUrls } from '../http/hosts.ts'
import { SDK_GATES, sdkAtLeast, type IntegrationContract, type Manifest } from '../manifest/index.ts'
import { connectionPageUrl, findConnection, markReconnectRequired, openCredentials, type Connection, type ConnectionKeyring, type CredentialRow } from './connections/index.ts'
import { callFacts, connectAndBindPath, settleStanding } from './bindings/index.ts'
import { selectReleaseManifest } from './bindings/queries.ts'
import { devModeOf } from './dev/mode.ts'
import type { InvokeProvider, ProviderResult } from './provider-invocation.ts'

/** Longest JSON text of an operation's result (spec 5.5: 1 MiB). */
export const MAX_OPERATION_RESULT_BYTES = 1024 * 1024
/** How long an operation may run (spec 5.5: 25 seconds). */
export const OPERATION_TIMEOUT_MS = 25_000

/** One `ctx.integrations` call, with the invocation as the Functions host knows it. */
export interface IntegrationsCall {
  readonly appId: string
  readonly releaseId: string
  /** '' for production, else the development namespace. */
  readonly devName: string
  readonly userId: string | null
  readonly requestId: string
  readonly method: string
  readonly args: readonly unknown[]
}

/**
 * Where an OAuth connection's fresh access token comes from (integrations/oauth
 * `accessTokenFor`: refreshed when it expires within a minute, once per connection; fails
 * INTEGRATION_RECONNECT_REQUIRED with `details.connectUrl` when the refresh is rejected).
 */
export type AccessTokenSource = (input: { connectionId: string; requestId?: string }) => Promise<string>

export interface BrokerDeps {
  readonly db: Db
  readonly clock: Clock
  readonly keyring: ConnectionKeyring
  readonly urls: HostUrls
  readonly invokeProvider: InvokeProvider
  readonly accessToken?: AccessTokenSource
}

export interface Broker {
  answer(call: IntegrationsCall): Promise<unknown>
}

const MAX_MANIFESTS = 256

/**
 * @example
 * const broker = createBroker({ db, clock, keyring, urls, invokeProvider })
 * case 'integrations': return await broker.answer({ appId, releaseId, userId, requestId, method, args })
 */
export function createBroker(deps: BrokerDeps): Broker {
  /** Release manifests never change once written; cached by release id. */
  const manifests = new Map<string, Promise<Manifest | null>>()
  function manifestOf(releaseId: string): Promise<Manifest | null> {
    let entry = manifests.get(releaseId)
    if (entry === undefined) {
      if (manifests.size >= MAX_MANIFESTS) manifests.delete(manifests.keys().next().value!)
      entry = selectReleaseManifest(deps.db, releaseId)
      entry.catch(() => manifests.delete(releaseId))
      manifests.set(releaseId, entry)
    }
    return entry
  }

  return {
    async answer(call) {
      if (call.method !== 'use.call') throw new ServiceError('BAD_REQUEST', `ctx.integrations has no method ${call.method.slice(0, 64)}`)
      const [slotName, operationName, input] = call.args
      if (typeof slotName !== 'string' || typeof operationName !== 'string') {
        throw new ServiceError('BAD_REQUEST', 'ctx.integrations.use(slot).call(operation, input) takes a slot name and an operation name (strings)')
      }
      const manifest = await manifestOf(call.releaseId)
      if (!manifest) throw new ServiceError('NOT_FOUND', 'the running release is gone')
      const sdk = manifest.runtime.sdk.version
      if (!sdkAtLeast(sdk, SDK_GATES.integrationSlots)) {
        throw new ServiceError('INTEGRATION_SDK_TOO_OLD',
          `ctx.integrations needs runtime SDK ${SDK_GATES.integrationSlots} or later; this release pins ${sdk}: raise runtime.sdk.version in service.yaml`,
          { details: { sdk, required: SDK_GATES.integrationSlots } })
      }
      const slot = Object.hasOwn(manifest.integrations, slotName) ? manifest.integrations[slotName] : undefined
      if (!slot) {
        throw new ServiceError('SLOT_NOT_FOUND', `the release declares no integration slot "${slotName.slice(0, 64)}"; add it under integrations: in service.yaml`,
          { details: { slot: slotName.slice(0, 64) } })
      }
      // One statement for every live fact (bindings/queries.ts selectCallFacts); the checks below keep their order.
      const userId = slot.account === 'calling_user' ? call.userId : null
      const facts = await callFacts(deps.db, { appId: call.appId, integration: slot.integration, slot: slotName, userId })
      if (!facts) throw new ServiceError('NOT_FOUND', 'the app is gone')
      const { consumer, published } = facts
      if (!published) {
        throw new ServiceError('INTEGRATION_NOT_FOUND', `no active app of the organisation publishes the integration "${slot.integration}"`,
          { details: { slot: slotName, integration: slot.integration } })
      }
      const operation = published.contract.operations.find((op) => op.name === operationName)
      if (!operation) {
        throw new ServiceError('INTEGRATION_OPERATION_NOT_FOUND', `the integration "${slot.integration}" has no operation "${operationName.slice(0, 128)}"`,
          { details: { slot: slotName, operation: operationName.slice(0, 128) } })
      }
      if (!slot.capabilities.includes(operation.capability)) {
        throw new ServiceError('INTEGRATION_CAPABILITY_NOT_GRANTED',
          `the slot "${slotName}" does not request the capability "${operation.capability}" that "${operationName}" needs`,
          { details: { slot: slotName, operation: operationName, capability: operation.capability } })
      }
      const connectUrl = slot.account === 'calling_user' ? `${deps.urls.auth}${connectAndBindPath({ app: consumer.slug, slot: slotName })}` : null
      if (slot.account === 'calling_user' && userId === null) {
        throw new ServiceError('INTEGRATION_USER_REQUIRED', `the slot "${slotName}" acts for the signed-in person; sign in first`, { details: { slot: slotName } })
      }
      if (call.devName !== '' && (await devModeOf(deps.db, { appId: call.appId, devName: call.devName, integration: slot.integration })) === 'fake') {
        // A development namespace in fake mode (the default) gets the declared fake after the same checks (integrations/dev).
        if (!Object.hasOwn(operation, 'fake')) {
          throw new ServiceError('INTEGRATION_FAKE_NOT_DECLARED',
            `the operation "${operation.name}" declares no fake, so development namespace ${call.devName} cannot answer it in fake mode: `
            + `choose live with PUT /v1/apps/${consumer.slug}/dev/${call.devName}/integrations/${slot.integration}/mode`,
            { details: { slot: slotName, operation: operation.name } })
        }
        return operation.fake ?? null
      }
      const connectionRequired = () => new ServiceError('INTEGRATION_CONNECTION_REQUIRED',
        `connect your account for "${slot.integration}" to use this`, { details: { slot: slotName, connectUrl } })
      const { binding, connection } = facts
      if (!binding) {
        if (userId !== null) throw connectionRequired()
        throw new ServiceError('INTEGRATION_NOT_BOUND', `the slot "${slotName}" is not bound to a connection; bind it with PUT /v1/apps/${consumer.slug}/integrations/${slotName}/binding`,
          { details: { slot: slotName } })
      }
      if (!binding.capabilities.includes(operation.capability)) {
        throw new ServiceError('INTEGRATION_CAPABILITY_NOT_GRANTED',
          `the binding of "${slotName}" does not grant "${operation.capability}"; bind the slot again`,
          { details: { slot: slotName, operation: operationName, capability: operation.capability } })
      }
      if (!connection || !facts.standing) {
        if (userId !== null) throw connectionRequired()
        throw new ServiceError('INTEGRATION_NOT_BOUND', `the slot "${slotName}" is not bound to a connection`, { details: { slot: slotName } })
      }
      const standing = await settleStanding(deps, facts.standing)
      if (standing === 'revoked') {
        if (userId !== null) throw connectionRequired()
        throw new ServiceError('INTEGRATION_BINDING_REVOKED',
          `the binding of "${slotName}" was revoked: its connection's owner no longer may bind it into this app; bind the slot again`,
          { details: { slot: slotName } })
      }
      if (standing === 'suspended') {
        throw new ServiceError('INTEGRATION_BINDING_SUSPENDED',
          `the binding of "${slotName}" is suspended: the person who bound it may not use "${slot.integration}" now`, { details: { slot: slotName } })
      }
      if (connection.status === 'reconnect_required') throw reconnectRequired(deps, slotName, connection)
      const secrets = await invocationSecrets(deps, { connection, credentials: facts.credentials, contract: published.contract, requestId: call.requestId })
      const result = await deps.invokeProvider({
        providerAppId: published.providerApp.id,
        providerApp: published.providerApp,
        functionName: operation.function,
        input: input === undefined ? null : input,
        integration: { connectionId: connection.id, trigger: 'operation', operation: operation.name, consumerAppId: consumer.id },
        secrets,
        mayEmit: true,
        timeoutMs: OPERATION_TIMEOUT_MS,
        requestId: call.requestId,
      })
      return await outcome(deps, { result, slot: slotName, connection })
    },
  }
}

/**
 * What a provider's Function reads through `ctx.secrets` for one invocation on a connection:
 * the connection's credential values (opened from the sealed rows as read) and, for an OAuth
 * 2.0 contract, the fresh access token under the contract's declared name (`accessToken`,
 * which may refresh it first, or fail INTEGRATION_RECONNECT_REQUIRED). The one way the
 * broker, sync and the webhook receiver build an invocation's secrets overlay.
 *
 * @example
 * const secrets = await invocationSecrets(deps, { connection, credentials: rows, contract, requestId })
 */
export async function invocationSecrets(
  deps: Pick<BrokerDeps, 'keyring' | 'accessToken'>,
  input: { connection: Connection; credentials: readonly CredentialRow[]; contract: IntegrationContract; requestId?: string },
): Promise<Record<string, string | null>> {
  const values = openCredentials({ keyring: deps.keyring, connection: input.connection, rows: input.credentials })
  // A declared credential left empty reads as null (`get`), not as an undeclared secret.
  const secrets: Record<string, string | null> = Object.fromEntries(input.contract.credentials.map((field) => [field.name, values.get(field.name) ?? null]))
  for (const [name, value] of values) secrets[name] = value
  if (input.contract.authorization && deps.accessToken) {
    secrets[input.contract.authorization.accessToken] = await deps.accessToken({
      connectionId: input.connection.id, ...(input.requestId === undefined ? {} : { requestId: input.requestId }),
    })
  }
  return secrets
}

/**
 * `details.connectUrl` is the connection's page on `{auth_url}`, where the people who manage it
 * reconnect, for every slot (a `calling_user` slot's connect-and-bind page would only bind
 * the same connection again), as the refresh's own rejection names it (decisions.md, "OAuth
 * connections").
 */
function reconnectRequired(deps: Pick<BrokerDeps, 'urls'>, slot: string, connection: Connection): ServiceError {
  return new ServiceError('INTEGRATION_RECONNECT_REQUIRED',
    'the connection was rejected by the external system; someone who manages it must replace its credentials',
    { details: { slot, connectionId: connection.id, connectUrl: connectionPageUrl(deps.urls, connection.id) } })
}

/**
 * The provider rejected the credentials the call ran with (spec 3.2): the connection is marked
 * Reconnect required and the call fails so. When someone replaced the credentials while the
 * call ran, the rejection was of the old ones: nothing is marked, and the call fails as
 * retryable, since the same call now runs with the new credentials.
 */
async function rejectedCredentials(
  deps: Pick<BrokerDeps, 'db' | 'clock' | 'urls'>, input: { slot: string; connection: Connection; reason: string },
): Promise<never> {
  const { slot, connection } = input
  if (await markReconnectRequired(deps.db, { connection, reason: input.reason, at: deps.clock.now() })) throw reconnectRequired(deps, slot, connection)
  const now = await findConnection(deps.db, connection.id)
  if (now === null) throw new ServiceError('INTEGRATION_NOT_BOUND', `the slot "${slot}" is not bound to a connection`, { details: { slot } })
  if (now.status === 'reconnect_required') throw reconnectRequired(deps, slot, connection)
  throw new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', 'the connection\'s credentials were replaced while the call ran; try again',
    { details: { slot } })
}

async function outcome(
  deps: BrokerDeps, input: { result: ProviderResult; slot: string; connection: Connection },
): Promise<unknown> {
  const { result, slot } = input
  if (result.ok) {
    const text = JSON.stringify(result.value ?? null)
    if (Buffer.byteLength(text) > MAX_OPERATION_RESULT_BYTES) {
      throw new ServiceError('INTEGRATION_RESULT_TOO_LARGE', `the provider's result is larger than ${MAX_OPERATION_RESULT_BYTES} bytes`,
        { details: { slot, maxBytes: MAX_OPERATION_RESULT_BYTES } })
    }
    return result.value ?? null
  }
  if (result.kind === 'timeout') {
    throw new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', `the provider did not answer within ${OPERATION_TIMEOUT_MS / 1000} seconds`,
      { details: { slot } })
  }
  if (result.kind === 'failed') {
    throw new ServiceError('INTEGRATION_PROVIDER_FAILED', 'the provider failed', { details: { slot } })
  }
  const error = result.error
  if (error.status === 401) {
    await rejectedCredentials(deps, { slot, connection: input.connection, reason: 'the provider answered unauthorized' })
  }
  if (error.status === 503) {
    throw new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', 'the provider is unavailable; try again later', { details: { slot, code: error.code } })
  }
  if (error.status >= 400 && error.status < 500) {
    // Typed 4xx errors reach the consumer unchanged (spec 7.1); the code is the provider's own.
    throw new ServiceError(error.code as ErrorCode, error.message, {
      status: error.status, ...(error.details === undefined ? {} : { details: error.details }),
    })
  }
  throw new ServiceError('INTEGRATION_PROVIDER_FAILED', 'the provider failed', { details: { slot } })
}
