/**
 * SQL of integration event deliveries (platform.integration_event_deliveries, migration
 * 0023), one function per statement, and the reads of other tables that emission and
 * delivery need (the published contract, a development release's contract, the bindings of
 * a connection, the consumer's running slot).
 */
import { first, type Queryable } from '../../db/db.ts'
import type { IntegrationContract, IntegrationSlot } from '../../manifest/index.ts'

/** Emission commits a notice on this channel; delivery workers LISTEN on it. */
export const EVENTS_CHANNEL = 'platform_integration_events'

export type DeliveryState = 'waiting' | 'running' | 'delivered' | 'failed'

/** The latest failure of a delivery: bounded, never the payload. */
export interface DeliveryError {
  readonly code: string
  readonly message: string
  readonly status?: number
}

export interface DeliveryRow extends Record<string, unknown> {
  id: string
  binding_id: string
  consumer_app_id: string
  slot: string
  provider_app_id: string
  provider: string
  integration_name: string
  connection_id: string
  event_id: string
  type: string
  occurred_at: Date
  state: DeliveryState
  attempts: number
  last_error: DeliveryError | null
  run_at: Date
  created_at: Date
  updated_at: Date
  delivered_at: Date | null
  finished_at: Date | null
}

/** A claimed attempt: the row with its payload. */
export interface ClaimedDelivery extends DeliveryRow {
  data: Record<string, unknown> | null
}

const COLUMNS = `id, binding_id, consumer_app_id, slot, provider_app_id, provider, integration_name, connection_id, event_id, type,
  occurred_at, state, attempts, last_error, run_at, created_at, updated_at, delivered_at, finished_at`

/** The contract a release declares (a development revision's), or null. */
export async function selectReleaseContract(db: Queryable, releaseId: string): Promise<IntegrationContract | null> {
  const row = await first<{ contract: IntegrationContract | null }>(db,
    `select manifest -> 'provides' -> 'integration' as contract from platform.releases where id = $1`, [releaseId])
  return row?.contract ?? null
}

export interface CandidateRow extends Record<string, unknown> {
  binding_id: string
  consumer_app_id: string
  slot: string
  capabilities: string[]
  /** The slot as the consumer's active production release declares it (null: none). */
  declaration: IntegrationSlot | null
}

export interface EmitFacts extends Record<string, unknown> {
  /** The contract the provider app publishes now. */
  contract: IntegrationContract
  /** The invocation's connection: its provider app and integration (null: gone). */
  connection: { provider_app_id: string; integration_name: string } | null
  /** The first page of the connection's live `account: app` bindings (`everyCandidate` reads the rest). */
  candidates: CandidateRow[]
}

/** Bindings an emission reads per statement. */
export const CANDIDATE_PAGE = 1000

/**
 * A page of the live `account: app` bindings of connection `$connection`, by id after
 * `$after` (null: from the first), each with its consumer's running slot declaration.
 */
function candidatesSql(connection: string, after: string, limit: number): string {
  return `coalesce((
      select jsonb_agg(jsonb_build_object('binding_id', b.id, 'consumer_app_id', b.consumer_app_id, 'slot', b.slot,
                                         'capabilities', b.capabilities, 'declaration', r.manifest -> 'integrations' -> b.slot) order by b.id)
        from (select * from platform.integration_bindings
               where connection_id = ${connection} and status = 'active' and user_id is null
                 and (${after}::uuid is null or id > ${after}::uuid)
               order by id limit ${limit}) b
        join platform.apps a on a.id = b.consumer_app_id
        left join platform.releases r on r.id = a.active_release_id
    ), '[]'::jsonb)`
}

/** What an emission needs, in one statement; undefined when the provider app publishes no integration. */
export async function selectEmitFacts(db: Queryable, key: { providerAppId: string; connectionId: string }): Promise<EmitFacts | undefined> {
  return first<EmitFacts>(db,
    `select c.contract,
            (select to_jsonb(x) from (select provider_app_id, integration_name from platform.connections where id = $2) x) as connection,
            ${candidatesSql('$2', 'null', CANDIDATE_PAGE)} as candidates
       from platform.integration_contracts c where c.app_id = $1`,
    [key.providerAppId, key.connectionId])
}

/**
 * Every live `account: app` binding of the connection, by id: `firstPage` when given (the
 * one selectEmitFacts read, of CANDIDATE_PAGE), then pages of `pageSize`, one statement
 * each, until a page is short.
 */
