/**
 * `ctx.data.search` (issue 16; spec 2.11, 4.3, 5.5, 8): one read-only SQL statement under the
 * invocation's own identity (the namespace's user role with the caller's claims, or its
 * system role), so row-level security applies to every candidate and every returned record.
 *
 * Each component picks at most CANDIDATES rows after RLS and the `where` filters, ordered by
 * its evidence then by id: full text by `ts_rank` of the declared columns against
 * `websearch_to_tsquery(language, query)`; vector by exact cosine distance, brute force (no
 * index picks candidates): pgvector's `<=>` on a vector(n) column (float4 sums, so a row
 * whose norm would overflow or underflow them gets the float8 formula instead), or the same
 * formula in float8 over a `real[]` column (the similarity clamped to [-1, 1], as pgvector
 * does). Rows whose vector is null, of another length, of zero norm or (real[]) holding NaN
 * or Infinity are no candidates. Hybrid fuses the two lists: sum of 1 / (60 + rank) over the
 * components a row is in. A record over 16 KiB or a response over 1 MiB fails
 * SEARCH_RESULT_TOO_LARGE (`result-size.ts`).
 */
import { ident, literal, type Db, type Queryable } from '../db/db.ts'
import { isTransientDatabaseFailure } from '../db/errors.ts'
import { runAsRole, type Namespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql, StatementParts } from '../namespaces/namespace-sql.ts'
import { ServiceError } from '../lib/errors.ts'
import type { SearchDeclaration } from '../manifest/index.ts'
import type { DataIdentity } from '../namespaces/data-identity.ts'
import { checkSearchDeclarations, type SearchPlan } from './declarations.ts'
import { declarationNamed, readSearchInput, type SearchInput } from './input.ts'
import { checkResultSize } from './result-size.ts'

export const CANDIDATES = 100
export const FUSION_CONSTANT = 60

export interface SearchHit {
  record: Record<string, unknown>
  fullTextScore: number | null
  fullTextRank: number | null
  vectorDistance: number | null
  vectorSimilarity: number | null
  vectorRank: number | null
  fusionScore: number | null
}

/** A release's plans, by release id (a release's schema changes only with a new release). */
const plansByRelease = new Map<string, Promise<SearchPlan[]>>()
const MAX_CACHED_RELEASES = 500

async function plansFor(db: Db, namespace: Namespace, releaseId: string): Promise<SearchPlan[]> {
  let plans = plansByRelease.get(releaseId)
  if (plans === undefined) {
    plans = (async () => {
      const rows = await db.query<{ search: SearchDeclaration[] | null }>(
        `select manifest -> 'data' -> 'search' as search from platform.releases where id = $1`, [releaseId])
      return await checkSearchDeclarations(db, namespace.schemaName, rows[0]?.search ?? [])
    })()
    if (plansByRelease.size >= MAX_CACHED_RELEASES) plansByRelease.delete(plansByRelease.keys().next().value!)
    plansByRelease.set(releaseId, plans)
    plans.catch(() => plansByRelease.delete(releaseId))
  }
  return await plans
}

export interface SearchCallOptions {
  readonly db: Db
  readonly sql?: NamespaceSql
  readonly namespace: Namespace
  readonly releaseId: string
  readonly identity: DataIdentity
  /** `[name, options]`. */
  readonly args: readonly unknown[]
}

/**
 * Runs one search and answers `{ hits }`.
 *
 * @example
 * await runSearch({ db, namespace, releaseId, identity, args: ['notes', { mode: 'fullText', query: 'tea' }] })
 */
export async function runSearch(options: SearchCallOptions): Promise<{ hits: SearchHit[] }> {
  let plans: SearchPlan[]
  try {
    plans = await plansFor(options.db, options.namespace, options.releaseId)
  } catch (error) {
    throw unavailable(error)
  }
  const plan = declarationNamed(plans, options.args[0]) as SearchPlan
  const input = readSearchInput(plan, options.args[1])
  const parts = searchStatement(options.namespace.schemaName, plan, input)
  const target = { namespace: options.namespace, role: options.identity.role }
  let hits: unknown
  try {
    if (options.sql) hits = await options.sql.statement(target, parts, { claims: options.identity.claims, readOnly: true })
    else {
      hits = await options.db.transaction(async (tx: Queryable) => {
        await tx.query('set transaction read only')
        return await runAsRole(tx, target, `with ${parts.ctes.join(', ')} select ${parts.value}`, { claims: options.identity.claims, params: parts.params })
      })
    }
  } catch (error) {
    throw searchDatabaseError(error, { search: plan.name, where: input.where })
  }
  return { hits: checkResultSize(plan.name, (hits ?? []) as SearchHit[]) }
}

