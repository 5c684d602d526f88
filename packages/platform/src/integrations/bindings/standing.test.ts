/**
 * standingFrom, the delegation rules (spec 3.5) the broker applies to the facts of its one
 * statement and the listing to facts it reads one by one: pure, no database.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { App } from '../../apps/apps.ts'
import type { Connection } from '../connections/index.ts'
import { standingFrom, type Binding, type StandingFacts } from './bindings.ts'

const ORG = 'org-acme'
const at = new Date('2026-11-25T00:00:00Z')
const consumer: App = {
  id: 'app-desk', organisationId: ORG, ownerId: 'user-bob', slug: 'desk', name: 'Desk', visibility: 'private', status: 'active',
  pausedReason: null, activeReleaseId: 'release-1', createdAt: at, updatedAt: at,
}
const connection: Connection = {
  id: 'conn-1', organisationId: ORG, providerAppId: 'app-shop', providerAppSlug: 'shop', integration: 'orders', kind: 'personal',
  ownerId: 'user-carol', label: 'mine', status: 'active', statusReason: null, statusChangedAt: at, createdAt: at, updatedAt: at,
}
const binding: Binding = {
  id: 'binding-1', consumerAppId: consumer.id, slot: 'shop', connectionId: connection.id, userId: null, createdBy: 'user-carol',
  capabilities: ['orders.read'], createdAt: at,
}
const facts: StandingFacts = {
  binding, connection, consumer, providerAppId: 'app-shop', owner: { id: 'user-carol', organisationId: ORG }, ownerRole: 'edit', creatorMayUse: true,
}

describe('binding standing rules', () => {
  test('a personal connection whose owner holds Edit, bound by someone who may use the integration, is active', () => {
    assert.deepEqual(standingFrom(facts), { standing: 'active' })
    assert.deepEqual(standingFrom({ ...facts, ownerRole: 'administer' }), { standing: 'active' })
  })

  test('a personal connection\'s owner who is gone or in another organisation revokes it', () => {
    assert.equal(standingFrom({ ...facts, owner: null }).standing, 'revoked')
    assert.equal(standingFrom({ ...facts, owner: { id: 'user-carol', organisationId: 'org-globex' } }).standing, 'revoked')
    assert.equal(standingFrom({ ...facts, owner: { id: 'user-carol', organisationId: null } }).standing, 'revoked')
  })

  test('an app slot\'s personal connection whose owner holds less than Edit is revoked; a calling_user binding is not', () => {
    assert.equal(standingFrom({ ...facts, ownerRole: 'use' }).standing, 'revoked')
    assert.equal(standingFrom({ ...facts, ownerRole: null }).standing, 'revoked')
    assert.equal(standingFrom({ ...facts, ownerRole: null, binding: { ...binding, userId: 'user-carol' } }).standing, 'active')
  })

  test('a creator who may not use the integration suspends it, for personal and organisation connections alike', () => {
    assert.equal(standingFrom({ ...facts, creatorMayUse: false }).standing, 'suspended')
    const organisation: Connection = { ...connection, kind: 'organisation', ownerId: null }
    assert.equal(standingFrom({ ...facts, connection: organisation, owner: null, ownerRole: null, creatorMayUse: false }).standing, 'suspended')
    assert.equal(standingFrom({ ...facts, connection: organisation, owner: null, ownerRole: null }).standing, 'active')
  })

  test('consumer, connection and provider no longer sharing one organisation suspends it', () => {
    const organisation: Connection = { ...connection, kind: 'organisation', ownerId: null }
    const base = { ...facts, connection: organisation, owner: null, ownerRole: null }
    assert.equal(standingFrom({ ...base, connection: { ...organisation, organisationId: 'org-globex' } }).standing, 'suspended')
    assert.equal(standingFrom({ ...base, consumer: { ...consumer, organisationId: null } }).standing, 'suspended')
    assert.equal(standingFrom({ ...base, providerAppId: 'app-other' }).standing, 'suspended')
  })
})