export async function* everyCandidate(
  db: Queryable, key: { connectionId: string; firstPage?: CandidateRow[]; pageSize?: number },
): AsyncGenerator<CandidateRow> {
  const pageSize = key.pageSize ?? CANDIDATE_PAGE
  const after = async (bindingId: string | null) => (await first<{ candidates: CandidateRow[] }>(db,
    `select ${candidatesSql('$1', '$2', pageSize)} as candidates`, [key.connectionId, bindingId]))!.candidates
  let page = key.firstPage ?? await after(null)
  for (;;) {
    yield* page
    if (page.length < pageSize) return
    page = await after(page.at(-1)!.binding_id)
  }
}

/** The slot `slot` as the release `releaseId` declares it (null: no such slot). */
export async function selectSlot(db: Queryable, key: { releaseId: string; slot: string }): Promise<IntegrationSlot | null> {
  const row = await first<{ declaration: IntegrationSlot | null }>(db,
    `select manifest -> 'integrations' -> $2::text as declaration from platform.releases where id = $1`, [key.releaseId, key.slot])
  return row?.declaration ?? null
}

export interface NewDelivery {
  readonly id: string
  readonly bindingId: string
  readonly consumerAppId: string
  readonly slot: string
  /** The slot's `provider` (`custom`). */
  readonly provider: string
}

/**
 * One delivery per binding of `deliveries` for the event, those already recorded for the
 * same (binding, event id) left alone; notifies the workers at commit when any is new.
 * Returns how many are new.
 */
export async function insertDeliveries(
  tx: Queryable,
  input: {
    deliveries: readonly NewDelivery[]
    event: { id: string; type: string; data: Record<string, unknown> }
    source: { providerAppId: string; integration: string; connectionId: string }
    now: Date
  },
): Promise<number> {
  const { deliveries, event, source } = input
  const rows = await tx.query<{ inserted: number }>(
    `with inserted as (
       insert into platform.integration_event_deliveries
         (id, binding_id, consumer_app_id, slot, provider_app_id, provider, integration_name, connection_id, event_id, type,
          occurred_at, data, state, run_at, created_at, updated_at)
       select d.id, d.binding_id, d.consumer_app_id, d.slot, $5, d.provider, $7, $8, $9, $10, $11, $12::jsonb, 'waiting', $11, $11, $11
         from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $6::text[]) as d (id, binding_id, consumer_app_id, slot, provider)
       on conflict (binding_id, event_id) do nothing
       returning 1
     ), counted as (select count(*)::int as n from inserted)
     select n as inserted, (select count(*) from (select pg_notify('${EVENTS_CHANNEL}', '') from counted where n > 0) x) as notified from counted`,
    [deliveries.map((d) => d.id), deliveries.map((d) => d.bindingId), deliveries.map((d) => d.consumerAppId), deliveries.map((d) => d.slot),
      source.providerAppId, deliveries.map((d) => d.provider), source.integration, source.connectionId, event.id, event.type, input.now, JSON.stringify(event.data)],
  )
  return rows[0]?.inserted ?? 0
}

/** Claims up to `limit` due deliveries, leased to `owner` for `leaseSeconds`; counts the attempt. */
export async function claimDeliveries(
  db: Queryable, options: { now: Date; limit: number; owner: string; leaseSeconds: number },
): Promise<ClaimedDelivery[]> {
  return db.query<ClaimedDelivery>(
    `with chosen as (
       select id from platform.integration_event_deliveries
        where state = 'waiting' and run_at <= $1
        order by run_at, id
        limit $2
        for update skip locked
     )
     update platform.integration_event_deliveries d
        set state = 'running', attempts = d.attempts + 1, started_at = $1, updated_at = $1, lease_owner = $3,
            lease_expires_at = $1::timestamptz + make_interval(secs => $4)
       from chosen where d.id = chosen.id
     returning d.*`,
    [options.now, options.limit, options.owner, options.leaseSeconds],
  )
}

/** Sets a running attempt's lease to the handler's own timeout plus the grace. */
export async function setLease(db: Queryable, input: { id: string; attempt: number; until: Date }): Promise<void> {
  await db.query(
    `update platform.integration_event_deliveries set lease_expires_at = $3
      where id = $1 and attempts = $2 and state = 'running'`,
    [input.id, input.attempt, input.until])
}

