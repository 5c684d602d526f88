// Tests for validateManifest as a whole: a complete valid manifest with its defaults,
// the YAML and top-level rules (schemaVersion, app, runtime, secrets), and reporting
// every problem at once in document order.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { MANIFEST_PROBLEMS } from './codes.ts'
import { validateManifest } from './index.ts'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import type { Manifest } from './types.ts'

const FULL_MANIFEST = `schemaVersion: 3
app:
  id: tasks
  name: Tasks
  visibility: public
runtime:
  sdk:
    version: 2.6.0
functions:
  - name: createTask
    entrypoint: functions/create-task.ts
    access: user
    timeoutSeconds: 120
    routes:
      - method: POST
        path: /api/tasks
      - method: GET
        path: /api/tasks/:id
  - name: home
    entrypoint: functions/home.ts
    access: public
  - name: sendEmail
    entrypoint: functions/send-email.ts
    access: system
  - name: cleanup
    entrypoint: functions/jobs/cleanup.ts
    access: system
  - name: onCrmEvent
    entrypoint: functions/on-crm-event.ts
    access: system
  - name: listOrders
    entrypoint: functions/list-orders.ts
    access: system
  - name: oauthExchange
    entrypoint: functions/oauth-exchange.ts
    access: system
  - name: oauthRefresh
    entrypoint: functions/oauth-refresh.ts
    access: system
queues:
  - name: emails
    function: sendEmail
  - name: reports_slow
    function: sendEmail
    concurrency: 5
    maxAttempts: 10
    retryDelaySeconds: 0
    retryBackoff: true
    timeoutSeconds: 900
cron:
  - name: nightly
    schedule: "0 3 * * *"
    function: cleanup
  - name: weekly-report
    schedule: "30 8 * * MON"
    function: cleanup
    enabled: false
    timezone: Europe/Berlin
secrets:
  STRIPE_KEY: required
  MAIL_TOKEN: required
data:
  search:
    - name: notes
      table: notes
      select: [id, title, body]
      filters: [owner_id]
      fullText:
        language: english
        columns: [title, body]
      vector:
        column: embedding
        dimensions: 1536
        model: text-embedding-3-small
    - name: docs
      table: documents
      select: [id]
      vector:
        column: embedding
        dimensions: 3
        model: tiny
integrations:
  crm:
    provider: custom
    integration: acme-crm
    account: app
    cardinality: one
    capabilities: [contacts.read, contacts.write]
    events:
      function: onCrmEvent
      types: [contact.created]
  calendar:
    provider: custom
    integration: team-calendar
    account: calling_user
    cardinality: one
    capabilities: [events]
provides:
  integration:
    name: shop-orders
    title: Shop orders
    description: Orders from the shop
    credentials:
      - name: SHOP_API_KEY
        label: API key
      - name: SHOP_REGION
        label: Region
        secret: false
        optional: true
    authorization:
      type: oauth2
      authorizationUrl: https://shop.example.com/oauth/authorize
      clientId: client-123
      scopes: [orders.read, offline_access]
      exchange: oauthExchange
      refresh: oauthRefresh
    capabilities:
      - name: orders
        description: Read orders
    operations:
      - name: orders.list
        capability: orders
        function: listOrders
        description: List recent orders
        input:
          type: object
          properties:
            limit: { type: integer }
        output: true
        fake:
          orders: [{ id: "o1", total: 12.5 }]
    sync:
      function: cleanup
      schedule: "*/15 * * * *"
    webhook:
      function: sendEmail
    events:
      - type: order.created
        capability: orders
        description: An order was placed
        fake: { id: o1 }
`

const FULL_FILES = new Set([
  'functions/create-task.ts',
  'functions/home.ts',
  'functions/send-email.ts',
  'functions/jobs/cleanup.ts',
  'functions/on-crm-event.ts',
  'functions/list-orders.ts',
  'functions/oauth-exchange.ts',
  'functions/oauth-refresh.ts',
])

