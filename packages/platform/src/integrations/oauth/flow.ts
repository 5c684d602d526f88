/**
 * Connecting with OAuth 2.0 (spec 2.6 `authorization`, 4.4, 5.6): the authorization-code flow
 * with PKCE. `startFlow` records the flow (state, verifier, the values entered before signing
 * in, the person, the connection it will make or reconnect, and the slot to bind a new one
 * into when it started on the connect-and-bind page) and returns where the browser goes; `finishFlow` takes the callback's `code` back, checks the flow is this browser's and
 * this person's, has the provider's `exchange` Function trade the code for tokens, and stores
 * them sealed with the connection in one transaction. The platform never calls a token
 * endpoint itself.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { safeEqual, sha256Hex } from '../../lib/crypto.ts'
import { decrypt, encrypt } from '../../lib/encryption.ts'
import { ServiceError } from '../../lib/errors.ts'
import {
  checkCredentialValues, checkLabel, connectableKinds, createConnection, findPublishedIntegration, managedConnection, replaceCredentials,
  type Actor, type Connection, type ConnectionKeyring, type ConnectionKind, type PublishedIntegration,
} from '../connections/index.ts'
import type { InvokeProvider, ProviderResult } from '../provider-invocation.ts'
import { activeAuthorization, authorizationRequestUrl, pkceChallenge, randomToken, type OAuthAuthorization } from './authorization.ts'
import { deleteExpiredFlows, deleteFlow, insertFlow } from './queries.ts'
import { keyOf, readTokenResult, storeTokens, type TokenResult } from './tokens.ts'

/** How long a person has to sign in at the provider. */
export const FLOW_LIFETIME_MS = 10 * 60 * 1000
/** How long the exchange and refresh Functions may run. */
export const OAUTH_FUNCTION_TIMEOUT_MS = 30_000
/** The callback path on `{base_url}` that providers' administrators register. */
export const CALLBACK_PATH = '/v1/custom-integrations/oauth/callback'

export interface OAuthDeps {
  db: Db
  clock: Clock
  keyring: ConnectionKeyring
  invokeProvider: InvokeProvider
  /** `{base_url}` (the redirect URI is built on it). */
  baseUrl: string
}

/** The redirect URI every provider registers: `{base_url}/v1/custom-integrations/oauth/callback`. */
export function callbackUrl(baseUrl: string): string {
  return `${baseUrl}${CALLBACK_PATH}`
}

function flowPurpose(stateHash: string): string {
  return `oauth-flow:${stateHash}`
}

/** A consumer app's `calling_user` slot a new connection is bound into when the flow ends (the connect-and-bind page). */
export interface FlowBinding {
  readonly appId: string
  readonly slot: string
}

/** What a finished flow made, and where to bind it. */
export interface FinishedFlow {
  readonly connection: Connection
  readonly bind: FlowBinding | null
}

/** The authorization of an integration that declares one, or INTEGRATION_NOT_FOUND. */
export async function requireAuthorization(db: Db, integration: PublishedIntegration): Promise<OAuthAuthorization> {
  const authorization = await activeAuthorization(db, { providerAppId: integration.appId, integration: integration.name })
  if (!authorization) throw new ServiceError('INTEGRATION_NOT_FOUND', 'this integration no longer declares OAuth 2.0; reload the page')
  return authorization
}

/**
 * Records an authorization request and returns the provider URL to send the browser to.
 * `browserSecret` is the value of the browser's flow cookie (its hash binds the flow).
 * A new connection needs a label and a kind the actor may make; a reconnect needs a
 * connection the actor manages. Credential values are checked now and kept sealed.
 *
 * @example
 * const url = await startFlow(deps, { actor, integration, kind: 'personal', label: 'Me', values: {}, browserSecret })
 */
export async function startFlow(
  deps: OAuthDeps,
  input: {
    actor: Actor; integration: PublishedIntegration; values: Readonly<Record<string, string>>; browserSecret: string
  } & ({ kind: ConnectionKind; label: string; reconnect?: undefined; bind?: FlowBinding } | { reconnect: string; kind?: undefined; label?: undefined; bind?: undefined }),
): Promise<string> {
  const { actor, integration } = input
  const authorization = await requireAuthorization(deps.db, integration)
  let kind: ConnectionKind
  let label: string
  let connectionId: string
  if (input.reconnect !== undefined) {
    const connection = await managedConnection(deps.db, { actor, id: input.reconnect })
    if (connection.providerAppId !== integration.appId || connection.integration !== integration.name) {
      throw new ServiceError('CONFLICT', 'the connection belongs to another integration')
    }
    ;({ kind, label, id: connectionId } = connection)
  } else {
    label = checkLabel(input.label)
    const kinds = await connectableKinds(deps.db, { actor, integration })
    if (!kinds.includes(input.kind)) {
      throw new ServiceError('FORBIDDEN', input.kind === 'organisation'
        ? 'only organisation administrators create organisation connections'
        : 'you are not in the Use audience of this integration; ask its administrators')
    }
    kind = input.kind
    connectionId = randomUUID()
  }
  const values = Object.fromEntries(checkCredentialValues(integration.credentials, input.values))
  const state = randomToken()
  const stateHash = sha256Hex(state)
  const codeVerifier = authorization.pkce ? randomToken() : null
  const at = deps.clock.now()
  const keyId = deps.keyring.current
  await deleteExpiredFlows(deps.db, at)
  await insertFlow(deps.db, {
    stateHash, browserHash: sha256Hex(input.browserSecret), userId: actor.id, providerAppId: integration.appId,
    integrationName: integration.name, connectionId, reconnect: input.reconnect !== undefined, kind, label,
    sealed: encrypt(keyOf(deps.keyring, keyId), flowPurpose(stateHash), JSON.stringify({ codeVerifier, values })),
    keyId, at, expiresAt: new Date(at.getTime() + FLOW_LIFETIME_MS), bind: input.bind ?? null,
  })
  return authorizationRequestUrl(authorization, {
    redirectUri: callbackUrl(deps.baseUrl), state, challenge: codeVerifier === null ? null : pkceChallenge(codeVerifier),
  })
}

