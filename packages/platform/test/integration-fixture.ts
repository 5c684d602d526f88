/**
 * Pieces the integration tests share: creating and deploying an app through the owner API,
 * the "orders" contract a provider publishes (its `provides:` block, with what each test
 * varies as options), a consumer manifest with integration slots, a connection made
 * directly, and the body of the `stubborn` SQL function the statement-timeout tests use to
 * prove a cancel that is caught still ends. Only what several tests repeated word for word
 * lives here; each test keeps its own Functions, code and the contract parts it is about.
 */
import assert from 'node:assert/strict'
import { bundle, type Harness } from './harness.ts'
import { findAppBySlug } from '../src/apps/apps.ts'
import { findUserById } from '../src/identity/index.ts'
import { createConnection, type ConnectionKind } from '../src/integrations/connections/connections.ts'

/**
 * Creates the private app `slug` as `token`, and fails the test unless it is created.
 *
 * @example
 * await createApp(h, alice.token, 'shop')
 */
export async function createApp(h: Harness, token: string, slug: string): Promise<void> {
  const res = await h.request('/v1/apps', { token, json: { slug, visibility: 'private' } })
  assert.equal(res.status, 201, await res.text())
}

/**
 * Deploys `files` to the app `slug` as `token`, and fails the test unless it is accepted.
 *
 * @example
 * await deployApp(h, alice.token, 'shop', { 'service.yaml': manifest('shop', PROVIDER, 'private'), 'functions/list.ts': 'export default 1' })
 */
export async function deployApp(h: Harness, token: string, slug: string, files: Record<string, string>): Promise<void> {
  const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: bundle(files) })
  assert.equal(res.status, 201, await res.text())
}

/** A credential field of a contract (spec 2.7); secret and required unless said. */
export interface ContractCredential {
  name: string
  label: string
  secret?: false
  optional?: true
}

/** An operation of a contract; `fake` is written as JSON (which is YAML). */
export interface ContractOperation {
  name: string
  capability: string
  function: string
  description: string
  fake?: unknown
}

/** An event type of a contract; `fake` is written as JSON (which is YAML). */
export interface ContractEvent {
  type: string
  capability: string
  description: string
  fake?: unknown
}

/** The `orders.list` operation (capability `orders.read`) run by the provider's Function `fn`. */
export function listOrders(fn: string): ContractOperation {
  return { name: 'orders.list', capability: 'orders.read', function: fn, description: 'Lists orders' }
}

/** The `order.created` event type, under `orders.read`. */
export const ORDER_CREATED: ContractEvent = { type: 'order.created', capability: 'orders.read', description: 'An order was placed' }

/** The `orders` contract's capabilities when a test needs the write one too. */
export const READ_AND_WRITE: Readonly<Record<string, string>> = { 'orders.read': 'Read orders', 'orders.write': 'Change orders' }

/**
 * The `provides:` block of a provider manifest publishing `name` (default `orders`, "Orders",
 * "The shop's orders"): `credentials` (default the one secret SHOP_API_KEY, "API key"; none
 * when empty), `capabilities` by name with their descriptions (default `orders.read` alone),
 * and the `operations`, `events`, `sync` and `webhook` Functions each test names. Prefix it
 * with the manifest's own `functions:` list.
 *
 * @example
 * `functions:\n  - name: ordersImpl\n    entrypoint: functions/orders.ts\n    access: system\n${ordersContract({ operations: [listOrders('ordersImpl')] })}`
 */
export function ordersContract(options: ContractOptions = {}): string {
  return providesBlock({ name: 'orders', title: 'Orders', description: 'The shop\'s orders' }, {
    credentials: [{ name: 'SHOP_API_KEY', label: 'API key' }], capabilities: { 'orders.read': 'Read orders' }, ...options,
  })
}

/**
 * The `provides:` block of a provider manifest publishing `contacts` ("Contacts", "The CRM's
 * contacts") behind OAuth 2.0 at https://crm.example.com/authorize (client `crm-client`, scope
 * `contacts`) whose code exchange is `exchange`, with `contacts.read` and the operation
 * `contacts.list` run by `operation`; `accessToken` names the token's secret, and
 * `credentials` and `webhook` are as in ordersContract (no credentials unless given).
 *
 * @example
 * contactsContract({ exchange: 'swapCode', operation: 'contactsImpl' })
 */
export function contactsContract(options: {
  exchange: string
  operation: string
  accessToken?: string
  credentials?: readonly ContractCredential[]
  webhook?: string
}): string {
  return providesBlock({ name: 'contacts', title: 'Contacts', description: 'The CRM\'s contacts' }, {
    credentials: options.credentials ?? [],
    authorization: `    authorization:
      type: oauth2
      authorizationUrl: https://crm.example.com/authorize
      clientId: crm-client
      scopes: [contacts]
      exchange: ${options.exchange}
${options.accessToken === undefined ? '' : `      accessToken: ${options.accessToken}\n`}`,
    capabilities: { 'contacts.read': 'Read contacts' },
    operations: [{ name: 'contacts.list', capability: 'contacts.read', function: options.operation, description: 'Lists contacts' }],
    ...(options.webhook === undefined ? {} : { webhook: options.webhook }),
  })
}

/** What a test varies in a contract (see ordersContract). */
export interface ContractOptions {
  name?: string
  credentials?: readonly ContractCredential[]
  capabilities?: Readonly<Record<string, string>>
  operations?: readonly ContractOperation[]
  events?: readonly ContractEvent[]
  sync?: { function: string; schedule: string; timezone?: string }
  webhook?: string
}

