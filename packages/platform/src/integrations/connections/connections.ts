/**
 * Connections (spec 2.8, 3.2): a person's (personal) or an organisation's account at the
 * external system behind one published integration, identified by the provider app and the
 * integration name its active release publishes. Credential values are entered by a person
 * on a platform page, encrypted at rest under a key of the connection keyring (its id stored
 * beside each ciphertext, the connection id and field name bound as associated data) and
 * write-only: nothing here returns a value except `readConnectionCredentials`, which only the
 * broker calls. Each connection has a secret webhook URL, stored hashed (to find the
 * connection by) and encrypted (so its managers can see it again on its page).
 */
import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import { newSecret, sha256Hex } from '../../lib/crypto.ts'
import { decrypt, encrypt } from '../../lib/encryption.ts'
import { ServiceError, notImplemented } from '../../lib/errors.ts'
import { deriveKey } from '../../lib/master-key.ts'
import { isUuid } from '../../lib/ids.ts'
import { mayUseIntegration } from '../../identity/index.ts'
import {
  deleteConnection, deleteCredentials, insertConnection, insertCredential, selectConnection, selectConnectionIdByWebhookHash,
  selectCredentials, selectCredentialsNotUnder, selectPublished, selectVisibleConnections, selectWebhookToken,
  selectWebhookTokensNotUnder, updateActivated, updateCredentialSealed, updateReconnectRequired, updateWebhookTokenSealed,
  type ConnectionRow, type CredentialRow,
} from './queries.ts'

/** Longest credential value, in UTF-8 bytes. */
export const MAX_CREDENTIAL_VALUE_BYTES = 16 * 1024
/** Longest label, in characters. */
export const MAX_LABEL_LENGTH = 100
/** Prefix of a connection's webhook token. */
export const WEBHOOK_TOKEN_PREFIX = 'svc_hook_'

/**
 * The keys connection values are sealed under: `current` seals every new value; `keys` opens
 * values sealed under any id still stored (rotation: add a key, make it current, then
 * `resealConnections`, then drop the old one).
 */
export interface ConnectionKeyring {
  readonly current: string
  readonly keys: ReadonlyMap<string, Uint8Array>
}

/**
 * The keyring the platform starts with: one key derived from the master key.
 *
 * @example
 * const keyring = connectionKeyring(masterKey)
 */
export function connectionKeyring(masterKey: Uint8Array): ConnectionKeyring {
  return { current: 'k1', keys: new Map([['k1', deriveKey(masterKey, 'connection-credentials:k1')]]) }
}

/** A credential field as the provider's active contract declares it. */
export interface CredentialField {
  readonly name: string
  readonly label: string
  readonly secret: boolean
  readonly optional: boolean
}

/** A published integration a person may connect to. */
export interface PublishedIntegration {
  readonly appId: string
  readonly appSlug: string
  readonly organisationId: string
  readonly name: string
  readonly title: string
  readonly description: string
  readonly credentials: readonly CredentialField[]
  readonly oauth: boolean
}

export type ConnectionKind = 'personal' | 'organisation'
export type ConnectionStatus = 'active' | 'reconnect_required'

