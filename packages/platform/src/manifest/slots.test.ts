// Tests for consumer integration slots (`integrations`) and the warnings produced when
// the organisation's published integrations are known.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { manifestWith, onlyError, valid, where } from './test-fixtures.ts'
import type { PublishedIntegration } from './types.ts'
import { validateManifest } from './validate.ts'

/** One slot "crm"; its field lines start at 16, extra lines at 21. */
const slot = (...extra: string[]) =>
  manifestWith([
    'integrations:',
    '  crm:',
    '    provider: custom',
    '    integration: acme-crm',
    '    account: app',
    '    cardinality: one',
    '    capabilities: [contacts.read, contacts.write]',
    ...extra,
  ])

const EVENTS = ['    events:', '      function: worker', '      types: [contact.created, contact.deleted]']

const published = (entry: Partial<PublishedIntegration> = {}): ReadonlyMap<string, PublishedIntegration> =>
  new Map([['acme-crm', { appSlug: 'crm-app', capabilities: ['contacts.read', 'contacts.write'], eventTypes: ['contact.created', 'contact.deleted'], ...entry }]])

describe('integration slots', () => {
  test('a slot with events is read', () => {
    const { manifest } = valid(slot(...EVENTS))
    assert.deepEqual(manifest?.integrations, {
      crm: {
        provider: 'custom',
        integration: 'acme-crm',
        account: 'app',
        cardinality: 'one',
        capabilities: ['contacts.read', 'contacts.write'],
        events: { function: 'worker', types: ['contact.created', 'contact.deleted'] },
      },
    })
  })

  test('events without types are read without types', () => {
    const { manifest } = valid(slot('    events:', '      function: worker'))
    assert.deepEqual(manifest?.integrations['crm']?.events, { function: 'worker' })
  })

  test('a slot name with a hyphen is invalid', () => {
    const error = onlyError(slot().replace('  crm:', '  my-crm:'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'integrations.my-crm', line: 15, column: 3 })
  })

  test('a slot with no value is reported at its name', () => {
    const error = onlyError(manifestWith(['integrations:', '  crm:']))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'integrations.crm', line: 15, column: 3 })
  })

  test('provider must be custom', () => {
    const error = onlyError(slot().replace('provider: custom', 'provider: salesforce'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'integrations.crm.provider', line: 16, column: 15 })
  })

  test('the integration name must be kebab-case', () => {
    const error = onlyError(slot().replace('integration: acme-crm', 'integration: Acme_CRM'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'integrations.crm.integration', line: 17, column: 18 })
  })

  test('account must be app or calling_user', () => {
    const error = onlyError(slot().replace('account: app', 'account: user'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'integrations.crm.account', line: 18, column: 14 })
  })

  test('cardinality must be one', () => {
    const error = onlyError(slot().replace('cardinality: one', 'cardinality: many'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_CHOICE', path: 'integrations.crm.cardinality', line: 19, column: 18 })
  })

  test('capabilities must not be empty', () => {
    const error = onlyError(slot().replace('[contacts.read, contacts.write]', '[]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_EMPTY_ARRAY', path: 'integrations.crm.capabilities', line: 20, column: 19 })
  })

  test('a repeated capability is reported on the repeat', () => {
    const error = onlyError(slot().replace('[contacts.read, contacts.write]', '[contacts.read, contacts.read]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_DUPLICATE_VALUE', path: 'integrations.crm.capabilities[1]', line: 20, column: 35 })
  })

  test('a missing capabilities field is reported at the slot', () => {
    const error = onlyError(slot().replace('    capabilities: [contacts.read, contacts.write]\n', ''))
    assert.deepEqual(where(error), { code: 'MANIFEST_MISSING_FIELD', path: 'integrations.crm.capabilities', line: 16, column: 5 })
  })

  test('events are not allowed on a calling_user slot', () => {
    const error = onlyError(slot(...EVENTS).replace('account: app', 'account: calling_user'))
    assert.deepEqual(where(error), { code: 'MANIFEST_SLOT_EVENTS_NOT_ALLOWED', path: 'integrations.crm.events', line: 22, column: 7 })
  })

  test('the event handler must be a declared system Function', () => {
    const notSystem = onlyError(slot('    events:', '      function: page'))
    assert.deepEqual(where(notSystem), { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'integrations.crm.events.function', line: 22, column: 17 })
    const missing = onlyError(slot('    events:', '      function: onCrmEvent'))
    assert.deepEqual(where(missing), { code: 'MANIFEST_FUNCTION_NOT_DECLARED', path: 'integrations.crm.events.function', line: 22, column: 17 })
  })

  test('event types must be dotted lowercase', () => {
    const error = onlyError(slot('    events:', '      function: worker', '      types: [ContactCreated]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_INVALID_FORMAT', path: 'integrations.crm.events.types[0]', line: 23, column: 15 })
  })

  test('an unknown slot field is reported', () => {
    const error = onlyError(slot('    operations: [contacts.list]'))
    assert.deepEqual(where(error), { code: 'MANIFEST_UNKNOWN_FIELD', path: 'integrations.crm.operations', line: 21, column: 5 })
  })

  test('slots need SDK 2.2.0', () => {
    valid(slot().replace('version: 2.6.0', 'version: 2.2.0'))
    const error = onlyError(slot().replace('version: 2.6.0', 'version: 2.1.0'))
    assert.deepEqual(where(error), { code: 'MANIFEST_SDK_VERSION_TOO_LOW', path: 'integrations', line: 15, column: 3 })
    assert.equal(error.message, 'integration slots need runtime.sdk.version 2.2.0 or later; this manifest pins 2.1.0')
  })

  test('an empty integrations mapping needs no SDK gate', () => {
    valid(manifestWith(['integrations: {}'], { sdk: '2.0.0' }))
  })
})

