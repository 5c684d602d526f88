/**
 * Published integration contracts (spec 2.6). A provider app's active production release
 * with `provides.integration` publishes its contract inside the app's organisation; the
 * deploy that activates the release publishes it in the same transaction, so a failed
 * deploy publishes nothing. A new release replaces the contract, a release without the block
 * unpublishes it, and an app that is not `active` publishes nothing (its row stays but every
 * read skips it, and another app may take the name over). Apps without an organisation have
 * no one to share with and publish nothing. Development releases never publish.
 *
 * The stored contract is the validated manifest block: declarations only. What callers see
 * (`contractView`) leaves out the provider's internals: Function names, the OAuth
 * client and access-token secret name, fakes.
 */
import type { Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import type { IntegrationContract, PublishedIntegration } from '../manifest/index.ts'
import {
  deleteContractOfApp, selectContractsOfOthers, selectOrganisationContracts, upsertContract, type ContractRow,
} from './queries.ts'

/** The app fields publishing reads. */
export interface PublishingApp {
  readonly id: string
  readonly slug: string
  readonly organisationId: string | null
}

/**
 * Makes `contract` (or nothing, when null) what the app publishes, inside the deploy's
 * transaction `tx`. Throws INTEGRATION_NAME_TAKEN when another active app of the
 * organisation publishes the name (including one whose deploy committed a moment ago).
 *
 * @example
 *   await publishContract(tx, { app, releaseId: release.id, contract: manifest.provides?.integration ?? null, now })
 */
export async function publishContract(
  tx: Queryable,
  input: { app: PublishingApp; releaseId: string; contract: IntegrationContract | null; now: Date },
): Promise<void> {
  const { app, contract } = input
  await deleteContractOfApp(tx, app.id)
  if (contract === null || app.organisationId === null) return
  const published = await upsertContract(tx, {
    appId: app.id, organisationId: app.organisationId, releaseId: input.releaseId, contract, now: input.now,
  })
  if (!published) {
    throw new ServiceError('INTEGRATION_NAME_TAKEN',
      `the integration name "${contract.name}" is already published by another active app of this organisation; integration names are unique in the organisation, choose another`,
      { details: { integration: contract.name, path: 'provides.integration.name' } })
  }
}

/**
 * What OTHER active apps of the app's organisation publish, in the shape the manifest
 * validator checks names, capabilities and event types against (empty without an organisation).
 */
export async function publishedIntegrationsFor(db: Queryable, app: PublishingApp): Promise<Map<string, PublishedIntegration>> {
  const published = new Map<string, PublishedIntegration>()
  if (app.organisationId === null) return published
  for (const row of await selectContractsOfOthers(db, { organisationId: app.organisationId, exceptAppId: app.id })) {
    published.set(row.name, {
      appSlug: row.app_slug,
      capabilities: row.contract.capabilities.map((c) => c.name),
      eventTypes: (row.contract.events ?? []).map((e) => e.type),
    })
  }
  return published
}

export const CONTRACT_PAGE_SIZES = { default: 50, max: 100 } as const

/** Which published contracts a caller may see (routes.ts: the provider's Use audience). */
export type ContractAudience = (row: ContractRow) => Promise<boolean>
const WHOLE_ORGANISATION: ContractAudience = async () => true

/** One page of the contracts published in `organisationId` that `audience` admits, by name. */
export async function listContracts(
  db: Queryable,
  query: { organisationId: string | null; limit?: string | undefined; nextCursor?: string | undefined; audience?: ContractAudience },
) {
  const limit = query.limit === undefined ? CONTRACT_PAGE_SIZES.default : Number(query.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > CONTRACT_PAGE_SIZES.max) {
    throw new ServiceError('VALIDATION_FAILED', `limit must be an integer from 1 to ${CONTRACT_PAGE_SIZES.max}`, { details: { field: 'limit' } })
  }
  const afterName = readCursor(query.nextCursor)
  if (query.organisationId === null) return { integrations: [], nextCursor: null }
  const audience = query.audience ?? WHOLE_ORGANISATION
  const rows = await selectOrganisationContracts(db, { organisationId: query.organisationId, afterName, limit: limit + 1 })
  const page = rows.slice(0, limit)
  const visible: ContractRow[] = []
  for (const row of page) if (await audience(row)) visible.push(row)
  const last = page[page.length - 1]
  return {
    integrations: visible.map(contractView),
    nextCursor: rows.length > limit && last !== undefined ? encodeCursor(last.name) : null,
  }
}

function encodeCursor(name: string): string {
  return Buffer.from(JSON.stringify({ after: name })).toString('base64url')
}

function readCursor(cursor: string | undefined): string | null {
  if (cursor === undefined || cursor === '') return null
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    const after = (parsed as { after?: unknown } | null)?.after
    if (typeof after === 'string' && after.length > 0 && after.length <= 200) return after
  } catch {
    // falls through to the refusal below
  }
  throw new ServiceError('VALIDATION_FAILED', 'nextCursor is not a cursor this endpoint returned', { details: { field: 'nextCursor' } })
}

/**
 * What a consumer, its builder or agent sees of a published contract: what it offers and
 * what a person enters when connecting (field names and labels, never values), not how the
 * provider implements it.
 */
export function contractView(row: ContractRow) {
  const contract = row.contract
  return {
    name: contract.name,
    title: contract.title,
    description: contract.description,
    provider: { appId: row.app_id, appSlug: row.app_slug },
    capabilities: contract.capabilities.map((c) => ({ name: c.name, description: c.description })),
    operations: (contract.operations ?? []).map((o) => ({
      name: o.name,
      capability: o.capability,
      description: o.description,
      ...(o.input === undefined ? {} : { input: o.input }),
      ...(o.output === undefined ? {} : { output: o.output }),
    })),
    events: (contract.events ?? []).map((e) => ({ type: e.type, capability: e.capability, description: e.description })),
    credentials: (contract.credentials ?? []).map((f) => ({ name: f.name, label: f.label, secret: f.secret, optional: f.optional })),
    oauth: contract.authorization !== undefined,
    sync: contract.sync !== undefined,
    webhook: contract.webhook !== undefined,
    publishedAt: row.published_at.toISOString(),
  }
}
