/**
 * SQL of published integration contracts (platform.integration_contracts), one function per
 * statement. A contract counts as published only while its app is `active`: a paused,
 * suspended or archived app keeps its row but is filtered out of every read, and its name
 * may be taken over by another app's deploy.
 */
import type { Queryable } from '../db/db.ts'
import type { IntegrationContract } from '../manifest/index.ts'

export interface ContractRow extends Record<string, unknown> {
  app_id: string
  app_slug: string
  name: string
  release_id: string
  contract: IntegrationContract
  published_at: Date
}

/** Removes what the app publishes (a release without the block, or before a rename). */
export async function deleteContractOfApp(tx: Queryable, appId: string): Promise<void> {
  await tx.query('delete from platform.integration_contracts where app_id = $1', [appId])
}

/**
 * Publishes `contract` for the app, or takes the name over from an app of the organisation
 * that is no longer active. Returns false when an ACTIVE other app holds the name. Under
 * concurrency the unique (organisation_id, name) index makes the second of two publishers
 * wait for the first to commit, then see its row here and return false.
 * The app's own previous row must be deleted first (deleteContractOfApp).
 */
export async function upsertContract(
  tx: Queryable,
  row: { appId: string; organisationId: string; releaseId: string; contract: IntegrationContract; now: Date },
): Promise<boolean> {
  const published = await tx.query<{ app_id: string }>(
    `insert into platform.integration_contracts as c (app_id, organisation_id, name, release_id, contract, published_at)
     values ($1, $2, $3, $4, $5::jsonb, $6)
     on conflict (organisation_id, name) do update
        set app_id = excluded.app_id, release_id = excluded.release_id,
            contract = excluded.contract, published_at = excluded.published_at
      where not exists (select 1 from platform.apps a where a.id = c.app_id and a.status = 'active')
     returning c.app_id`,
    [row.appId, row.organisationId, row.contract.name, row.releaseId, JSON.stringify(row.contract), row.now],
  )
  return published.length === 1
}

/** Contracts that active apps of the organisation other than `exceptAppId` publish. */
export async function selectContractsOfOthers(
  db: Queryable,
  scope: { organisationId: string; exceptAppId: string },
): Promise<ContractRow[]> {
  return db.query<ContractRow>(
    `select c.app_id, a.slug as app_slug, c.name, c.release_id, c.contract, c.published_at
       from platform.integration_contracts c
       join platform.apps a on a.id = c.app_id
      where c.organisation_id = $1 and c.app_id <> $2 and a.status = 'active'
      order by c.name`,
    [scope.organisationId, scope.exceptAppId],
  )
}

/** One page of the organisation's published contracts, by name, after `afterName`. */
export async function selectOrganisationContracts(
  db: Queryable,
  page: { organisationId: string; afterName: string | null; limit: number },
): Promise<ContractRow[]> {
  return db.query<ContractRow>(
    `select c.app_id, a.slug as app_slug, c.name, c.release_id, c.contract, c.published_at
       from platform.integration_contracts c
       join platform.apps a on a.id = c.app_id
      where c.organisation_id = $1 and a.status = 'active' and ($2::text is null or c.name > $2::text)
      order by c.name
      limit $3`,
    [page.organisationId, page.afterName, page.limit],
  )
}