const EXPECTED_FULL: Manifest = {
  schemaVersion: 3,
  app: { id: 'tasks', name: 'Tasks', visibility: 'public' },
  runtime: { sdk: { version: '2.6.0' } },
  functions: [
    {
      name: 'createTask',
      entrypoint: 'functions/create-task.ts',
      access: 'user',
      timeoutSeconds: 120,
      routes: [
        { method: 'POST', path: '/api/tasks' },
        { method: 'GET', path: '/api/tasks/:id' },
      ],
    },
    { name: 'home', entrypoint: 'functions/home.ts', access: 'public', timeoutSeconds: 30, routes: [] },
    { name: 'sendEmail', entrypoint: 'functions/send-email.ts', access: 'system', timeoutSeconds: 30, routes: [] },
    { name: 'cleanup', entrypoint: 'functions/jobs/cleanup.ts', access: 'system', timeoutSeconds: 30, routes: [] },
    { name: 'onCrmEvent', entrypoint: 'functions/on-crm-event.ts', access: 'system', timeoutSeconds: 30, routes: [] },
    { name: 'listOrders', entrypoint: 'functions/list-orders.ts', access: 'system', timeoutSeconds: 30, routes: [] },
    { name: 'oauthExchange', entrypoint: 'functions/oauth-exchange.ts', access: 'system', timeoutSeconds: 30, routes: [] },
    { name: 'oauthRefresh', entrypoint: 'functions/oauth-refresh.ts', access: 'system', timeoutSeconds: 30, routes: [] },
  ],
  queues: [
    { name: 'emails', function: 'sendEmail', concurrency: 1, maxAttempts: 3, retryDelaySeconds: 30, retryBackoff: false, timeoutSeconds: 60 },
    { name: 'reports_slow', function: 'sendEmail', concurrency: 5, maxAttempts: 10, retryDelaySeconds: 0, retryBackoff: true, timeoutSeconds: 900 },
  ],
  cron: [
    { name: 'nightly', schedule: '0 3 * * *', function: 'cleanup', enabled: true, timezone: 'UTC' },
    { name: 'weekly-report', schedule: '30 8 * * MON', function: 'cleanup', enabled: false, timezone: 'Europe/Berlin' },
  ],
  secrets: { STRIPE_KEY: 'required', MAIL_TOKEN: 'required' },
  data: {
    search: [
      {
        name: 'notes',
        table: 'notes',
        select: ['id', 'title', 'body'],
        filters: ['owner_id'],
        fullText: { language: 'english', columns: ['title', 'body'] },
        vector: { column: 'embedding', dimensions: 1536, model: 'text-embedding-3-small' },
      },
      { name: 'docs', table: 'documents', select: ['id'], filters: [], vector: { column: 'embedding', dimensions: 3, model: 'tiny' } },
    ],
  },
  integrations: {
    crm: {
      provider: 'custom',
      integration: 'acme-crm',
      account: 'app',
      cardinality: 'one',
      capabilities: ['contacts.read', 'contacts.write'],
      events: { function: 'onCrmEvent', types: ['contact.created'] },
    },
    calendar: { provider: 'custom', integration: 'team-calendar', account: 'calling_user', cardinality: 'one', capabilities: ['events'] },
  },
  provides: {
    integration: {
      name: 'shop-orders',
      title: 'Shop orders',
      description: 'Orders from the shop',
      credentials: [
        { name: 'SHOP_API_KEY', label: 'API key', secret: true, optional: false },
        { name: 'SHOP_REGION', label: 'Region', secret: false, optional: true },
      ],
      authorization: {
        type: 'oauth2',
        authorizationUrl: 'https://shop.example.com/oauth/authorize',
        clientId: 'client-123',
        scopes: ['orders.read', 'offline_access'],
        exchange: 'oauthExchange',
        refresh: 'oauthRefresh',
        pkce: true,
        accessToken: 'OAUTH_ACCESS_TOKEN',
      },
      capabilities: [{ name: 'orders', description: 'Read orders' }],
      operations: [
        {
          name: 'orders.list',
          capability: 'orders',
          function: 'listOrders',
          description: 'List recent orders',
          input: { type: 'object', properties: { limit: { type: 'integer' } } },
          output: true,
          fake: { orders: [{ id: 'o1', total: 12.5 }] },
        },
      ],
      sync: { function: 'cleanup', schedule: '*/15 * * * *', timezone: 'UTC' },
      webhook: { function: 'sendEmail' },
      events: [{ type: 'order.created', capability: 'orders', description: 'An order was placed', fake: { id: 'o1' } }],
    },
  },
}

