// Tests for the provider contract (`provides.integration`, spec 2.6): identity,
// credentials, OAuth authorization, capabilities, operations and their fakes, sync,
// webhook, events, and the SDK 2.6.0 gate.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { authorizationUrlProblem } from './provides-authorization.ts'
import { jsonByteLength } from './json-value.ts'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import { validateManifest } from './validate.ts'

/**
 * A provider manifest: "worker" is a system Function, "page" a user one. `before` lines
 * go ahead of `provides` (which then moves down); the contract's own lines start at 16
 * and `extra` lines at 22.
 */
function provider(extra: readonly string[], options: { before?: readonly string[]; sdk?: string } = {}): string {
  return manifestWith(
    [
      ...(options.before ?? []),
      'provides:',
      '  integration:',
      '    name: shop-orders',
      '    title: Shop',
      '    description: Orders from the shop',
      '    capabilities:',
      '      - name: orders',
      '        description: Read orders',
      ...extra,
    ],
    options.sdk === undefined ? {} : { sdk: options.sdk },
  )
}

const contractOf = (text: string) => {
  const { manifest } = valid(text)
  const integration = manifest?.provides?.integration
  assert.ok(integration)
  return integration
}

describe('contract identity', () => {
  test('a minimal contract gets empty credentials, operations and events', () => {
    assert.deepEqual(contractOf(provider([])), {
      name: 'shop-orders',
      title: 'Shop',
      description: 'Orders from the shop',
      credentials: [],
      capabilities: [{ name: 'orders', description: 'Read orders' }],
      operations: [],
      events: [],
    })
  })

  test('the name must be lowercase kebab-case', () => {
    for (const name of ['Shop-Orders', 'shop_orders', 'shop--orders', '-shop', 'shop-', '1shop']) {
      const error = onlyError(provider([]).replace('name: shop-orders', `name: ${name}`))
      assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.name', line: 16, column: 11 }, name)
    }
  })

  test('the name may be 64 characters but not 65', () => {
    valid(provider([]).replace('name: shop-orders', `name: ${'a'.repeat(64)}`))
    const error = onlyError(provider([]).replace('name: shop-orders', `name: ${'a'.repeat(65)}`))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_LONG', path: 'provides.integration.name', line: 16, column: 11 })
  })

  test('a name another active app publishes is rejected', () => {
    const publishedIntegrations = new Map([['shop-orders', { appSlug: 'old-shop', capabilities: ['orders'], eventTypes: [] }]])
    const error = onlyError(provider([]), { publishedIntegrations })
    assert.deepEqual(where(error), { code: 'MANIFEST_INTEGRATION_NAME_TAKEN', path: 'provides.integration.name', line: 16, column: 11 })
    assert.match(error.message, /already published by the active app "old-shop"/)
  })

  test('the app that already publishes the name may redeploy it', () => {
    const publishedIntegrations = new Map([['shop-orders', { appSlug: 'tasks', capabilities: ['orders'], eventTypes: [] }]])
    valid(provider([]), { publishedIntegrations })
  })

  test('title and description are required and non-empty', () => {
    const result = validateManifest(provider([]).replace('    title: Shop\n', '').replace('description: Orders from the shop', 'description: ""'))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.title', line: 16, column: 5 },
      { code: 'MANIFEST_EMPTY_STRING', path: 'provides.integration.description', line: 17, column: 18 },
    ])
  })

  test('an unknown contract field is reported', () => {
    assert.deepEqual(where(onlyError(provider(['    version: 2']))), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'provides.integration.version', line: 22, column: 5 })
  })

  test('provides needs integration and nothing else', () => {
    const missing = onlyError(manifestWith(['provides: {}']))
    assert.deepEqual(where(missing), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration', line: 14, column: 11 })
    const unknown = validateManifest(manifestWith(['provides:', '  api: {}'])).errors.map(where)
    assert.deepEqual(unknown, [
      { code: 'MANIFEST_UNKNOWN_FIELD', path: 'provides.api', line: 15, column: 3 },
      { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration', line: 15, column: 3 },
    ])
  })

  test('provides needs schemaVersion 3', () => {
    const result = validateManifest(provider([]).replace('schemaVersion: 3', 'schemaVersion: 2'))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_SCHEMA_VERSION_UNSUPPORTED', path: 'schemaVersion', line: 1, column: 16 },
      { code: 'MANIFEST_SCHEMA_VERSION_TOO_LOW', path: 'provides', line: 15, column: 3 },
    ])
  })
})