/** A connection's metadata: never a value. */
export interface Connection {
  readonly id: string
  readonly organisationId: string
  readonly providerAppId: string
  readonly providerAppSlug: string
  readonly integration: string
  readonly kind: ConnectionKind
  readonly ownerId: string | null
  readonly label: string
  readonly status: ConnectionStatus
  readonly statusReason: string | null
  readonly statusChangedAt: Date
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** The person acting (identity's User, the fields this feature reads). */
export interface Actor {
  readonly id: string
  readonly organisationId: string | null
  readonly organisationRole: 'member' | 'admin'
}

/** A connection from its row (selectConnection, or the broker's statement). */
export function toConnection(row: ConnectionRow): Connection {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    providerAppId: row.provider_app_id,
    providerAppSlug: row.provider_app_slug,
    integration: row.integration_name,
    kind: row.kind,
    ownerId: row.owner_id,
    label: row.label,
    status: row.status,
    statusReason: row.status_reason,
    statusChangedAt: row.status_changed_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

function credentialPurpose(connectionId: string, name: string): string {
  return `connection-credential:${connectionId}:${name}`
}

function webhookPurpose(connectionId: string): string {
  return `connection-webhook:${connectionId}`
}

function keyFor(keyring: ConnectionKeyring, id: string): Uint8Array {
  const key = keyring.keys.get(id)
  if (!key) throw new Error(`connection key ${id} is not in the keyring`)
  return key
}

function currentKey(keyring: ConnectionKeyring): { id: string; key: Uint8Array } {
  return { id: keyring.current, key: keyFor(keyring, keyring.current) }
}

/** Who manages a connection: its owner (personal), its organisation's administrators (organisation). */
export function managesConnection(actor: Actor, connection: Connection): boolean {
  if (connection.kind === 'personal') return connection.ownerId === actor.id
  return actor.organisationRole === 'admin' && actor.organisationId === connection.organisationId
}

/** Who sees a connection's metadata: its owner, or anyone of its organisation for an organisation connection. */
export function seesConnection(actor: Actor, connection: Connection): boolean {
  if (connection.kind === 'personal') return connection.ownerId === actor.id
  return actor.organisationId === connection.organisationId
}

function readContract(raw: unknown): Omit<PublishedIntegration, 'appId' | 'appSlug' | 'organisationId'> | null {
  if (raw === null || typeof raw !== 'object') return null
  const block = raw as Record<string, unknown>
  if (typeof block.name !== 'string') return null
  const credentials = Array.isArray(block.credentials) ? block.credentials as Record<string, unknown>[] : []
  return {
    name: block.name,
    title: typeof block.title === 'string' ? block.title : block.name,
    description: typeof block.description === 'string' ? block.description : '',
    credentials: credentials.map((field) => ({
      name: String(field.name),
      label: typeof field.label === 'string' ? field.label : String(field.name),
      secret: field.secret !== false,
      optional: field.optional === true,
    })),
    oauth: block.authorization !== undefined && block.authorization !== null,
  }
}

/**
 * The integration `name` that the provider app (id or slug) publishes through its active
 * release, for a person who may connect to it, or INTEGRATION_NOT_FOUND: no such app, no
 * active release publishing that name, or an app of another organisation (which reads like
 * one that does not exist: sharing never leaves the provider's organisation).
 */
export async function findPublishedIntegration(
  db: Queryable,
  input: { app: string; integration: string; actor: Actor },
): Promise<PublishedIntegration> {
  const notFound = new ServiceError('INTEGRATION_NOT_FOUND',
    `no app of your organisation publishes an integration "${input.integration}" as "${input.app}"`,
    { details: { app: input.app, integration: input.integration } })
  if (input.app.length === 0 || input.app.length > 100) throw notFound
  const row = await selectPublished(db, isUuid(input.app) ? { id: input.app, slug: null } : { id: null, slug: input.app })
  if (!row || row.organisation_id !== input.actor.organisationId || row.app_status === 'archived') throw notFound
  const contract = readContract(row.integration)
  if (!contract || contract.name !== input.integration) throw notFound
  return { appId: row.app_id, appSlug: row.app_slug, organisationId: row.organisation_id, ...contract }
}

/**
 * The kinds of connection the actor may make to the integration: personal when they may use
 * it (the provider's Use audience), organisation when they are an organisation administrator
 * of its organisation (spec 5.6: organisation connections are theirs to create).
 */
export async function connectableKinds(db: Queryable, input: { actor: Actor; integration: PublishedIntegration }): Promise<ConnectionKind[]> {
  const { actor, integration } = input
  if (actor.organisationId !== integration.organisationId) return []
  const kinds: ConnectionKind[] = []
  if (await mayUseIntegration(db, { user: actor, providerApp: { id: integration.appId } })) kinds.push('personal')
  if (actor.organisationRole === 'admin') kinds.push('organisation')
  return kinds
}

/** A label from a form, or VALIDATION_FAILED. */
export function checkLabel(label: string): string {
  const trimmed = label.trim()
  if (trimmed.length === 0 || trimmed.length > MAX_LABEL_LENGTH || /[\u0000-\u001f\u007f]/.test(trimmed)) {
    throw new ServiceError('VALIDATION_FAILED', `give the connection a name of 1 to ${MAX_LABEL_LENGTH} characters`,
      { details: { field: 'label' } })
  }
  return trimmed
}

/**
 * The values entered for the contract's fields: every required field present, optional ones
 * dropped when empty, none longer than MAX_CREDENTIAL_VALUE_BYTES. Errors name the field,
 * never its value.
 */
export function checkCredentialValues(fields: readonly CredentialField[], entered: Readonly<Record<string, string>>): Map<string, string> {
  const values = new Map<string, string>()
  for (const field of fields) {
    const value = entered[field.name] ?? ''
    if (value === '') {
      if (field.optional) continue
      throw new ServiceError('VALIDATION_FAILED', `"${field.label}" is required`, { details: { field: field.name } })
    }
    if (Buffer.byteLength(value) > MAX_CREDENTIAL_VALUE_BYTES) {
      throw new ServiceError('VALIDATION_FAILED', `"${field.label}" may be at most ${MAX_CREDENTIAL_VALUE_BYTES} bytes`,
        { details: { field: field.name } })
    }
    values.set(field.name, value)
  }
  return values
}

async function sealCredentials(
  tx: Queryable,
  input: { keyring: ConnectionKeyring; connectionId: string; fields: readonly CredentialField[]; values: Map<string, string> },
): Promise<void> {
  const { id: keyId, key } = currentKey(input.keyring)
  for (const field of input.fields) {
    const value = input.values.get(field.name)
    if (value === undefined) continue
    await insertCredential(tx, {
      connectionId: input.connectionId, name: field.name, secret: field.secret, keyId,
      valueEncrypted: encrypt(key, credentialPurpose(input.connectionId, field.name), value),
    })
  }
}

export interface ConnectionDeps {
  db: Db
  clock: Clock
  keyring: ConnectionKeyring
}

/**
 * Creates a connection with the values a person entered (page only). A personal connection
 * belongs to the actor; an organisation connection needs an organisation administrator.
 * Returns the connection and its webhook token (the URL is built by the caller).
 *
 * @example
 * const { connection } = await createConnection(deps, { actor: user, integration, kind: 'personal', label: 'Me', values })
 */
export async function createConnection(
  deps: ConnectionDeps,
  input: {
    actor: Actor; integration: PublishedIntegration; kind: ConnectionKind; label: string; values: Readonly<Record<string, string>>
    /** OAuth (integrations/oauth): the id chosen when the flow started, and the write of its tokens in the same transaction. */
    oauth?: { id: string; store: (tx: Queryable, connectionId: string) => Promise<void> }
  },
): Promise<{ connection: Connection; webhookToken: string }> {
  const { actor, integration } = input
  if (integration.oauth && !input.oauth) throw notImplemented('connecting an integration that declares OAuth 2.0 without signing in')
  if (actor.organisationId !== integration.organisationId) {
    throw new ServiceError('INTEGRATION_NOT_FOUND', 'this integration is shared only inside its organisation')
  }
  const kinds = await connectableKinds(deps.db, { actor, integration })
  if (input.kind === 'organisation' && !kinds.includes('organisation')) {
    throw new ServiceError('FORBIDDEN', 'only organisation administrators create organisation connections')
  }
  if (input.kind === 'personal' && !kinds.includes('personal')) {
    throw new ServiceError('FORBIDDEN', 'you are not in the Use audience of this integration; ask its administrators')
  }
  const label = checkLabel(input.label)
  const values = checkCredentialValues(integration.credentials, input.values)
  const id = input.oauth?.id ?? randomUUID()
  const webhookToken = newSecret(WEBHOOK_TOKEN_PREFIX)
  const { id: keyId, key } = currentKey(deps.keyring)
  const at = deps.clock.now()
  await deps.db.transaction(async (tx) => {
    await insertConnection(tx, {
      id, organisationId: integration.organisationId, providerAppId: integration.appId, integrationName: integration.name,
      kind: input.kind, ownerId: input.kind === 'personal' ? actor.id : null, createdBy: actor.id, label,
      webhookTokenHash: sha256Hex(webhookToken), webhookTokenEncrypted: encrypt(key, webhookPurpose(id), webhookToken),
      webhookKeyId: keyId, at,
    })
    await sealCredentials(tx, { keyring: deps.keyring, connectionId: id, fields: integration.credentials, values })
    await input.oauth?.store(tx, id)
  })
  const connection = await findConnection(deps.db, id)
  return { connection: connection!, webhookToken }
}

/** One connection's metadata, or null. */
export async function findConnection(db: Queryable, id: string): Promise<Connection | null> {
  if (!isUuid(id)) return null
  const row = await selectConnection(db, id)
  return row ? toConnection(row) : null
}

/**
 * A connection the actor manages, or CONNECTION_NOT_FOUND (not visible to them) /
 * FORBIDDEN (visible, managed by others).
 */
function checkManager(actor: Actor, connection: Connection | null): Connection {
  if (!connection || !seesConnection(actor, connection)) {
    throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection you can see with this id')
  }
  if (!managesConnection(actor, connection)) {
    throw new ServiceError('FORBIDDEN', 'only organisation administrators replace or remove an organisation connection')
  }
  return connection
}

/** A connection the actor manages (for its page), or CONNECTION_NOT_FOUND / FORBIDDEN. */
export async function managedConnection(db: Queryable, input: { actor: Actor; id: string }): Promise<Connection> {
  return checkManager(input.actor, await findConnection(db, input.id))
}

/**
 * Replaces every credential value of a connection the actor manages with the values entered
 * now (fields left empty are required, or dropped when optional) and makes it active again.
 */
export async function replaceCredentials(
  deps: ConnectionDeps,
  input: {
    actor: Actor; id: string; integration: PublishedIntegration; values: Readonly<Record<string, string>>
    /** OAuth (integrations/oauth): writes the new tokens in the same transaction. */
    oauth?: { store: (tx: Queryable, connectionId: string) => Promise<void> }
  },
): Promise<Connection> {
  if (input.integration.oauth && !input.oauth) throw notImplemented('reconnecting an integration that declares OAuth 2.0 without signing in')
  const values = checkCredentialValues(input.integration.credentials, input.values)
  const at = deps.clock.now()
  await deps.db.transaction(async (tx) => {
    const row = isUuid(input.id) ? await selectConnection(tx, input.id, { forUpdate: true }) : null
    const connection = checkManager(input.actor, row ? toConnection(row) : null)
    if (connection.providerAppId !== input.integration.appId || connection.integration !== input.integration.name) {
      throw new ServiceError('CONFLICT', 'the connection belongs to another integration')
    }
    await deleteCredentials(tx, connection.id)
    await sealCredentials(tx, { keyring: deps.keyring, connectionId: connection.id, fields: input.integration.credentials, values })
    await input.oauth?.store(tx, connection.id)
    await updateActivated(tx, { id: connection.id, at })
  })
  return (await findConnection(deps.db, input.id))!
}

/** Removes a connection the actor manages (its credentials with it). */
export async function removeConnection(db: Db, input: { actor: Actor; id: string }): Promise<void> {
  await db.transaction(async (tx) => {
    const row = isUuid(input.id) ? await selectConnection(tx, input.id, { forUpdate: true }) : null
    const connection = checkManager(input.actor, row ? toConnection(row) : null)
    await deleteConnection(tx, connection.id)
  })
}

/** A page of the connections the actor sees, newest first. */
export async function listConnections(
  db: Queryable,
  input: { actor: Actor; limit: number; after: { createdAt: Date; id: string } | null },
): Promise<Connection[]> {
  const rows = await selectVisibleConnections(db, {
    userId: input.actor.id, organisationId: input.actor.organisationId, limit: input.limit, after: input.after,
  })
  return rows.map(toConnection)
}

/**
 * The values of the non-secret fields (`secret: false` in the contract now and when they
 * were entered), which its managers may see again; secret values never leave.
 */
export async function visibleCredentialValues(
  db: Queryable,
  input: { keyring: ConnectionKeyring; connectionId: string; fields: readonly CredentialField[] },
): Promise<Map<string, string>> {
  const shown = new Set(input.fields.filter((field) => !field.secret).map((field) => field.name))
  const values = new Map<string, string>()
  for (const row of await selectCredentials(db, input.connectionId)) {
    if (row.secret || !shown.has(row.name)) continue
    values.set(row.name, decrypt(keyFor(input.keyring, row.key_id), credentialPurpose(input.connectionId, row.name), row.value_encrypted))
  }
  return values
}

/** The connection's webhook token, for its managers' page. */
export async function readWebhookToken(db: Queryable, input: { keyring: ConnectionKeyring; connectionId: string }): Promise<string> {
  const row = await selectWebhookToken(db, input.connectionId)
  if (!row) throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection with this id')
  return decrypt(keyFor(input.keyring, row.webhook_key_id), webhookPurpose(input.connectionId), row.webhook_token_encrypted)
}

/** The connection a webhook token belongs to, or null (for the webhook receiver of the next issue). */
export async function findConnectionByWebhookToken(db: Queryable, token: string): Promise<Connection | null> {
  if (!token.startsWith(WEBHOOK_TOKEN_PREFIX) || token.length > 100) return null
  const id = await selectConnectionIdByWebhookHash(db, sha256Hex(token))
  return id ? findConnection(db, id) : null
}

/**
 * Marks a connection Reconnect required (spec 3.2: the provider rejected its credentials);
 * true when it was active. For the broker; the reason is for its managers, never a value.
 * `connection` is the connection as read when the rejected credentials were: a rejection of
 * credentials that someone replaced meanwhile (its `updatedAt` moved) marks nothing, so a
 * call still running on the old ones cannot undo a reconnect.
 *
 * @example
 * await markReconnectRequired(db, { connection, reason: 'provider answered unauthorized', at: clock.now() })
 */
export async function markReconnectRequired(
  db: Queryable, input: { connection: Pick<Connection, 'id' | 'updatedAt'>; reason: string; at: Date },
): Promise<boolean> {
  const { id, updatedAt } = input.connection
  if (!isUuid(id)) return false
  return updateReconnectRequired(db, { id, reason: input.reason.slice(0, 500), at: input.at, seenUpdatedAt: updatedAt })
}

export interface ConnectionCredentials {
  readonly connection: Connection
  /** Field name to value. */
  readonly values: ReadonlyMap<string, string>
}

/**
 * Decrypts a connection's credential values, for the broker only (never over HTTP). Fails
 * CONNECTION_NOT_FOUND when the connection is gone.
 *
 * @example
 * const { connection, values } = await readConnectionCredentials(db, { keyring, connectionId })
 */
export async function readConnectionCredentials(
  db: Queryable,
  input: { keyring: ConnectionKeyring; connectionId: string },
): Promise<ConnectionCredentials> {
  const connection = await findConnection(db, input.connectionId)
  if (!connection) throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection with this id')
  return { connection, values: openCredentials({ keyring: input.keyring, connection, rows: await selectCredentials(db, connection.id) }) }
}

/** The connection's credential values, decrypted from rows already read (only the broker's read calls it). */
export function openCredentials(
  input: { keyring: ConnectionKeyring; connection: Connection; rows: readonly CredentialRow[] },
): Map<string, string> {
  const values = new Map<string, string>()
  for (const row of input.rows) {
    values.set(row.name, decrypt(keyFor(input.keyring, row.key_id), credentialPurpose(input.connection.id, row.name), row.value_encrypted))
  }
  return values
}

/**
 * Re-encrypts every credential and webhook token sealed under an older key with the
 * keyring's current key (key rotation), a batch per transaction; returns how many values
 * moved. Safe to run while the platform serves, and from several processes.
 */
export async function resealConnections(db: Db, keyring: ConnectionKeyring): Promise<number> {
  const { id: keyId, key } = currentKey(keyring)
  let moved = 0
  for (;;) {
    const batch = await db.transaction(async (tx) => {
      const credentials = await selectCredentialsNotUnder(tx, { keyId, limit: 100 })
      for (const row of credentials) {
        const purpose = credentialPurpose(row.connection_id, row.name)
        const value = decrypt(keyFor(keyring, row.key_id), purpose, row.value_encrypted)
        await updateCredentialSealed(tx, {
          connectionId: row.connection_id, name: row.name, valueEncrypted: encrypt(key, purpose, value), keyId, previousKeyId: row.key_id,
        })
      }
      const tokens = await selectWebhookTokensNotUnder(tx, { keyId, limit: 100 })
      for (const row of tokens) {
        const token = decrypt(keyFor(keyring, row.webhook_key_id), webhookPurpose(row.id), row.webhook_token_encrypted)
        await updateWebhookTokenSealed(tx, { id: row.id, sealed: encrypt(key, webhookPurpose(row.id), token), keyId, previousKeyId: row.webhook_key_id })
      }
      return credentials.length + tokens.length
    })
    moved += batch
    if (batch === 0) return moved
  }
}