describe('a complete manifest', () => {
  test('every section validates and every default is applied', () => {
    const result = valid(FULL_MANIFEST, { files: FULL_FILES })
    assert.deepEqual(result.manifest, EXPECTED_FULL)
    assert.deepEqual(result.warnings, [])
  })

  test('the manifest survives a JSON round trip unchanged (it is stored as JSON)', () => {
    const { manifest } = valid(FULL_MANIFEST)
    assert.deepEqual(JSON.parse(JSON.stringify(manifest)), manifest)
  })

  test('published integrations that match the slots produce no warnings', () => {
    const publishedIntegrations = new Map([
      ['acme-crm', { appSlug: 'crm', capabilities: ['contacts.read', 'contacts.write'], eventTypes: ['contact.created'] }],
      ['team-calendar', { appSlug: 'calendar', capabilities: ['events'], eventTypes: [] }],
    ])
    const result = valid(FULL_MANIFEST, { publishedIntegrations })
    assert.deepEqual(result.warnings, [])
  })

  test('the minimal manifest gets empty sections and the private default', () => {
    const { manifest } = valid('schemaVersion: 3\napp:\n  id: tiny\nruntime:\n  sdk:\n    version: 2.0.0\n')
    assert.deepEqual(manifest, {
      schemaVersion: 3,
      app: { id: 'tiny', visibility: 'private' },
      runtime: { sdk: { version: '2.0.0' } },
      functions: [],
      queues: [],
      cron: [],
      secrets: {},
      data: { search: [] },
      integrations: {},
    })
  })

  test('optional sections written with no value count as absent', () => {
    const { manifest } = valid(manifestWith(['queues:', 'cron:', 'secrets:', 'data:', 'integrations:', 'provides:']))
    assert.deepEqual(manifest?.queues, [])
    assert.deepEqual(manifest?.secrets, {})
    assert.equal(manifest?.provides, undefined)
  })
})

describe('YAML problems', () => {
  test('a syntax error is reported with its position and nothing else is checked', () => {
    const result = validateManifest('schemaVersion: 3\napp: [tasks\nruntime: 1\n')
    assert.equal(result.manifest, null)
    assert.ok(result.errors.length >= 1)
    assert.ok(result.errors.every((error) => error.code === 'MANIFEST_YAML_SYNTAX'))
    assert.equal(result.errors[0]?.line, 3)
  })

  test('a tab used for indentation is a syntax error at the tab', () => {
    const error = validateManifest('schemaVersion: 3\napp:\n\tid: tasks\n').errors[0]
    assert.deepEqual(error && where(error), { code: 'MANIFEST_YAML_SYNTAX', path: '', line: 3, column: 1 })
  })

  test('a duplicate key is reported at the second key with its path, and validation goes on', () => {
    const result = validateManifest(manifestWith(['queues:', '  - name: a', '    function: worker', '    name: b', '    concurrency: 0']))
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_YAML_DUPLICATE_KEY', path: 'queues[0].name', line: 17, column: 5 },
      { code: 'MANIFEST_OUT_OF_RANGE', path: 'queues[0].concurrency', line: 18, column: 18 },
    ])
    assert.match(result.errors[0]?.message ?? '', /the key "name" appears more than once in this mapping \(first at line 15\)/)
  })

  test('a secret declared twice is a duplicate key at the second', () => {
    const error = onlyError(manifestWith(['secrets:', '  KEY: required', '  KEY: required']))
    assert.deepEqual(where(error), { code: 'MANIFEST_YAML_DUPLICATE_KEY', path: 'secrets.KEY', line: 16, column: 3 })
    assert.match(error.message, /first at line 15/)
  })

  test('several documents are rejected at the second', () => {
    const error = onlyError('schemaVersion: 3\n---\napp: {}\n')
    assert.deepEqual(where(error), { code: 'MANIFEST_YAML_MULTIPLE_DOCUMENTS', path: '', line: 2, column: 1 })
  })

  test('an empty file is not a manifest', () => {
    const error = onlyError('# nothing yet\n')
    assert.deepEqual(where(error), { code: 'MANIFEST_ROOT_NOT_MAPPING', path: '', line: 1, column: 1 })
    assert.match(error.message, /empty/)
  })

  test('a list at the top level is not a manifest', () => {
    assert.deepEqual(where(onlyError('- schemaVersion: 3\n')), { code: 'MANIFEST_ROOT_NOT_MAPPING', path: '', line: 1, column: 1 })
  })

  test('a single value at the top level is not a manifest', () => {
    assert.deepEqual(where(onlyError('\n"just text"\n')), { code: 'MANIFEST_ROOT_NOT_MAPPING', path: '', line: 2, column: 1 })
  })

  test('aliases are rejected where they are used', () => {
    const error = onlyError(manifestWith(['queues:', '  - name: &n emails', '    function: *n']))
    assert.deepEqual(where(error), { code: 'MANIFEST_YAML_ALIAS', path: 'queues[0].function', line: 16, column: 15 })
  })

  test('an unknown tag is reported', () => {
    const error = onlyError(manifestWith(['secrets:', '  KEY: !vault required']))
    assert.deepEqual(where(error), { code: 'MANIFEST_YAML_SYNTAX', path: '', line: 15, column: 8 })
  })
})