describe('credentials', () => {
  test('secret defaults to true and optional to false', () => {
    const contract = contractOf(provider(['    credentials:', '      - name: API_KEY', '        label: API key', '      - { name: REGION, label: Region, secret: false, optional: true }']))
    assert.deepEqual(contract.credentials, [
      { name: 'API_KEY', label: 'API key', secret: true, optional: false },
      { name: 'REGION', label: 'Region', secret: false, optional: true },
    ])
  })

  const credentials = (count: number) => ['    credentials:', ...Array.from({ length: count }, (_, index) => `      - { name: KEY_${index}, label: Key ${index} }`)]

  test('20 credentials are allowed', () => {
    assert.equal(contractOf(provider(credentials(20))).credentials.length, 20)
  })

  test('21 credentials are too many', () => {
    const error = onlyError(provider(credentials(21)))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_MANY_ITEMS', path: 'provides.integration.credentials', line: 23, column: 7 })
    assert.match(error.message, /lists 21 entries; at most 20 are allowed/)
  })

  test('a credential named like an app secret is rejected at the credential name', () => {
    const text = provider(['    credentials:', '      - name: STRIPE_KEY', '        label: Key'], { before: ['secrets:', '  STRIPE_KEY: required'] })
    const error = onlyError(text)
    // The two secrets lines move the contract down by two.
    assert.deepEqual(where(error), { code: 'MANIFEST_SECRET_NAME_CONFLICT', path: 'provides.integration.credentials[0].name', line: 25, column: 15 })
    assert.match(error.message, /secrets\.STRIPE_KEY at line 15/)
  })

  test('credential names must be unique', () => {
    const error = onlyError(provider(['    credentials:', '      - { name: KEY, label: A }', '      - { name: KEY, label: B }']))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'provides.integration.credentials[1].name', line: 24, column: 17 })
  })

  test('credential names follow the secret naming rules', () => {
    const error = onlyError(provider(['    credentials:', '      - { name: api-key, label: A }']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.credentials[0].name', line: 23, column: 17 })
  })

  test('a credential needs a label', () => {
    const error = onlyError(provider(['    credentials:', '      - name: KEY']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.credentials[0].label', line: 23, column: 9 })
  })

  test('secret and optional must be booleans', () => {
    const result = validateManifest(provider(['    credentials:', '      - { name: KEY, label: A, secret: "no", optional: 1 }']))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_WRONG_TYPE', path: 'provides.integration.credentials[0].secret', line: 23, column: 40 },
      { code: 'MANIFEST_WRONG_TYPE', path: 'provides.integration.credentials[0].optional', line: 23, column: 56 },
    ])
  })
})

