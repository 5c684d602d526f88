/**
 * Turns a parsed PostgREST request into ONE SQL statement that returns a single json value
 * `{ body, count }`, for the namespace wrapper to run as the caller's role. Identifiers are
 * always quoted and checked against the schema; every value from the request is a bound
 * parameter: the statement reads `$1`, one jsonb array, as `($1->>n)` and casts it to the
 * column's catalog type. Nothing from the request is ever spliced into SQL text except cast
 * types, which must match a strict type-name pattern.
 */
import { ident } from '../db/db.ts'
import { columnNotFound, PostgrestError, tableNotFound } from './errors.ts'
import type {
  Filter, JsonPath, LogicTree, MutationRequest, OrderClause, Preferences, RangeClause, ReadRequest, SelectItem,
} from './query-ast.ts'
import { resolveRelationship } from './relationships.ts'
import type { DbFunction, Relation, Schema } from './schema.ts'

/** Collects bound values; each call returns the SQL that reads the value back. */
export class Params {
  readonly values: unknown[] = []
  /** The value as text: `($1->>n)`. */
  text(value: unknown): string {
    this.values.push(value === null || value === undefined ? null : String(value))
    return `($1->>${this.values.length - 1})`
  }
  /** The value as json: `($1->n)`. */
  json(value: unknown): string {
    this.values.push(value)
    return `($1->${this.values.length - 1})`
  }
}

export interface Statement {
  sql: string
  params: unknown[]
}

const CAST_TYPE = /^[a-z_][a-z0-9_]*( [a-z_][a-z0-9_]*)*(\[\])?$/i

function castType(type: string): string {
  if (!CAST_TYPE.test(type) || type.length > 64) {
    throw new PostgrestError('PGRST100', 400, `"${type}" is not a type name that can be used in a cast`)
  }
  return type
}

interface Level {
  relation: Relation
  alias: string
  path: readonly string[]
}

/** A counter of table aliases within one statement. */
class Aliases {
  n = 0
  next(): string {
    return `t${this.n++}`
  }
}

function pathKey(path: readonly string[]): string {
  return path.join('\u0000')
}

function column(level: Level, name: string): string {
  if (!level.relation.columns.has(name)) throw columnNotFound(level.relation.name, name)
  return `${ident(level.alias)}.${ident(name)}`
}

function jsonPathSql(base: string, path: JsonPath, params: Params): string {
  let sql = base
  for (const step of path) {
    const key = typeof step.key === 'number' ? `(${params.text(step.key)})::int` : params.text(step.key)
    sql = `(${sql}${step.op}${key})`
  }
  return sql
}

/** The SQL type a filter value is cast to for a column (or json path) comparison. */
function valueType(level: Level, name: string, path: JsonPath): string {
  if (path.length > 0) return path.at(-1)!.op === '->>' ? 'text' : 'jsonb'
  return level.relation.columns.get(name)!.type
}

const COMPARISON: Record<string, string> = {
  eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=', like: 'like', ilike: 'ilike', match: '~', imatch: '~*',
  cs: '@>', cd: '<@', ov: '&&', sl: '<<', sr: '>>', nxr: '&<', nxl: '&>', adj: '-|-', isdistinct: 'is distinct from',
}
const FTS: Record<string, string> = { fts: 'to_tsquery', plfts: 'plainto_tsquery', phfts: 'phraseto_tsquery', wfts: 'websearch_to_tsquery' }
const TEXT_OPERATORS = new Set(['like', 'ilike', 'match', 'imatch'])