/**
 * The statement: `$1` is `[query, vector, where]`. Exported for the benchmark, which runs
 * the same statement as the plain SQL floor.
 */
export function searchStatement(schema: string, plan: SearchPlan, input: SearchInput): StatementParts {
  const table = `${ident(schema)}.${ident(plan.table)}`
  // Each value is cast to its own column's type: a record of the whole table
  // (jsonb_populate_record) would check every column's domain, a NOT NULL one failing for
  // every column not filtered.
  const filters = Object.entries(input.where).map(([column, value]) =>
    value === null ? `t.${ident(column)} is null` : `t.${ident(column)} = ($1->2->>${literal(column)})::${plan.filterCasts[column]}`)
  const from = `${table} t`
  const ctes: string[] = []
  const lexical = input.mode !== 'vector'
  const semantic = input.mode !== 'fullText'
  if (lexical) {
    const language = `'${plan.fullText!.language}'::regconfig`
    const document = `to_tsvector(${language}, ${plan.fullText!.columns.map((column) => `coalesce(t.${ident(column)}::text, '')`).join(` || ' ' || `)})`
    ctes.push(`q as (select websearch_to_tsquery(${language}, $1->>0) as q)`)
    ctes.push(`ft as (select id, score, row_number() over (order by score desc, id) as rank from (
        select t.id, ts_rank(${document}, q.q)::float8 as score from ${from}, q
         where ${[`${document} @@ q.q`, ...filters].join(' and ')}
         order by score desc, t.id limit ${CANDIDATES}) c)`)
  }
  if (semantic) {
    const column = `t.${ident(plan.vector!.column)}`
    const dimensions = plan.vector!.dimensions
    if (plan.vectorPath === 'pgvector') {
      // `<=>` sums squares and products in float4: exact to about 1e-7 for a row whose norm is
      // in FLOAT4_SAFE_NORM (the query is sent scaled into it), where nothing overflows or
      // underflows. A row outside it gets the real[] path's float8 formula over its float4
      // values; a zero row gets null, and is dropped after the candidates are picked (nulls
      // sort last, so the 100 best non-null rows are all kept). The row's norm is computed
      // once (a simple CASE), so its vector is read twice per row, as before.
      const float8 = `1 - greatest(-1, least(1, (select sum(a::float8 * b::float8) from unnest(${column}::real[], vn.e) u(a, b))
                              / (extensions.vector_norm(${column}) * vn.norm)))`
      ctes.push(`v as (select ($1->1)::text::extensions.vector as v)`)
      ctes.push(`vn as (select v.v, v.v::real[] as e, extensions.vector_norm(v.v) as norm from v)`)
      ctes.push(`vc as (select id, distance, row_number() over (order by distance, id) as rank from (
          select t.id, case width_bucket(extensions.vector_norm(${column}), '{1e-46,${FLOAT4_SAFE_NORM.min},${FLOAT4_SAFE_NORM.max}}'::float8[])
                         when 0 then null when 2 then (${column} operator(extensions.<=>) vn.v)::float8 else ${float8} end as distance
            from ${from}, vn
           where ${[`${column} is not null`, ...filters].join(' and ')}
           order by distance, t.id limit ${CANDIDATES}) c
         where distance is not null)`)
    } else {
      ctes.push(`v as (select array(select e::float4::float8 from jsonb_array_elements_text($1->1) e) as v)`)
      ctes.push(`vn as (select v.v, sqrt((select sum(b * b) from unnest(v.v) b)) as norm from v)`)
      ctes.push(`vc as (select id, distance, row_number() over (order by distance, id) as rank from (
          select t.id, 1 - greatest(-1, least(1, s.dot / (sqrt(s.aa) * vn.norm))) as distance
            from ${from}, vn,
                 lateral (select sum(a::float8 * b) as dot, sum(a::float8 * a) as aa, count(a) as n
                            from unnest(${column}, vn.v) u(a, b)) s
           where ${[`cardinality(${column}) = ${dimensions}`, `s.n = ${dimensions}`, 's.aa > 0', `s.aa < 'Infinity'::float8`, ...filters].join(' and ')}
           order by distance, t.id limit ${CANDIDATES}) c)`)
    }
  }
  const idOf = lexical && semantic ? 'coalesce(ft.id, vc.id)' : lexical ? 'ft.id' : 'vc.id'
  const joined = lexical && semantic ? 'ft full join vc on vc.id = ft.id' : lexical ? 'ft' : 'vc'
  const fusion = lexical && semantic
    ? `coalesce(1.0::float8 / (${FUSION_CONSTANT} + ft.rank), 0) + coalesce(1.0::float8 / (${FUSION_CONSTANT} + vc.rank), 0)`
    : 'null::float8'
  const order = input.mode === 'hybrid' ? 'fusion desc, id' : input.mode === 'fullText' ? 'ft_rank' : 'vc_rank'
  ctes.push(`hits as (select ${idOf} as id,
      ${lexical ? 'ft.score' : 'null::float8'} as ft_score, ${lexical ? 'ft.rank' : 'null::bigint'} as ft_rank,
      ${semantic ? 'vc.distance' : 'null::float8'} as vc_distance, ${semantic ? 'vc.rank' : 'null::bigint'} as vc_rank,
      ${fusion} as fusion
    from ${joined} order by ${order} limit ${input.limit})`)
  // `r.*`, not `r`: a bare `r` would name a column `r` of the table first (the outer `t`).
  const record = `(select to_json(r.*) from (select ${plan.select.map((column) => `t.${ident(column)}`).join(', ')}) r)`
  const value = `(select coalesce(json_agg(json_build_object(
      'record', ${record},
      'fullTextScore', h.ft_score, 'fullTextRank', h.ft_rank,
      'vectorDistance', h.vc_distance, 'vectorSimilarity', 1 - h.vc_distance, 'vectorRank', h.vc_rank,
      'fusionScore', h.fusion) order by ${input.mode === 'hybrid' ? 'h.fusion desc, h.id' : input.mode === 'fullText' ? 'h.ft_rank' : 'h.vc_rank'}), '[]'::json)
    from hits h join ${table} t on t.id = h.id)`
  const vector = input.vector !== null && plan.vectorPath === 'pgvector' ? intoFloat4Band(input.vector) : input.vector
  return { ctes, value, params: [input.query, vector, input.where] }
}