describe('authorization', () => {
  /** Authorization field lines start at 23. */
  const oauth = (...lines: string[]) =>
    provider([
      '    authorization:',
      ...lines,
    ])
  const FIELDS = [
    '      type: oauth2',
    '      authorizationUrl: https://shop.example.com/authorize',
    '      clientId: abc',
    '      scopes: [read]',
    '      exchange: worker',
  ]

  test('pkce defaults to true and accessToken to OAUTH_ACCESS_TOKEN', () => {
    assert.deepEqual(contractOf(oauth(...FIELDS)).authorization, {
      type: 'oauth2',
      authorizationUrl: 'https://shop.example.com/authorize',
      clientId: 'abc',
      scopes: ['read'],
      exchange: 'worker',
      pkce: true,
      accessToken: 'OAUTH_ACCESS_TOKEN',
    })
  })

  test('refresh, pkce and accessToken are read', () => {
    const authorization = contractOf(oauth(...FIELDS, '      refresh: worker', '      pkce: false', '      accessToken: SHOP_TOKEN')).authorization
    assert.equal(authorization?.refresh, 'worker')
    assert.equal(authorization?.pkce, false)
    assert.equal(authorization?.accessToken, 'SHOP_TOKEN')
  })

  test('scopes may be empty', () => {
    assert.deepEqual(contractOf(oauth(...FIELDS.slice(0, 3), '      scopes: []', FIELDS[4] ?? '')).authorization?.scopes, [])
  })

  test('every required field is reported when missing, at the authorization mapping', () => {
    const result = validateManifest(oauth('      pkce: true'))
    assert.deepEqual(result.errors.map((error) => error.path), [
      'provides.integration.authorization.type',
      'provides.integration.authorization.authorizationUrl',
      'provides.integration.authorization.clientId',
      'provides.integration.authorization.scopes',
      'provides.integration.authorization.exchange',
    ])
    assert.ok(result.errors.every((error) => error.code === 'MANIFEST_MISSING_FIELD' && error.line === 23 && error.column === 7))
  })

  test('type must be oauth2', () => {
    const error = onlyError(oauth('      type: oauth1', ...FIELDS.slice(1)))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'provides.integration.authorization.type', line: 23, column: 13 })
  })

  test('an http authorization URL is rejected unless it is local', () => {
    const error = onlyError(oauth(FIELDS[0] ?? '', '      authorizationUrl: http://shop.example.com/authorize', ...FIELDS.slice(2)))
    assert.deepEqual(where(error), { code: 'MANIFEST_AUTHORIZATION_URL_INVALID', path: 'provides.integration.authorization.authorizationUrl', line: 24, column: 25 })
    valid(oauth(FIELDS[0] ?? '', '      authorizationUrl: http://localhost:8080/authorize', ...FIELDS.slice(2)))
  })

  test('authorization URLs: https anywhere, http only on localhost, *.localhost and 127.0.0.1, never relative or with a fragment', () => {
    assert.equal(authorizationUrlProblem('https://login.example.com/oauth/authorize?prompt=consent'), null)
    assert.equal(authorizationUrlProblem('http://localhost/authorize'), null)
    assert.equal(authorizationUrlProblem('http://orders.localhost:8787/oauth/authorize'), null)
    assert.match(authorizationUrlProblem('http://localhost.example.com/authorize') ?? '', /must use https/)
    assert.equal(authorizationUrlProblem('http://127.0.0.1:9000/authorize'), null)
    assert.match(authorizationUrlProblem('http://10.0.0.1/authorize') ?? '', /must use https/)
    assert.match(authorizationUrlProblem('ftp://example.com/authorize') ?? '', /must use https/)
    assert.match(authorizationUrlProblem('/oauth/authorize') ?? '', /not an absolute URL/)
    assert.match(authorizationUrlProblem('https://example.com/authorize#x') ?? '', /fragment/)
  })

  test('a scope with a space is rejected', () => {
    const error = onlyError(oauth(...FIELDS.slice(0, 3), '      scopes: ["read write"]', FIELDS[4] ?? ''))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.authorization.scopes[0]', line: 26, column: 16 })
  })

  test('the exchange Function must be declared and system', () => {
    const missing = onlyError(oauth(...FIELDS.slice(0, 4), '      exchange: swapCode'))
    assert.deepEqual(where(missing), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'provides.integration.authorization.exchange', line: 27, column: 17 })
    const notSystem = onlyError(oauth(...FIELDS.slice(0, 4), '      exchange: page'))
    assert.deepEqual(where(notSystem), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'provides.integration.authorization.exchange', line: 27, column: 17 })
  })

  test('the refresh Function must be a system Function', () => {
    const error = onlyError(oauth(...FIELDS, '      refresh: page'))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'provides.integration.authorization.refresh', line: 28, column: 16 })
  })

  test('pkce must be a boolean', () => {
    assert.equal(onlyError(oauth(...FIELDS, '      pkce: "no"')).code, 'MANIFEST_WRONG_TYPE')
  })

  test('the default access-token name must not collide with a credential', () => {
    const text = provider(['    credentials:', '      - { name: OAUTH_ACCESS_TOKEN, label: Token }', '    authorization:', ...FIELDS])
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_SECRET_NAME_CONFLICT', path: 'provides.integration.authorization.accessToken', line: 25, column: 7 })
    assert.match(error.message, /default access-token name OAUTH_ACCESS_TOKEN is also the name of the credential at line 23/)
  })

  test('an explicit access-token name must not collide with an app secret', () => {
    const text = provider(['    authorization:', ...FIELDS, '      accessToken: SHOP_TOKEN'], { before: ['secrets:', '  SHOP_TOKEN: required'] })
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_SECRET_NAME_CONFLICT', path: 'provides.integration.authorization.accessToken', line: 30, column: 20 })
  })

  test('the access-token name follows the secret naming rules', () => {
    assert.equal(onlyError(oauth(...FIELDS, '      accessToken: token')).code, 'MANIFEST_INVALID_FORMAT')
  })
})