function providesBlock(
  head: { name: string; title: string; description: string },
  options: ContractOptions & { credentials: readonly ContractCredential[]; capabilities: Readonly<Record<string, string>>; authorization?: string },
): string {
  const { credentials, capabilities } = options
  const fake = (value: unknown) => (value === undefined ? '' : `        fake: ${JSON.stringify(value)}\n`)
  const lines = [`provides:
  integration:
    name: ${options.name ?? head.name}
    title: ${head.title}
    description: ${head.description}
`]
  if (credentials.length > 0) {
    lines.push('    credentials:\n', ...credentials.map((field) => `      - name: ${field.name}
        label: ${field.label}
${field.secret === false ? '        secret: false\n' : ''}${field.optional ? '        optional: true\n' : ''}`))
  }
  if (options.authorization !== undefined) lines.push(options.authorization)
  lines.push('    capabilities:\n', ...Object.entries(capabilities).map(([name, description]) => `      - name: ${name}
        description: ${description}
`))
  if (options.operations && options.operations.length > 0) {
    lines.push('    operations:\n', ...options.operations.map((op) => `      - name: ${op.name}
        capability: ${op.capability}
        function: ${op.function}
        description: ${op.description}
${fake(op.fake)}`))
  }
  if (options.events && options.events.length > 0) {
    lines.push('    events:\n', ...options.events.map((event) => `      - type: ${event.type}
        capability: ${event.capability}
        description: ${event.description}
${fake(event.fake)}`))
  }
  if (options.sync) {
    lines.push(`    sync:
      function: ${options.sync.function}
      schedule: ${JSON.stringify(options.sync.schedule)}
${options.sync.timezone === undefined ? '' : `      timezone: ${options.sync.timezone}\n`}`)
  }
  if (options.webhook !== undefined) lines.push(`    webhook:\n      function: ${options.webhook}\n`)
  return lines.join('')
}

/**
 * Connects `userId` directly (as the connection page would) to the integration
 * `integration` (default `orders`) published by the app `provider` (default `shop`), with
 * `values` for its credential fields (each a required secret), and returns the connection's
 * id. The label is `<kind> <provider>` unless given.
 *
 * @example
 * const id = await createTestConnection(h, { userId: alice.userId, kind: 'personal', values: { SHOP_API_KEY: API_KEY } })
 */
export async function createTestConnection(h: Harness, options: {
  userId: string
  kind: ConnectionKind
  values: Readonly<Record<string, string>>
  provider?: string
  integration?: string
  label?: string
}): Promise<string> {
  const provider = options.provider ?? 'shop'
  const actor = await findUserById(h.t.db, options.userId)
  const app = await findAppBySlug(h.t.db, provider)
  assert.ok(actor && app?.organisationId, `no user ${options.userId} or no organisation app ${provider}`)
  const { connection } = await createConnection({ db: h.t.db, clock: h.clock, keyring: h.platform.connectionKeyring }, {
    actor,
    integration: {
      appId: app.id, appSlug: provider, organisationId: app.organisationId, name: options.integration ?? 'orders', title: 'Orders',
      description: '', credentials: Object.keys(options.values).map((name) => ({ name, label: name, secret: true, optional: false })), oauth: false,
    },
    kind: options.kind, label: options.label ?? `${options.kind} ${provider}`, values: options.values,
  })
  return connection.id
}

/** One integration slot of a consumer manifest (spec 2.7); `account` is `app` unless said. */
export interface TestSlot {
  integration: string
  account?: 'app' | 'calling_user'
  capabilities: string[]
  /** The consumer's Function that receives the slot's events. */
  events?: string
}

/**
 * A consumer manifest section: optionally one public Function at `functions/call.ts`, and
 * the custom integration slots named by `slots`, each of cardinality one. Without
 * `function`, it is the `integrations:` block alone, to follow a test's own `functions:`.
 *
 * @example
 * consumerManifest({ function: 'callCrm', slots: { crm: { integration: 'contacts', capabilities: ['contacts.read'] } } })
 */
export function consumerManifest(options: { function?: string; slots: Record<string, TestSlot> }): string {
  const fn = options.function === undefined ? '' : `functions:
  - name: ${options.function}
    entrypoint: functions/call.ts
    access: public
`
  const slots = Object.entries(options.slots).map(([name, slot]) => `  ${name}:
    provider: custom
    integration: ${slot.integration}
    account: ${slot.account ?? 'app'}
    cardinality: one
    capabilities: [${slot.capabilities.join(', ')}]
${slot.events === undefined ? '' : `    events:\n      function: ${slot.events}\n`}`)
  return `${fn}integrations:\n${slots.join('')}`
}

/**
 * The PL/pgSQL body (between `$$`) of a function that catches every cancel where it lands:
 * only an end nothing can catch stops it.
 *
 * @example
 * `create function stubborn() returns void language plpgsql as $$${STUBBORN_BODY}$$;`
 */
export const STUBBORN_BODY = `
begin
  -- The sleeping loop runs inside the handler, so the cancel always lands where it is caught
  -- (a loop that left the block between sleeps could take it outside, and simply fail).
  loop
    begin
      loop
        perform pg_catalog.pg_sleep(0.01);
      end loop;
    exception when query_canceled then
      null;
    end;
  end loop;
end `