/**
 * Norms within which pgvector's float4 sums neither overflow (squares up to 1e36, under
 * 3.4e38 with room for rounding) nor lose more than about 1e-16 to underflow (at most
 * 16,000 dimensions times 1.2e-38 against a product of norms of at least 1e-18). A
 * nonzero float32 vector's norm is at least 1.4e-45, so 1e-46 in the statement means zero.
 */
export const FLOAT4_SAFE_NORM = { min: '1e-9', max: '1e18' } as const

/**
 * The query vector as sent to pgvector: unchanged when its norm is in FLOAT4_SAFE_NORM,
 * otherwise its float32 values times the power of two that brings the norm near 1. That
 * product is exact (an element below 2^-126 of the norm may lose bits, which moves the
 * cosine by less than 2^-126), so the distance is the one of the vector asked.
 *
 * @example
 * intoFloat4Band([3e38, 3e38, 0]) // [0.8816..., 0.8816..., 0]: each float32 3e38 times 2^-128
 */
export function intoFloat4Band(vector: readonly number[]): number[] {
  const values = vector.map(Math.fround)
  const norm = Math.sqrt(values.reduce((sum, value) => sum + value * value, 0))
  if (norm >= Number(FLOAT4_SAFE_NORM.min) && norm < Number(FLOAT4_SAFE_NORM.max)) return [...vector]
  const scale = 2 ** -Math.round(Math.log2(norm))
  return values.map((value) => Math.fround(value * scale))
}

function unavailable(error: unknown): ServiceError {
  return new ServiceError('SEARCH_UNAVAILABLE', 'search is unavailable for a moment (database or schema); retry', { cause: error })
}

/**
 * What the database says when a value does not fit its type (invalid text, out of range,
 * bad date or time, an untranslatable character, too long, a domain's check). In a search
 * the only values the caller gives a column's type are the `where` values (readWhere checks
 * those it can; these are the rest, a date string for a date column, say).
 */
const VALUE_REFUSED = new Set(['22P02', '22003', '22007', '22008', '22P05', '22001', '23514'])

/**
 * Temporary database failures (timeouts, connections, a schema changed under the cache) are
 * retryable; a `where` value its column cannot hold is SEARCH_INPUT_INVALID.
 */
function searchDatabaseError(error: unknown, call: { search: string; where: SearchInput['where'] }): unknown {
  if (error instanceof ServiceError) return error
  const code = typeof error === 'object' && error !== null ? String((error as { code?: unknown }).code ?? '') : ''
  if (VALUE_REFUSED.has(code) && Object.values(call.where).some((value) => value !== null)) {
    return new ServiceError('SEARCH_INPUT_INVALID', `search "${call.search}": a where value does not fit its column: ${error instanceof Error ? error.message : ''}`, {
      details: { search: call.search, field: 'where' }, cause: error,
    })
  }
  if (code === '42501') return new ServiceError('FORBIDDEN', `The database refused this search: ${error instanceof Error ? error.message : ''}`, { cause: error })
  // A table or column gone under the cached plans is temporary for a search too.
  if (code === '42P01' || code === '42703' || isTransientDatabaseFailure(error)) return unavailable(error)
  return error
}