describe('capabilities', () => {
  test('at least one capability is required', () => {
    const error = onlyError(provider([]).replace('    capabilities:\n      - name: orders\n        description: Read orders\n', '    capabilities: []\n'))
    assert.deepEqual(where(error), { code: 'MANIFEST_EMPTY_ARRAY', path: 'provides.integration.capabilities', line: 19, column: 19 })
  })

  test('capabilities are required', () => {
    const error = onlyError(provider([]).replace('    capabilities:\n      - name: orders\n        description: Read orders\n', ''))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.capabilities', line: 16, column: 5 })
  })

  test('capability names are dotted camelCase', () => {
    valid(provider(['      - { name: orders.readAll, description: x }']))
    for (const name of ['Orders', 'orders..read', 'orders.', 'order-list', 'orders.Read']) {
      const error = onlyError(provider([`      - { name: "${name}", description: x }`]))
      assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.capabilities[1].name', line: 22, column: 17 }, name)
    }
  })

  test('capability names are unique', () => {
    const error = onlyError(provider(['      - { name: orders, description: again }']))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'provides.integration.capabilities[1].name', line: 22, column: 17 })
    assert.match(error.message, /already used at line 20/)
  })

  test('a capability needs a description', () => {
    const error = onlyError(provider(['      - { name: refunds }']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.capabilities[1].description', line: 22, column: 9 })
  })
})