function filterSql(level: Level, filter: Filter, params: Params): string {
  const target = jsonPathSql(column(level, filter.column), filter.jsonPath, params)
  const type = valueType(level, filter.column, filter.jsonPath)
  let sql: string
  switch (filter.op) {
    case 'is':
      sql = `${target} is ${{ null: 'null', not_null: 'not null', true: 'true', false: 'false', unknown: 'unknown' }[filter.value]}`
      break
    case 'in':
      sql = `${target} = any(array(select jsonb_array_elements_text(${params.json(filter.value)}))::${type}[])`
      break
    case 'fts':
    case 'plfts':
    case 'phfts':
    case 'wfts': {
      const fn = FTS[filter.op]!
      const query = filter.language
        ? `${fn}(${params.text(filter.language)}::regconfig, ${params.text(filter.value)})`
        : `${fn}(${params.text(filter.value)})`
      sql = `${target} @@ ${query}`
      break
    }
    default: {
      const operator = COMPARISON[filter.op]!
      const textual = TEXT_OPERATORS.has(filter.op)
      const left = textual ? `${target}::text` : target
      if ('quantifier' in filter && filter.quantifier) {
        const elementType = textual ? 'text' : type
        sql = `${left} ${operator} ${filter.quantifier}(${params.text(filter.value)}::${elementType}[])`
      } else {
        sql = `${left} ${operator} ${params.text(filter.value)}::${textual ? 'text' : type}`
      }
    }
  }
  return filter.negated ? `not (${sql})` : sql
}

function logicSql(level: Level, tree: LogicTree, params: Params): string {
  const parts = tree.children.map((child) => (child.kind === 'filter' ? filterSql(level, child, params) : logicSql(level, child, params)))
  const joined = parts.length === 0 ? 'true' : `(${parts.join(tree.kind === 'and' ? ' and ' : ' or ')})`
  return tree.negated ? `not ${joined}` : joined
}

interface RequestParts {
  filters: readonly Filter[]
  logic: readonly LogicTree[]
  order: readonly OrderClause[]
  ranges: readonly RangeClause[]
}

function conditionsAt(level: Level, parts: RequestParts, params: Params): string[] {
  const key = pathKey(level.path)
  return [
    ...parts.filters.filter((f) => pathKey(f.path) === key).map((f) => filterSql(level, f, params)),
    ...parts.logic.filter((l) => pathKey(l.path) === key).map((l) => logicSql(level, l, params)),
  ]
}

function orderAt(level: Level, parts: RequestParts, params: Params): string {
  const clause = parts.order.find((o) => pathKey(o.path) === pathKey(level.path))
  if (!clause || clause.terms.length === 0) return ''
  return ' order by ' + clause.terms.map((term) => {
    if (term.relation !== undefined) {
      throw new PostgrestError('PGRST100', 400, 'ordering by a column of an embedded resource is not supported yet')
    }
    const expr = jsonPathSql(column(level, term.column), term.jsonPath, params)
    return `${expr}${term.direction ? ` ${term.direction}` : ''}${term.nulls ? ` nulls ${term.nulls}` : ''}`
  }).join(', ')
}

function windowSql(window: { offset: number; limit: number | null }, params: Params): string {
  return `${window.limit !== null ? ` limit (${params.text(window.limit)})::bigint` : ''}${window.offset > 0 ? ` offset (${params.text(window.offset)})::bigint` : ''}`
}

/** The default output name of a selected column: its alias, else the last json key, else its name. */
function outputName(item: Extract<SelectItem, { kind: 'column' }>): string {
  if (item.alias) return item.alias
  const last = item.jsonPath.at(-1)
  return last ? String(last.key) : item.name
}

interface BuildContext {
  schema: Schema
  params: Params
  aliases: Aliases
  parts: RequestParts
}