/**
 * Running attempts whose lease expired (their process died): each counts as a failed
 * attempt: waiting again after the schedule's delay for that attempt, or failed past the
 * schedule. `delaysSeconds[n - 1]` is the wait after attempt n.
 */
export async function recoverExpiredLeases(
  db: Queryable, options: { now: Date; error: DeliveryError; delaysSeconds: readonly number[]; limit: number },
): Promise<number> {
  const rows = await db.query<{ id: string }>(
    `with expired as (
       select id from platform.integration_event_deliveries
        where state = 'running' and lease_expires_at < $1
        order by lease_expires_at limit $4 for update skip locked
     )
     update platform.integration_event_deliveries d
        set state = case when d.attempts > cardinality($3::float8[]) then 'failed' else 'waiting' end,
            run_at = case when d.attempts > cardinality($3::float8[]) then d.run_at
                          else $1::timestamptz + make_interval(secs => ($3::float8[])[d.attempts]) end,
            data = case when d.attempts > cardinality($3::float8[]) then null else d.data end,
            finished_at = case when d.attempts > cardinality($3::float8[]) then $1 else null end,
            last_error = $2::jsonb, lease_owner = null, lease_expires_at = null, updated_at = $1
       from expired where d.id = expired.id
     returning d.id`,
    [options.now, JSON.stringify(options.error), options.delaysSeconds, options.limit],
  )
  return rows.length
}

/** The attempt succeeded: delivered, payload discarded. False when it is no longer the current attempt. */
export async function markDelivered(db: Queryable, input: { id: string; attempt: number; now: Date }): Promise<boolean> {
  const rows = await db.query(
    `update platform.integration_event_deliveries
        set state = 'delivered', data = null, delivered_at = $3, finished_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now])
  return rows.length > 0
}

/**
 * The attempt failed: waiting again at `retryAt`, or (null) failed for good with its
 * payload discarded. False when it is no longer the current attempt.
 */
export async function markFailed(
  db: Queryable, input: { id: string; attempt: number; now: Date; error: DeliveryError; retryAt: Date | null },
): Promise<boolean> {
  const rows = await db.query(
    `update platform.integration_event_deliveries
        set state = case when $5::timestamptz is null then 'failed' else 'waiting' end,
            run_at = coalesce($5::timestamptz, run_at),
            data = case when $5::timestamptz is null then null else data end,
            finished_at = case when $5::timestamptz is null then $3::timestamptz else null end,
            last_error = $4::jsonb, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running' returning id`,
    [input.id, input.attempt, input.now, JSON.stringify(input.error), input.retryAt])
  return rows.length > 0
}

/** The attempt did not really start (its worker was killed for another invocation): waiting again now, uncounted. */
export async function markNotStarted(db: Queryable, input: { id: string; attempt: number; now: Date }): Promise<void> {
  await db.query(
    `update platform.integration_event_deliveries
        set state = 'waiting', attempts = attempts - 1, run_at = $3, updated_at = $3, lease_owner = null, lease_expires_at = null
      where id = $1 and attempts = $2 and state = 'running'`,
    [input.id, input.attempt, input.now])
}

/** A page of the consumer app's deliveries, newest first, after the cursor `before`. */
export async function listDeliveries(
  db: Queryable,
  options: { appId: string; state: DeliveryState | null; before: { createdAt: Date; id: string } | null; limit: number },
): Promise<DeliveryRow[]> {
  return db.query<DeliveryRow>(
    `select ${COLUMNS} from platform.integration_event_deliveries
      where consumer_app_id = $1
        and ($2::text is null or state = $2::text)
        and ($3::timestamptz is null or (created_at, id) < ($3::timestamptz, $4::uuid))
      order by created_at desc, id desc
      limit $5`,
    [options.appId, options.state, options.before?.createdAt ?? null, options.before?.id ?? null, options.limit])
}

/** Deletes up to `limit` deliveries that ended before `before`; returns how many. */
export async function purgeFinished(db: Queryable, options: { before: Date; limit: number }): Promise<number> {
  const rows = await db.query(
    `delete from platform.integration_event_deliveries where id in (
       select id from platform.integration_event_deliveries
        where state in ('delivered', 'failed') and finished_at < $1 limit $2)
     returning id`,
    [options.before, options.limit])
  return rows.length
}