describe('operations', () => {
  /** The operation's field lines are 23-26; `lines` start at 27. */
  const operation = (...lines: string[]) =>
    provider(['    operations:', '      - name: orders.list', '        capability: orders', '        function: worker', '        description: List orders', ...lines])

  test('an operation without schemas or fake is read', () => {
    assert.deepEqual(contractOf(operation()).operations, [
      { name: 'orders.list', capability: 'orders', function: 'worker', description: 'List orders' },
    ])
  })

  test('the name needs two or more dotted camelCase segments', () => {
    valid(operation().replace('name: orders.list', 'name: orders.items.listAll'))
    for (const name of ['list', 'Orders.list', 'orders.list_all', 'orders.']) {
      const error = onlyError(operation().replace('name: orders.list', `name: "${name}"`))
      assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.operations[0].name', line: 23, column: 15 }, name)
    }
  })

  test('operation names are unique', () => {
    const text = operation('      - { name: orders.list, capability: orders, function: worker, description: Again }')
    const error = onlyError(text)
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'provides.integration.operations[1].name', line: 27, column: 17 })
  })

  test('the capability must be declared', () => {
    const error = onlyError(operation().replace('capability: orders', 'capability: refunds'))
    assert.deepEqual(where(error), { code: 'MANIFEST_CAPABILITY_NOT_DECLARED', path: 'provides.integration.operations[0].capability', line: 24, column: 21 })
    assert.match(error.message, /declared: orders/)
  })

  test('the Function must be declared and system', () => {
    const missing = onlyError(operation().replace('function: worker', 'function: listOrders'))
    assert.deepEqual(where(missing), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'provides.integration.operations[0].function', line: 25, column: 19 })
    const notSystem = onlyError(operation().replace('function: worker', 'function: page'))
    assert.deepEqual(where(notSystem), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'provides.integration.operations[0].function', line: 25, column: 19 })
  })

  test('the description is required', () => {
    const error = onlyError(operation().replace('        description: List orders\n', ''))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.operations[0].description', line: 23, column: 9 })
  })

  test('input and output are mappings or booleans', () => {
    const contract = contractOf(operation('        input: { type: [object, "null"], required: [id], properties: { id: { type: string } } }', '        output: false'))
    assert.deepEqual(contract.operations[0]?.input, { type: ['object', 'null'], required: ['id'], properties: { id: { type: 'string' } } })
    assert.equal(contract.operations[0]?.output, false)
    const error = onlyError(operation('        input: object'))
    assert.deepEqual(where(error), { code: 'MANIFEST_JSON_SCHEMA_INVALID', path: 'provides.integration.operations[0].input', line: 27, column: 16 })
  })

  test('a type keyword must name JSON Schema types, also in nested schemas', () => {
    const result = validateManifest(operation(
      '        input:',
      '          type: object',
      '          properties:',
      '            type: { type: text }',
      '            tags: { type: array, items: { type: [string, str] } }',
      '        output: { anyOf: [{ type: int }, true] }',
    ))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_JSON_SCHEMA_INVALID', path: 'provides.integration.operations[0].input.properties.type.type', line: 30, column: 27 },
      { code: 'MANIFEST_JSON_SCHEMA_INVALID', path: 'provides.integration.operations[0].input.properties.tags.items.type[1]', line: 31, column: 58 },
      { code: 'MANIFEST_JSON_SCHEMA_INVALID', path: 'provides.integration.operations[0].output.anyOf[0].type', line: 32, column: 35 },
    ])
  })

  test('enum and const values are not mistaken for schemas', () => {
    valid(operation('        input: { enum: [{ type: nonsense }], const: { type: 1 }, default: { type: x } }'))
  })

  test('a fake of exactly 16384 bytes is accepted and one of 16385 bytes is too large', () => {
    // A string fake serializes with two quotes around it.
    const fits = 'x'.repeat(16384 - 2)
    assert.equal(jsonByteLength(fits), 16384)
    assert.equal(contractOf(operation(`        fake: "${fits}"`)).operations[0]?.fake, fits)
    const error = onlyError(operation(`        fake: "${fits}x"`))
    assert.deepEqual(where(error), { code: 'MANIFEST_FAKE_TOO_LARGE', path: 'provides.integration.operations[0].fake', line: 27, column: 15 })
    assert.match(error.message, /16385 bytes as JSON; the limit is 16384 bytes \(16 KiB\)/)
  })

  test('fake size counts UTF-8 bytes, not characters', () => {
    const euro = '€'.repeat(5461) // 3 bytes each: 16383 bytes + 2 quotes = 16385
    assert.equal(onlyError(operation(`        fake: "${euro}"`)).code, 'MANIFEST_FAKE_TOO_LARGE')
  })

  test('a fake may be any JSON value, null included', () => {
    assert.equal(contractOf(operation('        fake: null')).operations[0]?.fake, null)
    assert.deepEqual(contractOf(operation('        fake: [1, "a", { ok: true }]')).operations[0]?.fake, [1, 'a', { ok: true }])
    assert.equal('fake' in (contractOf(operation()).operations[0] ?? {}), false)
  })

  test('a fake that JSON cannot represent is rejected', () => {
    const error = onlyError(operation('        fake: { total: .inf }'))
    assert.deepEqual(where(error), { code: 'MANIFEST_JSON_VALUE_INVALID', path: 'provides.integration.operations[0].fake.total', line: 27, column: 24 })
  })

  test('an unknown operation field is reported', () => {
    assert.equal(where(onlyError(operation('        timeout: 5'))).code, 'MANIFEST_UNKNOWN_FIELD')
  })
})