/** The select list of one level (and the conditions `!inner` embeds add to it). */
function selectList(ctx: BuildContext, level: Level, items: readonly SelectItem[]): { columns: string[]; conditions: string[] } {
  const columns: string[] = []
  const conditions: string[] = []
  for (const item of items) {
    if (item.kind === 'star') {
      for (const name of level.relation.columns.keys()) columns.push(`${ident(level.alias)}.${ident(name)}`)
      continue
    }
    if (item.kind === 'column') {
      let expr = jsonPathSql(column(level, item.name), item.jsonPath, ctx.params)
      if (item.cast) expr = `(${expr})::${castType(item.cast)}`
      columns.push(`${expr} as ${ident(outputName(item))}`)
      continue
    }
    const relationship = resolveRelationship(ctx.schema, level.relation, item.relation, item.hint)
    const child: Level = {
      relation: relationship.target,
      alias: ctx.aliases.next(),
      path: [...level.path, item.alias ?? item.relation],
    }
    const from = `${ident(ctx.schema.name)}.${ident(child.relation.name)} as ${ident(child.alias)}`
    const join = relationship.join.map(([p, c]) => `${ident(child.alias)}.${ident(c)} = ${ident(level.alias)}.${ident(p)}`)
    const inner = selectList(ctx, child, item.select)
    const where = [...join, ...conditionsAt(child, ctx.parts, ctx.params), ...inner.conditions]
    const whereSql = ` where ${where.join(' and ')}`
    if (item.inner) conditions.push(`exists (select 1 from ${from}${whereSql})`)
    if (item.select.length === 0) continue
    const name = ident(item.alias ?? item.relation)
    if (relationship.cardinality === 'many-to-one') {
      if (item.spread) {
        for (const col of inner.columns) {
          const label = /\bas ("(?:[^"]|"")+")$/.exec(col)?.[1] ?? col.slice(col.lastIndexOf('.') + 1)
          columns.push(`(select ${col.replace(/ as "(?:[^"]|"")+"$/, '')} from ${from}${whereSql} limit 1) as ${label}`)
        }
      } else {
        columns.push(`(select row_to_json(_e) from (select ${inner.columns.join(', ') || 'null'} from ${from}${whereSql} limit 1) _e) as ${name}`)
      }
    } else {
      if (item.spread) throw new PostgrestError('PGRST119', 400, `a to-many resource cannot be spread: '${item.relation}'`)
      const range = ctx.parts.ranges.find((r) => pathKey(r.path) === pathKey(child.path))
      columns.push(`coalesce((select json_agg(_e) from (select ${inner.columns.join(', ') || 'null'} from ${from}${whereSql}` +
        `${orderAt(child, ctx.parts, ctx.params)}${range ? windowSql(range, ctx.params) : ''}) _e), '[]'::json) as ${name}`)
    }
  }
  return { columns, conditions }
}

function relationOf(schema: Schema, name: string): Relation {
  const relation = schema.relations.get(name)
  if (!relation) throw tableNotFound(schema.name, name)
  return relation
}

/** `json_build_object('body', ..., 'count', ...)` over the rows of `pgrst_source`. */
function envelope(body: string, count: string): string {
  return `select json_build_object('body', ${body}, 'count', ${count})`
}

const ROWS = `coalesce((select json_agg(_s) from pgrst_source _s), '[]'::json)`

export function buildRead(schema: Schema, request: ReadRequest, prefer: Preferences): Statement {
  const params = new Params()
  const ctx: BuildContext = { schema, params, aliases: new Aliases(), parts: request }
  const root: Level = { relation: relationOf(schema, request.resource), alias: ctx.aliases.next(), path: [] }
  const list = selectList(ctx, root, request.select)
  const where = [...conditionsAt(root, request, params), ...list.conditions]
  const from = `${ident(schema.name)}.${ident(root.relation.name)} as ${ident(root.alias)}`
  const whereSql = where.length > 0 ? ` where ${where.join(' and ')}` : ''
  const count = prefer.count === 'exact' || prefer.count === 'estimated' ? `(select count(*) from ${from}${whereSql})` : 'null'
  const sql = `with pgrst_source as (select ${list.columns.join(', ') || 'null as "?column?"'} from ${from}${whereSql}` +
    `${orderAt(root, request, params)}${windowSql(request, params)}) ${envelope(ROWS, count)}`
  return { sql, params: params.values }
}

/** The representation of written rows: the request's select list over `pgrst_source`. */
function representation(ctx: BuildContext, relation: Relation, select: readonly SelectItem[]): string {
  const level: Level = { relation, alias: 'pgrst_written', path: [] }
  const list = selectList(ctx, level, select)
  return `coalesce((select json_agg(_s) from (select ${list.columns.join(', ') || 'null'} from pgrst_source as "pgrst_written") _s), '[]'::json)`
}

/** Payload columns: `columns=` when given, else every key of every object. */
function payloadColumns(relation: Relation, rows: readonly Record<string, unknown>[], requested: readonly string[] | undefined): string[] {
  const names = requested ? [...requested] : [...new Set(rows.flatMap((row) => Object.keys(row)))]
  for (const name of names) {
    if (!relation.columns.has(name)) {
      throw new PostgrestError('PGRST204', 400, `Could not find the '${name}' column of '${relation.name}' in the schema cache`)
    }
  }
  return names
}

export interface WriteInput {
  request: MutationRequest
  prefer: Preferences
  /** The parsed JSON body: an object, or an array of objects for POST. */
  body: unknown
}