/**
 * The error for a provider Function's failure: `errors.unavailable` and timeouts are
 * INTEGRATION_PROVIDER_UNAVAILABLE, anything else INTEGRATION_PROVIDER_FAILED. Never carries
 * what the Function said beyond its typed code.
 */
export function providerFailure(result: Exclude<ProviderResult, { ok: true }>, what: string): ServiceError {
  if (result.kind === 'timeout') return new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', `${what} timed out; try again`)
  if (result.kind === 'typed' && result.error.status === 503) {
    return new ServiceError('INTEGRATION_PROVIDER_UNAVAILABLE', `${what} is unavailable; try again`, { details: { providerCode: result.error.code } })
  }
  return new ServiceError('INTEGRATION_PROVIDER_FAILED', `${what} failed`,
    result.kind === 'typed' ? { details: { providerCode: result.error.code } } : {})
}

/**
 * Completes a flow from its callback: the flow is taken (one-time) by its state, and must be
 * unexpired, started by this browser (`browserSecret`, compared in constant time) and by this
 * person, else OAUTH_STATE_INVALID. A provider's `error` (such as `access_denied`) ends it
 * with FORBIDDEN; a failed exchange with INTEGRATION_PROVIDER_FAILED or _UNAVAILABLE and no
 * connection change. Returns the connection, active with its new tokens, and the slot to
 * bind it into when the flow started on the connect-and-bind page.
 */
export async function finishFlow(
  deps: OAuthDeps,
  input: { actor: Actor; state: string; browserSecret: string | undefined; code: string | undefined; error: string | undefined; requestId?: string },
): Promise<FinishedFlow> {
  const invalid = new ServiceError('OAUTH_STATE_INVALID',
    'this sign-in at the provider was not started here, was already used or has expired; start connecting again')
  if (input.state.length === 0 || input.state.length > 100) throw invalid
  const stateHash = sha256Hex(input.state)
  const flow = await deleteFlow(deps.db, stateHash)
  if (!flow || flow.expires_at.getTime() <= deps.clock.now().getTime()) throw invalid
  if (!input.browserSecret || !safeEqual(flow.browser_hash, sha256Hex(input.browserSecret)) || flow.user_id !== input.actor.id) throw invalid
  if (input.error !== undefined) {
    throw new ServiceError('FORBIDDEN', input.error === 'access_denied'
      ? 'you did not allow access at the provider, so nothing was connected'
      : 'the provider did not grant access, so nothing was connected', { details: { providerError: input.error.slice(0, 100) } })
  }
  if (!input.code || input.code.length > 4096) throw new ServiceError('OAUTH_STATE_INVALID', 'the provider sent no authorization code; start connecting again')
  const integration = await findPublishedIntegration(deps.db, { app: flow.provider_app_id, integration: flow.integration_name, actor: input.actor })
  const authorization = await requireAuthorization(deps.db, integration)
  const opened = JSON.parse(decrypt(keyOf(deps.keyring, flow.key_id), flowPurpose(stateHash), flow.sealed)) as {
    codeVerifier: string | null; values: Record<string, string>
  }
  const tokens = await exchangeCode(deps, {
    authorization, providerAppId: integration.appId, connectionId: flow.connection_id, code: input.code,
    codeVerifier: opened.codeVerifier, values: opened.values, ...(input.requestId ? { requestId: input.requestId } : {}),
  })
  const store = (tx: Parameters<typeof storeTokens>[0], connectionId: string) =>
    storeTokens(tx, { keyring: deps.keyring, clock: deps.clock, connectionId, tokens })
  if (flow.reconnect) {
    return { connection: await replaceCredentials(deps, { actor: input.actor, id: flow.connection_id, integration, values: opened.values, oauth: { store } }), bind: null }
  }
  const { connection } = await createConnection(deps, {
    actor: input.actor, integration, kind: flow.kind, label: flow.label, values: opened.values, oauth: { id: flow.connection_id, store },
  })
  const bind = flow.bind_app_id !== null && flow.bind_slot !== null ? { appId: flow.bind_app_id, slot: flow.bind_slot } : null
  return { connection, bind }
}

async function exchangeCode(
  deps: OAuthDeps,
  input: {
    authorization: OAuthAuthorization; providerAppId: string; connectionId: string; code: string; codeVerifier: string | null
    values: Record<string, string>; requestId?: string
  },
): Promise<TokenResult> {
  const result = await deps.invokeProvider({
    providerAppId: input.providerAppId,
    functionName: input.authorization.exchange,
    input: {
      code: input.code, redirectUri: callbackUrl(deps.baseUrl), ...(input.codeVerifier === null ? {} : { codeVerifier: input.codeVerifier }),
    },
    integration: { connectionId: input.connectionId, trigger: 'oauth' },
    // The connection's credential values entered beside `authorization`; never an access token.
    secrets: input.values,
    redact: input.codeVerifier === null ? [input.code] : [input.code, input.codeVerifier],
    mayEmit: false,
    timeoutMs: OAUTH_FUNCTION_TIMEOUT_MS,
    ...(input.requestId ? { requestId: input.requestId } : {}),
  })
  if (!result.ok) throw providerFailure(result, 'the provider\'s exchange Function')
  const tokens = readTokenResult(result.value)
  if (!tokens) throw new ServiceError('INTEGRATION_PROVIDER_FAILED', 'the provider\'s exchange Function returned no access token')
  return tokens
}