describe('sync, webhook and events', () => {
  test('sync is read with the UTC default', () => {
    assert.deepEqual(contractOf(provider(['    sync:', '      function: worker', '      schedule: "*/30 * * * *"'])).sync, {
      function: 'worker',
      schedule: '*/30 * * * *',
      timezone: 'UTC',
    })
  })

  test('sync checks its Function, schedule and timezone', () => {
    const result = validateManifest(provider(['    sync:', '      function: page', '      schedule: "61 * * * *"', '      timezone: Mars/Olympus']))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'provides.integration.sync.function', line: 23, column: 17 },
      { code: 'MANIFEST_CRON_SCHEDULE_INVALID', path: 'provides.integration.sync.schedule', line: 24, column: 17 },
      { code: 'MANIFEST_TIMEZONE_INVALID', path: 'provides.integration.sync.timezone', line: 25, column: 17 },
    ])
  })

  test('webhook is read and its Function must be declared', () => {
    assert.deepEqual(contractOf(provider(['    webhook:', '      function: worker'])).webhook, { function: 'worker' })
    const error = onlyError(provider(['    webhook:', '      function: onWebhook']))
    assert.deepEqual(where(error), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'provides.integration.webhook.function', line: 23, column: 17 })
  })

  /** The event's field lines are 23-25; `lines` start at 26. */
  const event = (...lines: string[]) =>
    provider(['    events:', '      - type: order.created', '        capability: orders', '        description: An order was placed', ...lines])

  test('events are read', () => {
    assert.deepEqual(contractOf(event('        fake: { id: o1 }')).events, [
      { type: 'order.created', capability: 'orders', description: 'An order was placed', fake: { id: 'o1' } },
    ])
  })

  test('event types are dotted lowercase with two or more segments', () => {
    valid(event().replace('type: order.created', 'type: order_item.line.created'))
    for (const type of ['created', 'Order.created', 'order.Created', 'order.created-now']) {
      const error = onlyError(event().replace('type: order.created', `type: "${type}"`))
      assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'provides.integration.events[0].type', line: 23, column: 15 }, type)
    }
  })

  test('event types are unique', () => {
    const error = onlyError(event('      - { type: order.created, capability: orders, description: again }'))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_NAME', path: 'provides.integration.events[1].type', line: 26, column: 17 })
  })

  test('an event capability must be declared', () => {
    const error = onlyError(event().replace('capability: orders', 'capability: refunds'))
    assert.deepEqual(where(error), { code: 'MANIFEST_CAPABILITY_NOT_DECLARED', path: 'provides.integration.events[0].capability', line: 24, column: 21 })
  })

  test('an event needs a description', () => {
    const error = onlyError(event().replace('        description: An order was placed\n', ''))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'provides.integration.events[0].description', line: 23, column: 9 })
  })

  test('an event fake must be an object', () => {
    const error = onlyError(event('        fake: [1, 2]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'provides.integration.events[0].fake', line: 26, column: 15 })
  })

  test('an event fake may serialize to 64 KiB but not more', () => {
    // {"d":"…"} adds 8 bytes around the string.
    const fits = 'x'.repeat(65536 - 8)
    valid(event(`        fake: { d: "${fits}" }`))
    const error = onlyError(event(`        fake: { d: "${fits}x" }`))
    assert.deepEqual(where(error), { code: 'MANIFEST_FAKE_TOO_LARGE', path: 'provides.integration.events[0].fake', line: 26, column: 15 })
    assert.match(error.message, /the limit is 65536 bytes \(64 KiB\)/)
  })

  const GATED = [
    ['sync', ['    sync:', '      function: worker', '      schedule: "0 * * * *"'], 'integration sync schedules (sync)'],
    ['webhook', ['    webhook:', '      function: worker'], 'integration webhooks (webhook)'],
    ['events', ['    events:', '      - { type: order.created, capability: orders, description: x }'], 'integration events (events)'],
  ] as const

  for (const [field, lines, feature] of GATED) {
    test(`${field} needs SDK 2.6.0`, () => {
      valid(provider(lines, { sdk: '2.6.0' }))
      const error = onlyError(provider(lines, { sdk: '2.5.0' }))
      assert.deepEqual(where(error), { code: 'MANIFEST_SDK_VERSION_TOO_LOW', path: `provides.integration.${field}`, line: 23, column: 7 })
      assert.equal(error.message, `${feature} need runtime.sdk.version 2.6.0 or later; this manifest pins 2.5.0`)
    })
  }

  test('a contract without sync, webhook or events works on SDK 2.0.0', () => {
    valid(provider([], { sdk: '2.0.0' }))
  })
})