function rowsOf(body: unknown, allowArray: boolean): Record<string, unknown>[] {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (isObject(body)) return [body]
  if (allowArray && Array.isArray(body) && body.every(isObject)) return body
  throw new PostgrestError('PGRST102', 400, allowArray ? 'Empty or invalid json: the body must be an object or an array of objects' : 'Empty or invalid json: the body must be an object')
}

export function buildWrite(schema: Schema, input: WriteInput): Statement {
  const { request, prefer } = input
  const params = new Params()
  const ctx: BuildContext = { schema, params, aliases: new Aliases(), parts: request }
  const relation = relationOf(schema, request.resource)
  const table = `${ident(schema.name)}.${ident(relation.name)}`
  const target: Level = { relation, alias: 'pgrst_target', path: [] }
  let write: string
  if (request.method === 'POST') {
    const rows = rowsOf(input.body, true)
    const columns = payloadColumns(relation, rows, request.columns)
    const quoted = columns.map(ident)
    if (rows.length === 0 || columns.length === 0) {
      write = rows.length === 0
        ? `select * from ${table} where false`
        : `insert into ${table} as "pgrst_target" default values returning "pgrst_target".*`
      if (rows.length > 1 && columns.length === 0) {
        throw new PostgrestError('PGRST102', 400, 'Empty or invalid json: objects without columns')
      }
    } else if (prefer.missing === 'default') {
      const values = rows.map((row) => `(${columns.map((name) => name in row
        ? `(select _r.${ident(name)} from json_populate_record(null::${table}, ${params.json(row)}::json) _r)`
        : 'default').join(', ')})`)
      write = `insert into ${table} as "pgrst_target" (${quoted.join(', ')}) values ${values.join(', ')}`
    } else {
      write = `insert into ${table} as "pgrst_target" (${quoted.join(', ')}) select ${columns.map((c) => `_r.${ident(c)}`).join(', ')}` +
        ` from json_populate_recordset(null::${table}, ${params.json(rows)}::json) _r`
    }
    if (rows.length > 0 && columns.length > 0) {
      const conflict = request.onConflict ?? (prefer.resolution ? relation.primaryKey : undefined)
      if (prefer.resolution && conflict) {
        if (conflict.length === 0) throw new PostgrestError('PGRST100', 400, 'an upsert needs on_conflict or a primary key')
        for (const name of conflict) if (!relation.columns.has(name)) throw columnNotFound(relation.name, name)
        const updates = columns.filter((c) => !conflict.includes(c)).map((c) => `${ident(c)} = excluded.${ident(c)}`)
        write += ` on conflict (${conflict.map(ident).join(', ')}) ` +
          (prefer.resolution === 'ignore-duplicates' || updates.length === 0 ? 'do nothing' : `do update set ${updates.join(', ')}`)
      }
      write += ' returning "pgrst_target".*'
    }
  } else if (request.method === 'PATCH') {
    const [row] = rowsOf(input.body, false)
    const columns = payloadColumns(relation, [row!], request.columns)
    const where = conditionsAt(target, request, params)
    const limited = limitedRows(table, target, request, params)
    if (columns.length === 0) {
      write = `select * from ${table} as "pgrst_target" where false`
    } else {
      write = `update ${table} as "pgrst_target" set ${columns.map((c) => `${ident(c)} = _r.${ident(c)}`).join(', ')}` +
        ` from json_populate_record(null::${table}, ${params.json(row)}::json) _r` +
        `${limited ?? (where.length > 0 ? ` where ${where.join(' and ')}` : '')} returning "pgrst_target".*`
    }
  } else if (request.method === 'DELETE') {
    const where = conditionsAt(target, request, params)
    const limited = limitedRows(table, target, request, params)
    write = `delete from ${table} as "pgrst_target"${limited ?? (where.length > 0 ? ` where ${where.join(' and ')}` : '')} returning "pgrst_target".*`
  } else {
    throw new PostgrestError('PGRST117', 405, `Unsupported HTTP method: ${request.method}`)
  }
  const body = prefer.return === 'representation' ? representation(ctx, relation, request.select) : 'null'
  const keys = relation.primaryKey.length > 0
    ? `(select json_agg(json_build_object(${relation.primaryKey.map((k) => `'${k.replace(/'/g, "''")}', ${ident(k)}`).join(', ')})) from pgrst_source)`
    : 'null'
  return {
    sql: `with pgrst_source as (${write}) select json_build_object('body', ${body}, 'count', (select count(*) from pgrst_source), 'keys', ${keys})`,
    params: params.values,
  }
}

