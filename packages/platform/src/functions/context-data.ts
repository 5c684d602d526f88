/**
 * `ctx.data.table(name).getById | list | create | updateById` for a running Function:
 * each call is one SQL statement under the invocation's identity (the namespace's user role
 * with the caller's claims, or its system role for a `system` Function), so row-level
 * security applies exactly as for the data API, and through the same path: on PostgreSQL the
 * namespace role's own login pool (the system role has its own), one round trip with the
 * claims and read-only set in the statement's first CTE (namespaces/namespace-sql.ts); the
 * shared wrapper on PGlite or when no pool can serve. Table and column
 * names are checked against the catalog and quoted; values are bound: the statement reads
 * `$1`, one jsonb array, and rows are built with `jsonb_populate_record` so each value gets
 * its column's type. Every table has primary key `id` (spec 2.10).
 *
 * An invocation by a custom-domain browser session (spec 5.5) keeps the data authorization
 * it started with, for CUSTOM_DOMAIN_DATA_MS: a data call after that fails AUTH_EXPIRED and
 * nothing renews it, however long the invocation still runs.
 */
import { ident, type Db } from '../db/db.ts'
import { isTransientDatabaseFailure } from '../db/errors.ts'
import { runAsRole, type Namespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql, StatementParts } from '../namespaces/namespace-sql.ts'
import type { Relation, Schema } from '../data-api/schema.ts'
import { ServiceError } from '../lib/errors.ts'
import type { DataIdentity } from '../namespaces/data-identity.ts'

export const DEFAULT_LIST_LIMIT = 100
export const MAX_LIST_LIMIT = 1000
/** How long `ctx.data` keeps its authorization in an invocation by a custom-domain session (spec 8: within 60 seconds). */
export const CUSTOM_DOMAIN_DATA_MS = 60_000

export interface DataCallOptions {
  readonly db: Db
  /** The namespace login pools (the data API's); without, each call runs through the wrapper on `db`. */
  readonly sql?: NamespaceSql
  readonly namespace: Namespace
  readonly schema: Schema
  readonly identity: DataIdentity
  /** `table.getById`, `table.list`, `table.create` or `table.updateById`. */
  readonly method: string
  /** The table name first, then the method's own arguments. */
  readonly args: readonly unknown[]
}

/**
 * Runs one `ctx.data` call and returns its JSON value.
 *
 * @example
 * const rows = await runDataCall({ db, namespace, schema, identity, method: 'table.list', args: ['tasks', { limit: 10 }] })
 */
