/**
 * Development mode for integrations (spec 4.5, 6.1 "Development", 7.2, 9). Development
 * namespaces never reach production events and never call a real system unless someone
 * chose to:
 * - A consumer's development namespace answers `ctx.integrations.use(slot).call(...)` per
 *   integration in one of two modes: `fake` (the default) returns the operation's declared
 *   `fake` after the same slot, operation and capability checks as production; `live` calls
 *   through the app's real bindings exactly as production does.
 * - A provider's development namespace runs its operation, sync and webhook Functions (when
 *   invoked there) with a TEST CONNECTION its developer chose: its credentials in the
 *   invocation's secrets overlay and `ctx.integration` set. Without one they fail
 *   INTEGRATION_TEST_CONNECTION_REQUIRED. Choosing one needs Edit on the provider app and
 *   the right to use the connection (a personal connection's owner; for an organisation
 *   connection, the integration's Use audience), checked again at every invocation.
 * - `injectDevEvent` (inject.ts) delivers a made-up event to a consumer's development
 *   namespace; emit in a provider's development session validates without delivering
 *   (integrations/events).
 */
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { ServiceError } from '../../lib/errors.ts'
import type { App } from '../../apps/apps.ts'
import { findNamespace, type Namespace } from '../../namespaces/namespaces.ts'
import { activeReleaseOf } from '../../namespaces/dev-names.ts'
import { mayUseIntegration, type User } from '../../identity/index.ts'
import type { IntegrationContract, Manifest } from '../../manifest/index.ts'
import { INTEGRATION_NAME } from '../../manifest/names.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { connectionPageUrl, findConnection, seesConnection, type Connection, type ConnectionKeyring } from '../connections/index.ts'
import { selectCredentials } from '../connections/queries.ts'
import { selectReleaseManifest } from '../bindings/queries.ts'
import type { IntegrationContext } from '../provider-invocation.ts'
import { invocationSecrets, type AccessTokenSource } from '../broker.ts'
import { DEFAULT_DEV_MODE, type DevMode } from './mode.ts'
import { selectDevSetting, selectDevSettings, upsertDevMode, upsertDevTestConnection, type DevSettingRow } from './queries.ts'

export interface DevIntegrationSetting {
  readonly integration: string
  readonly mode: DevMode
  readonly testConnectionId: string | null
  readonly updatedAt: string
}

export interface DevModeDeps {
  readonly db: Db
  readonly clock: Clock
}

function toSetting(row: DevSettingRow): DevIntegrationSetting {
  return {
    integration: row.integration_name,
    mode: row.mode ?? DEFAULT_DEV_MODE,
    testConnectionId: row.test_connection_id,
    updatedAt: new Date(row.updated_at).toISOString(),
  }
}

async function devNamespace(db: Db, app: App, devName: string): Promise<{ namespace: Namespace; manifest: Manifest }> {
  const namespace = await findNamespace(db, app.id, 'development', devName)
  const releaseId = namespace ? await activeReleaseOf(db, app.id, devName) : null
  const manifest = releaseId === null ? null : await selectReleaseManifest(db, releaseId)
  if (!namespace || !manifest) {
    throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} has no release; deploy to it with: service deploy <dir> --dev ${devName}`)
  }
  return { namespace, manifest }
}

function checkIntegrationName(value: string): void {
  if (value.length > INTEGRATION_NAME.maxLength || !INTEGRATION_NAME.pattern.test(value)) {
    throw new ServiceError('VALIDATION_FAILED', INTEGRATION_NAME.format, { details: { field: 'integration' } })
  }
}

/** The settings of every integration a development namespace has settings for. */
export async function listDevSettings(db: Db, input: { app: App; devName: string }): Promise<DevIntegrationSetting[]> {
  const { namespace } = await devNamespace(db, input.app, input.devName)
  return (await selectDevSettings(db, namespace.id)).map(toSetting)
}

/** Sets how the namespace answers calls to `integration` (spec 4.5 `set_dev_integration_mode`). */
export async function setDevMode(
  deps: DevModeDeps, input: { actor: User; app: App; devName: string; integration: string; mode: unknown },
): Promise<DevIntegrationSetting> {
  checkIntegrationName(input.integration)
  if (input.mode !== 'live' && input.mode !== 'fake') {
    throw new ServiceError('VALIDATION_FAILED', 'mode is "live" or "fake"', { details: { field: 'mode' } })
  }
  const { namespace, manifest } = await devNamespace(deps.db, input.app, input.devName)
  if (!Object.values(manifest.integrations).some((slot) => slot.integration === input.integration)) {
    throw new ServiceError('INTEGRATION_NOT_FOUND',
      `no slot of the development release of ${input.app.slug} (${input.devName}) uses the integration "${input.integration}"`,
      { details: { integration: input.integration } })
  }
  const mode = input.mode
  const row = await deps.db.transaction((tx) =>
    upsertDevMode(tx, { namespaceId: namespace.id, integration: input.integration, mode, by: input.actor.id, at: deps.clock.now() }))
  return toSetting(row)
}

/** Refuses `actor` the use of `connection` as a test connection of the provider app `app`'s `integration`. */
async function checkTestConnection(db: Db, input: { actor: User; app: App; integration: string; connection: Connection | null }): Promise<Connection> {
  const { actor, connection } = input
  if (!connection || !seesConnection(actor, connection)) {
    throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection you can see with this id')
  }
  if (connection.providerAppId !== input.app.id || connection.integration !== input.integration) {
    throw new ServiceError('VALIDATION_FAILED', `the connection is not a connection to ${input.app.slug}'s integration "${input.integration}"`,
      { details: { field: 'connectionId' } })
  }
  if (connection.kind === 'personal' && connection.ownerId !== actor.id) {
    throw new ServiceError('FORBIDDEN', 'only its owner uses a personal connection as a test connection')
  }
  if (!(await mayUseIntegration(db, { user: actor, providerApp: { id: input.app.id } }))) {
    throw new ServiceError('FORBIDDEN', 'you are not in the Use audience of this integration; ask its administrators')
  }
  return connection
}