/** PATCH/DELETE with order and limit (PostgREST 12 limited writes): pick rows by ctid. */
function limitedRows(table: string, target: Level, request: MutationRequest, params: Params): string | null {
  if (request.limit === null && request.offset === 0) return null
  const inner: Level = { ...target, alias: 'pgrst_pick' }
  const conditions = conditionsAt(inner, request, params)
  return ` where "pgrst_target".ctid = any(array(select "pgrst_pick".ctid from ${table} as "pgrst_pick"` +
    `${conditions.length > 0 ? ` where ${conditions.join(' and ')}` : ''}${orderAt(inner, request, params)}${windowSql(request, params)}))`
}

/** Picks the overload whose argument names fit the given ones. */
export function chooseFunction(schema: Schema, name: string, given: ReadonlySet<string>): DbFunction {
  const overloads = schema.functions.get(name) ?? []
  const fits = overloads.filter((fn) =>
    [...given].every((arg) => fn.arguments.some((a) => a.name === arg)) &&
    fn.arguments.every((a) => a.hasDefault || given.has(a.name)))
  if (fits.length === 1) return fits[0]!
  if (fits.length === 0) {
    throw new PostgrestError('PGRST202', 404,
      `Could not find the function ${schema.name}.${name}${given.size ? `(${[...given].sort().join(', ')})` : ' without parameters'} in the schema cache`)
  }
  throw new PostgrestError('PGRST203', 300, `Could not choose the best candidate function between several overloads of ${name}`)
}

/** A call of an app database function with named arguments from a JSON object. */
export function buildCall(schema: Schema, fn: DbFunction, args: Record<string, unknown>, request: ReadRequest, prefer: Preferences): Statement {
  const params = new Params()
  const given = fn.arguments.filter((a) => a.name in args)
  const record = given.length > 0
    ? ` from json_to_record(${params.json(args)}::json) as _args(${given.map((a) => `${ident(a.name)} ${a.type}`).join(', ')})`
    : ''
  const call = `${ident(schema.name)}.${ident(fn.name)}(${given.map((a) => `${ident(a.name)} => _args.${ident(a.name)}`).join(', ')})`
  if (fn.returnsScalar) {
    const sql = fn.returnsSet
      ? `select json_build_object('body', coalesce((select json_agg(_v) from (select ${call} as _v${record}) _x), '[]'::json), 'count', null)`
      : `select json_build_object('body', (select to_json(${call})${record}), 'count', null)`
    return { sql, params: params.values }
  }
  const ctx: BuildContext = { schema, params, aliases: new Aliases(), parts: request }
  const returned = fn.returnsRelation ? schema.relations.get(fn.returnsRelation) : undefined
  const source = `(select (${call}).*${record})`
  if (!returned) {
    const rows = `coalesce((select json_agg(_s) from ${source} _s), '[]'::json)`
    const body = fn.returnsSet ? rows : `(select row_to_json(_s) from ${source} _s)`
    return { sql: `select json_build_object('body', ${body}, 'count', null)`, params: params.values }
  }
  const root: Level = { relation: returned, alias: ctx.aliases.next(), path: [] }
  const list = selectList(ctx, root, request.select)
  const where = [...conditionsAt(root, request, params), ...list.conditions]
  const whereSql = where.length > 0 ? ` where ${where.join(' and ')}` : ''
  const from = `${source} as ${ident(root.alias)}`
  const count = prefer.count === 'exact' ? `(select count(*) from ${from}${whereSql})` : 'null'
  const inner = `select ${list.columns.join(', ') || 'null'} from ${from}${whereSql}${orderAt(root, request, params)}${windowSql(request, params)}`
  const body = fn.returnsSet ? ROWS : `(select row_to_json(_s) from pgrst_source _s limit 1)`
  return { sql: `with pgrst_source as (${inner}) ${envelope(body, count)}`, params: params.values }
}