export async function runDataCall(options: DataCallOptions): Promise<unknown> {
  const [tableName, ...rest] = options.args
  const relation = findRelation(options.schema, tableName)
  const table = `${ident(options.schema.name)}.${ident(relation.name)}`
  const idType = relation.columns.get('id')?.type
  if (idType === undefined) throw badRequest(`table ${relation.name} has no id column; ctx.data needs primary key id`)
  const write = options.method === 'table.create' || options.method === 'table.updateById'
  if (write && !options.identity.canWrite) throw new ServiceError('AUTH_REQUIRED', 'Data writes need a signed-in user')
  if (write && relation.kind !== 'table') throw badRequest(`${relation.name} is a view; ctx.data writes to tables only`)

  // `with <ctes> select <value>`: a write is a data-modifying CTE, which must be at the top.
  let ctes: string[] = []
  let value: string
  let params: unknown[]
  switch (options.method) {
    case 'table.getById': {
      value = `(select to_json(t) from ${table} t where t.id = ($1->>0)::${idType} limit 1)`
      params = [scalarId(rest[0])]
      break
    }
    case 'table.list': {
      const listOptions = objectArg(rest[0] ?? {}, 'list options')
      const columns = selectList(relation, listOptions['select'])
      const limit = listLimit(listOptions['limit'])
      const where = objectArg(listOptions['where'] ?? {}, 'where')
      params = [where]
      const conditions = Object.entries(where).map(([column, value]) => {
        checkColumn(relation, column)
        return value === null ? `t.${ident(column)} is null` : `t.${ident(column)} = w.${ident(column)}`
      })
      value = `(select coalesce(json_agg(to_json(r)), '[]'::json) from (
        select ${columns} from ${table} t, jsonb_populate_record(null::${table}, $1->0) w
        ${conditions.length > 0 ? `where ${conditions.join(' and ')}` : ''}
        limit ${limit}) r)`
      break
    }
    case 'table.create': {
      const row = objectArg(rest[0], 'row')
      const columns = Object.keys(row)
      for (const column of columns) checkColumn(relation, column)
      const list = columns.map((column) => ident(column)).join(', ')
      params = [row]
      ctes = [columns.length === 0
        ? `w as (insert into ${table} default values returning *)`
        : `w as (insert into ${table} (${list}) select ${list} from jsonb_populate_record(null::${table}, $1->0) returning *)`]
      value = '(select to_json(w) from w)'
      break
    }
    case 'table.updateById': {
      const patch = objectArg(rest[1], 'patch')
      const columns = Object.keys(patch)
      if (columns.length === 0) throw badRequest('updateById needs at least one column to change')
      for (const column of columns) checkColumn(relation, column)
      params = [scalarId(rest[0]), patch]
      ctes = [`w as (update ${table} t set ${columns.map((column) => `${ident(column)} = p.${ident(column)}`).join(', ')}
          from jsonb_populate_record(null::${table}, $1->1) p where t.id = ($1->>0)::${idType} returning t.*)`]
      value = '(select to_json(w) from w)'
      break
    }
    default:
      throw badRequest(`ctx.data has no method ${options.method}`)
  }
  const parts: StatementParts = { ctes, value, params }
  const target = { namespace: options.namespace, role: options.identity.role }
  try {
    if (options.sql) return await options.sql.statement(target, parts, { claims: options.identity.claims, readOnly: !write })
    const statement = `${ctes.length > 0 ? `with ${ctes.join(', ')} ` : ''}select ${value}`
    return await options.db.transaction(async (tx) => {
      if (!write) await tx.query('set transaction read only')
      return await runAsRole(tx, target, statement, { claims: options.identity.claims, params })
    })
  } catch (error) {
    throw databaseError(error)
  }
}

function badRequest(message: string): ServiceError {
  return new ServiceError('BAD_REQUEST', message)
}

function findRelation(schema: Schema, name: unknown): Relation {
  const relation = typeof name === 'string' ? schema.relations.get(name) : undefined
  if (relation === undefined) throw new ServiceError('NOT_FOUND', `ctx.data has no table ${String(name)}`)
  return relation
}

function checkColumn(relation: Relation, column: string): void {
  if (!relation.columns.has(column)) throw badRequest(`table ${relation.name} has no column ${column}`)
}

function objectArg(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest(`${what} must be an object`)
  return value as Record<string, unknown>
}

function scalarId(value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number') throw badRequest('id must be a string or a number')
  return String(value)
}

function selectList(relation: Relation, select: unknown): string {
  if (select === undefined) return 't.*'
  if (!Array.isArray(select) || select.length === 0 || !select.every((column) => typeof column === 'string')) {
    throw badRequest('select must be a non-empty list of column names')
  }
  for (const column of select) checkColumn(relation, column)
  return select.map((column) => `t.${ident(column)}`).join(', ')
}

function listLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw badRequest(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`)
  }
  return limit
}

/**
 * Database refusals a Function can act on become typed errors, and temporary failures
 * DATA_UNAVAILABLE (503, retryable: a queue job that does not catch it is attempted again
 * rather than dead-lettered); anything else stays unknown.
 */
function databaseError(error: unknown): unknown {
  if (error instanceof ServiceError) return error
  if (isTransientDatabaseFailure(error)) {
    return new ServiceError('DATA_UNAVAILABLE', 'The database is unavailable for now (a timeout, a conflict with another transaction or a lost connection); try again', { cause: error })
  }
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
  const message = error instanceof Error ? error.message : String(error)
  switch (code) {
    case '42501':
      return new ServiceError('FORBIDDEN', `The database refused this: ${message}`, { cause: error })
    case '23505':
      return new ServiceError('CONFLICT', `A row with this key exists already: ${message}`, { cause: error })
    case '23502': case '23503': case '23514': case '22P02': case '22007': case '22003':
      return new ServiceError('BAD_REQUEST', `The database refused the values: ${message}`, { cause: error })
    default:
      return error
  }
}