describe('top-level fields', () => {
  test('an unknown top-level field is reported at its key', () => {
    const error = onlyError(manifestWith(['routes: []']))
    assert.deepEqual(where(error), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'routes', line: 14, column: 1 })
  })

  test('a misspelt field gets a suggestion', () => {
    const error = onlyError(manifestWith(['queue: []']))
    assert.match(error.message, /did you mean "queues"\?/)
  })

  test('missing schemaVersion, app and runtime are reported at the root mapping', () => {
    const result = validateManifest('functions: []\n')
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_MISSING_FIELD', path: 'schemaVersion', line: 1, column: 1 },
      { code: 'MANIFEST_MISSING_FIELD', path: 'app', line: 1, column: 1 },
      { code: 'MANIFEST_MISSING_FIELD', path: 'runtime', line: 1, column: 1 },
    ])
  })

  test('schemaVersion 2 is unsupported', () => {
    const error = onlyError(manifestWith([]).replace('schemaVersion: 3', 'schemaVersion: 2'))
    assert.deepEqual(where(error), { code: 'MANIFEST_SCHEMA_VERSION_UNSUPPORTED', path: 'schemaVersion', line: 1, column: 16 })
  })

  test('schemaVersion as a string is the wrong type', () => {
    const error = onlyError(manifestWith([]).replace('schemaVersion: 3', 'schemaVersion: "3"'))
    assert.deepEqual(where(error), { code: 'MANIFEST_WRONG_TYPE', path: 'schemaVersion', line: 1, column: 16 })
  })

  test('schemaVersion 3.0 is not an integer', () => {
    const error = onlyError(manifestWith([]).replace('schemaVersion: 3', 'schemaVersion: 3.0'))
    assert.deepEqual(where(error), { code: 'MANIFEST_NOT_INTEGER', path: 'schemaVersion', line: 1, column: 16 })
  })

  test('schemaVersion with no value is missing, reported at its key', () => {
    const error = onlyError(manifestWith([]).replace('schemaVersion: 3', 'schemaVersion:'))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'schemaVersion', line: 1, column: 1 })
    assert.match(error.message, /has no value/)
  })
})