describe('slot warnings', () => {
  test('without published integrations in the context there are no warnings', () => {
    const result = validateManifest(slot(...EVENTS))
    assert.deepEqual(result.warnings, [])
  })

  test('an integration nobody publishes is a warning at the integration name', () => {
    const result = validateManifest(slot(...EVENTS), { publishedIntegrations: new Map() })
    assert.deepEqual(result.errors, [])
    assert.deepEqual(result.warnings.map(where), [
      { code: 'MANIFEST_INTEGRATION_NOT_PUBLISHED', path: 'integrations.crm.integration', line: 17, column: 18 },
    ])
    assert.equal(result.warnings[0]?.severity, 'warning')
    assert.notEqual(result.manifest, null)
  })

  test('a capability the integration does not offer is a warning at that capability', () => {
    const result = validateManifest(slot(), { publishedIntegrations: published({ capabilities: ['contacts.read'] }) })
    assert.deepEqual(result.warnings.map(where), [
      { code: 'MANIFEST_CAPABILITY_NOT_OFFERED', path: 'integrations.crm.capabilities[1]', line: 20, column: 35 },
    ])
    assert.match(result.warnings[0]?.message ?? '', /published by app "crm-app"\) does not offer the capability "contacts\.write"/)
  })

  test('an event type the integration does not declare is a warning at that type', () => {
    const result = validateManifest(slot(...EVENTS), { publishedIntegrations: published({ eventTypes: ['contact.created'] }) })
    assert.deepEqual(result.warnings.map(where), [
      { code: 'MANIFEST_EVENT_TYPE_NOT_OFFERED', path: 'integrations.crm.events.types[1]', line: 23, column: 32 },
    ])
  })

  test('a matching published integration gives no warnings', () => {
    assert.deepEqual(validateManifest(slot(...EVENTS), { publishedIntegrations: published() }).warnings, [])
  })

  test('warnings and errors are reported together', () => {
    const result = validateManifest(slot('    events:', '      function: page', '      types: [contact.updated]'), { publishedIntegrations: published() })
    assert.deepEqual(result.errors.map(where), [
      { code: 'MANIFEST_FUNCTION_NOT_SYSTEM', path: 'integrations.crm.events.function', line: 22, column: 17 },
    ])
    assert.deepEqual(result.warnings.map(where), [
      { code: 'MANIFEST_EVENT_TYPE_NOT_OFFERED', path: 'integrations.crm.events.types[0]', line: 23, column: 15 },
    ])
    assert.equal(result.manifest, null)
  })
})