function providedIntegration(app: App, devName: string, manifest: Manifest, integration: string): IntegrationContract {
  const contract = manifest.provides?.integration
  if (!contract || contract.name !== integration) {
    throw new ServiceError('INTEGRATION_NOT_FOUND',
      `the development release of ${app.slug} (${devName}) does not provide the integration "${integration}"`, { details: { integration } })
  }
  return contract
}

/**
 * Chooses (or with `connectionId: null` clears) the test connection the provider app's
 * development namespace runs its integration Functions with (spec 4.5
 * `set_dev_integration_test_connection`). The caller holds Edit on `app` (the routes check).
 */
export async function setDevTestConnection(
  deps: DevModeDeps, input: { actor: User; app: App; devName: string; integration: string; connectionId: string | null },
): Promise<DevIntegrationSetting> {
  checkIntegrationName(input.integration)
  const { namespace, manifest } = await devNamespace(deps.db, input.app, input.devName)
  providedIntegration(input.app, input.devName, manifest, input.integration)
  if (input.connectionId !== null) {
    await checkTestConnection(deps.db, { ...input, connection: await findConnection(deps.db, input.connectionId) })
  }
  const row = await deps.db.transaction((tx) => upsertDevTestConnection(tx, {
    namespaceId: namespace.id, integration: input.integration, connectionId: input.connectionId, by: input.actor.id, at: deps.clock.now(),
  }))
  return toSetting(row)
}

/** Which integration role a provider Function plays in its release's contract, if any. */
export function integrationRoleOf(contract: IntegrationContract, functionName: string): Omit<IntegrationContext, 'connectionId'> | null {
  const operation = contract.operations.find((op) => op.function === functionName)
  if (operation) return { trigger: 'operation', operation: operation.name }
  if (contract.sync?.function === functionName) return { trigger: 'sync' }
  if (contract.webhook?.function === functionName) return { trigger: 'webhook' }
  return null
}

export interface DevProviderRunDeps {
  readonly db: Db
  /** For `connectUrl` (the test connection's page on `{auth_url}`). */
  readonly urls: Pick<HostUrls, 'auth'>
  readonly keyring: ConnectionKeyring
  readonly accessToken?: AccessTokenSource
}

/**
 * What a development invocation of a provider's Function runs with: null for a Function
 * that is not an operation, sync or webhook Function of the release's contract; otherwise
 * `ctx.integration` for the namespace's test connection and that connection's credentials
 * (and OAuth access token). INTEGRATION_TEST_CONNECTION_REQUIRED without a test connection;
 * FORBIDDEN when `actor` may not use it (now); INTEGRATION_RECONNECT_REQUIRED when it was
 * rejected.
 */
export async function devProviderRun(
  deps: DevProviderRunDeps, input: { actor: User; app: App; devName: string; releaseId: string; functionName: string; requestId?: string },
): Promise<{ context: IntegrationContext; secrets: Record<string, string | null> } | null> {
  const contract = (await selectReleaseManifest(deps.db, input.releaseId))?.provides?.integration
  const role = contract ? integrationRoleOf(contract, input.functionName) : null
  if (!contract || !role) return null
  const setting = await selectDevSetting(deps.db, { appId: input.app.id, devName: input.devName, integration: contract.name })
  const connectionId = setting?.test_connection_id ?? null
  if (connectionId === null) {
    throw new ServiceError('INTEGRATION_TEST_CONNECTION_REQUIRED',
      `${input.functionName} is the integration's ${role.trigger} Function and needs a test connection in development: choose one with `
      + `PUT /v1/apps/${input.app.slug}/dev/${input.devName}/integrations/${contract.name}/test-connection`,
      { details: { integration: contract.name, function: input.functionName, trigger: role.trigger } })
  }
  const connection = await checkTestConnection(deps.db, {
    actor: input.actor, app: input.app, integration: contract.name, connection: await findConnection(deps.db, connectionId),
  })
  if (connection.status === 'reconnect_required') {
    throw new ServiceError('INTEGRATION_RECONNECT_REQUIRED',
      'the test connection was rejected by the external system; someone who manages it must replace its credentials',
      { details: { connectionId, connectUrl: connectionPageUrl(deps.urls, connectionId) } })
  }
  const secrets = await invocationSecrets(deps, {
    connection, credentials: await selectCredentials(deps.db, connectionId), contract, ...(input.requestId === undefined ? {} : { requestId: input.requestId }),
  })
  return { context: { connectionId, ...role }, secrets }
}