describe('app', () => {
  const withApp = (lines: string) => manifestWith([]).replace('app:\n  id: tasks\n', lines)

  test('name and visibility are read', () => {
    const { manifest } = valid(withApp('app:\n  id: my-app-2\n  name: My App\n  visibility: public\n'))
    assert.deepEqual(manifest?.app, { id: 'my-app-2', name: 'My App', visibility: 'public' })
  })

  for (const id of ['Tasks', 'ab', 'a--b', '1app', 'app-', `a${'b'.repeat(40)}`, 'my_app']) {
    test(`the app id "${id}" is invalid`, () => {
      assert.deepEqual(where(onlyError(withApp(`app:\n  id: ${id}\n`))), { code: 'MANIFEST_INVALID_FORMAT', path: 'app.id', line: 3, column: 7 })
    })
  }

  test('an app id of 40 characters is valid', () => {
    valid(withApp(`app:\n  id: a${'b'.repeat(39)}\n`))
  })

  test('a missing app id is reported at the app mapping', () => {
    assert.deepEqual(where(onlyError(withApp('app:\n  name: Tasks\n'))), { code: 'MANIFEST_MISSING_FIELD', path: 'app.id', line: 3, column: 3 })
  })

  test('a display name over 80 characters is too long', () => {
    const error = onlyError(withApp(`app:\n  id: tasks\n  name: ${'x'.repeat(81)}\n`))
    assert.deepEqual(where(error), { code: 'MANIFEST_TOO_LONG', path: 'app.name', line: 4, column: 9 })
  })

  test('an empty display name is rejected', () => {
    assert.deepEqual(where(onlyError(withApp('app:\n  id: tasks\n  name: ""\n'))), { code: 'MANIFEST_EMPTY_STRING', path: 'app.name', line: 4, column: 9 })
  })

  test('visibility must be public or private', () => {
    const error = onlyError(withApp('app:\n  id: tasks\n  visibility: internal\n'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'app.visibility', line: 4, column: 15 })
    assert.match(error.message, /use "public" or "private"/)
  })

  test('app as a string is the wrong type', () => {
    assert.deepEqual(where(onlyError(withApp('app: tasks\n'))), { code: 'MANIFEST_WRONG_TYPE', path: 'app', line: 2, column: 6 })
  })
})

describe('runtime.sdk.version', () => {
  test('the lowest and highest supported versions are accepted', () => {
    valid(manifestWith([], { sdk: '2.0.0' }))
    valid(manifestWith([], { sdk: '2.6.0' }))
  })

  test('a version below 2.0.0 is unsupported', () => {
    assert.deepEqual(where(onlyError(manifestWith([], { sdk: '1.9.9' }))), { code: 'MANIFEST_SDK_VERSION_UNSUPPORTED', path: 'runtime.sdk.version', line: 6, column: 14 })
  })

  test('a version newer than the platform is unsupported', () => {
    const error = onlyError(manifestWith([], { sdk: '2.7.0' }))
    assert.deepEqual(where(error), { code: 'MANIFEST_SDK_VERSION_UNSUPPORTED', path: 'runtime.sdk.version', line: 6, column: 14 })
    assert.match(error.message, /from 2\.0\.0 to 2\.6\.0/)
  })

  test('the platform version can be lowered by the context', () => {
    const error = onlyError(manifestWith([], { sdk: '2.6.0' }), { platformSdkVersion: '2.5.0' })
    assert.equal(error.code, 'MANIFEST_SDK_VERSION_UNSUPPORTED')
  })

  for (const version of ['2.3', '"2.3"', 'v2.3.0', '2.3.0-beta.1', '02.3.0']) {
    test(`${version} is not a valid version`, () => {
      assert.deepEqual(where(onlyError(manifestWith([], { sdk: version }))), { code: 'MANIFEST_SDK_VERSION_INVALID', path: 'runtime.sdk.version', line: 6, column: 14 })
    })
  }

  test('a malformed platformSdkVersion in the context is a caller bug', () => {
    assert.throws(() => validateManifest('', { platformSdkVersion: 'latest' }), TypeError)
  })

  test('an unknown field under runtime is reported', () => {
    const text = manifestWith([]).replace('runtime:\n', 'runtime:\n  node: 20\n')
    assert.deepEqual(where(onlyError(text)), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'runtime.node', line: 5, column: 3 })
  })
})

describe('secrets', () => {
  test('secrets map names to "required"', () => {
    const { manifest } = valid(manifestWith(['secrets:', '  STRIPE_KEY: required', '  A1_B: required']))
    assert.deepEqual(manifest?.secrets, { STRIPE_KEY: 'required', A1_B: 'required' })
  })

  test('a lowercase secret name is reported at the key', () => {
    const error = onlyError(manifestWith(['secrets:', '  stripe_key: required']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'secrets.stripe_key', line: 15, column: 3 })
  })

  test('a secret value other than "required" is rejected', () => {
    const error = onlyError(manifestWith(['secrets:', '  STRIPE_KEY: sk_live_123']))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'secrets.STRIPE_KEY', line: 15, column: 15 })
  })

  test('a secret with no value is reported at its key', () => {
    assert.deepEqual(where(onlyError(manifestWith(['secrets:', '  STRIPE_KEY:']))), { code: 'MANIFEST_MISSING_FIELD', path: 'secrets.STRIPE_KEY', line: 15, column: 3 })
  })

  test('secrets as a list is the wrong type', () => {
    assert.deepEqual(where(onlyError(manifestWith(['secrets: [STRIPE_KEY]']))), { code: 'MANIFEST_WRONG_TYPE', path: 'secrets', line: 14, column: 10 })
  })
})

describe('reporting', () => {
  test('every problem comes back at once, errors and warnings apart, in document order', () => {
    const text = manifestWith([
      'queues:',
      '  - name: Emails',
      '    function: page',
      '    retryBackoff: "yes"',
      'cron:',
      '  - name: nightly',
      '    schedule: "* * * *"',
      '    function: missing',
      'integrations:',
      '  crm:',
      '    provider: custom',
      '    integration: unknown-crm',
      '    account: app',
      '    cardinality: one',
      '    capabilities: [contacts.read]',
    ])
    const result = validateManifest(text, { publishedIntegrations: new Map() })
    assert.equal(result.manifest, null)
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_INVALID_FORMAT', path: 'queues[0].name', line: 15, column: 11 },
      { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'queues[0].function', line: 16, column: 15 },
      { code: 'MANIFEST_WRONG_TYPE', path: 'queues[0].retryBackoff', line: 17, column: 19 },
      { code: 'MANIFEST_CRON_SCHEDULE_INVALID', path: 'cron[0].schedule', line: 20, column: 15 },
      { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'cron[0].function', line: 21, column: 15 },
    ])
    assert.deepEqual(result.warnings.map(where), [
      { code: 'MANIFEST_INTEGRATION_NOT_PUBLISHED', path: 'integrations.crm.integration', line: 25, column: 18 },
    ])
    assert.ok(result.errors.every((error) => error.severity === 'error'))
    assert.ok(result.warnings.every((warning) => warning.severity === 'warning'))
  })

  test('warnings alone still return the manifest', () => {
    const text = manifestWith([
      'integrations:',
      '  crm:',
      '    provider: custom',
      '    integration: acme-crm',
      '    account: app',
      '    cardinality: one',
      '    capabilities: [contacts.read]',
    ])
    const result = validateManifest(text, { publishedIntegrations: new Map() })
    assert.equal(result.errors.length, 0)
    assert.equal(result.warnings.length, 1)
    assert.notEqual(result.manifest, null)
  })

  test('every reported code is in the catalog with the severity it was reported with', () => {
    const result = validateManifest(manifestWith(['bogus: 1', 'queues: 3']), { publishedIntegrations: new Map() })
    for (const problem of [...result.errors, ...result.warnings]) {
      const entry = MANIFEST_PROBLEMS[problem.code as keyof typeof MANIFEST_PROBLEMS]
      assert.ok(entry, problem.code)
      assert.equal(entry.severity, problem.severity)
    }
  })

  test('every catalog code is written MANIFEST_UPPER_SNAKE and has a meaning', () => {
    for (const [code, entry] of Object.entries(MANIFEST_PROBLEMS)) {
      assert.match(code, /^MANIFEST_[A-Z0-9_]+$/)
      assert.ok(entry.meaning.length > 10)
    }
  })
})
