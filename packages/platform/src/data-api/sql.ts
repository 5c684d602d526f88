/**
 * Turns a parsed PostgREST request into ONE SQL statement that returns a single json value
 * `{ body, count, ... }`, for the namespace wrapper to run as the caller's role. Identifiers
 * are always quoted and checked against the schema; every value from the request is a bound
 * parameter: the statement reads `$1`, one jsonb array, as `($1->>n)` and casts it to the
 * column's catalog type. Nothing from the request is ever spliced into SQL text except cast
 * types, which must be a single type name or one of PostgreSQL's multi-word ones.
 *
 * Counts (`Prefer: count=...`), as PostgREST defines them:
 * - `exact`: `count(*)` over the filtered rows, in the same statement;
 * - `planned`: the planner's row estimate for the filtered rows: the statement carries
 *   `countSource` and the handler runs `explain (format json)` on it through the same
 *   wrapper, in the same transaction;
 * - `estimated`: exact while the count stays below `ESTIMATE_EXACT_BELOW` rows (the statement
 *   counts at most that many), else the planner's estimate, never less than the rows known
 *   to exist. PostgREST counts everything first and compares with `db-max-rows`; bounding the
 *   exact count is the point of asking for an estimate, so we stop counting early.
 */
import { ident } from '../db/db.ts'
import { columnNotFound, PostgrestError, tableNotFound } from './errors.ts'
import type {
  EmbedSelect, Filter, JsonPath, LogicTree, MutationRequest, OrderClause, Preferences, RangeClause, ReadRequest, SelectItem,
} from './query-ast.ts'
import { isToOne, resolveRelationship, type Relationship } from './relationships.ts'
import type { DbFunction, Relation, Schema } from './schema.ts'

/** `count=estimated` is exact below this many rows, the planner's estimate from there on. */
export const ESTIMATE_EXACT_BELOW = 1000

/**
 * `$1`, the jsonb array of bound values. Read directly (not through a CTE or subquery) so
 * that, where the statement is planned with its values (the wrapper, an explain, the first
 * runs of a prepared statement), the planner folds each into a constant: its estimates,
 * `count=planned` and partial indexes keep working. A prepared statement may settle on a
 * generic plan later, which PostgreSQL chooses only when it costs no more than those. The cast names its type for a statement prepared by the driver,
 * where nothing else would (`unknown ->> integer` is ambiguous); inside the wrapper the
 * value is already jsonb and the cast costs nothing.
 */
const PARAMS = '$1::jsonb'

/** The statement as plain SQL, `with <ctes> select <value>`. */
export function statementSql(statement: Pick<Statement, 'ctes' | 'value'>): string {
  return statement.ctes.length > 0 ? `with ${statement.ctes.join(', ')} select ${statement.value}` : `select ${statement.value}`
}

/** Collects bound values; each call returns the SQL that reads the value back. */
export class Params {
  readonly values: unknown[] = []
  /** The value as text: `($1->>n)`. */
  text(value: unknown): string {
    this.values.push(value === null || value === undefined ? null : String(value))
    return `(${PARAMS}->>${this.values.length - 1})`
  }
  /** The value as json: `($1->n)`. */
  json(value: unknown): string {
    this.values.push(value)
    return `(${PARAMS}->${this.values.length - 1})`
  }
}

/**
 * One statement in parts, so the executor can put its own CTE first (claims, read-only) and
 * read the value from it: `with <ctes> select <value>`.
 */
export interface Statement {
  /** `name as (...)` entries, in order. */
  ctes: string[]
  /** The one json value the statement answers, `{ body, count, ... }`. */
  value: string
  params: unknown[]
  /**
   * `select 1 from ... where ...` over the rows a count would count, for the planner's estimate
   * (`count=planned|estimated`); reads the same `$1`.
   */
  countSource?: string
  /**
   * The envelope's `body` is the response's JSON as PostgreSQL wrote it (a string), shaped
   * for the media type (`BodyShape`), to be sent as it is: nothing is parsed into JavaScript
   * values and written again, so numbers keep every digit (a bigint past 2^53, a numeric).
   */
  bodyText?: true
  /** With `bodyText`: the envelope without its body, and the body's text expression (namespace-sql.ts). */
  split?: { value: string; text: string }
}

/** How a response of rows is written, for a statement that answers it as text (`bodyText`). */
export interface BodyShape {
  /** One object (the first row) instead of an array; the caller checks that there was one row. */
  single: boolean
  /** `nulls=stripped`: `json_strip_nulls`, object keys whose value is null go, at every depth. */
  stripNulls: boolean
}

/**
 * Cast types are the one piece of request text in the SQL, so only a single identifier
 * (`text`, `int8`, `jsonb`, an app's own type) or one of PostgreSQL's multi-word type names is
 * accepted. The parser lets spaces through (`character varying`); words separated by spaces
 * could otherwise continue the statement (`text as x from t`).
 */
const CAST_TYPE = /^[a-z_][a-z0-9_$]*$/
const MULTI_WORD_TYPES: ReadonlySet<string> = new Set([
  'bit varying', 'character varying', 'double precision',
  'time with time zone', 'time without time zone', 'timestamp with time zone', 'timestamp without time zone',
])

function castType(type: string): string {
  const name = type.trim().toLowerCase().replace(/[ \t]+/g, ' ')
  if (name.length > 64 || !(CAST_TYPE.test(name) || MULTI_WORD_TYPES.has(name))) {
    throw new PostgrestError('PGRST100', 400, `"${type.slice(0, 64)}" is not a type name that can be used in a cast`, {
      hint: 'Cast to a single type name such as text, int, numeric or jsonb',
    })
  }
  return name
}

interface Level {
  relation: Relation
  alias: string
  path: readonly string[]
  /** The level's select items: embeds there can be ordered by and filtered for null. */
  items: readonly SelectItem[]
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

const JSON_TYPES: ReadonlySet<string> = new Set(['json', 'jsonb'])

function isJsonColumn(level: Level, name: string): boolean {
  return JSON_TYPES.has(level.relation.columns.get(name)?.type ?? '')
}

/**
 * A column with its JSON path. Arrays and composites are turned into jsonb first, so
 * `tags->0` indexes a `text[]` column as PostgREST does.
 */
function fieldSql(level: Level, name: string, path: JsonPath, params: Params): string {
  const base = column(level, name)
  if (path.length === 0) return base
  let sql = isJsonColumn(level, name) ? base : `to_jsonb(${base})`
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

/** `exists (...)` for each embed of a level, by its name in the request: for `embed=is.null`. */
type EmbedExists = ReadonlyMap<string, string>

function filterSql(level: Level, filter: Filter, params: Params, embeds: EmbedExists): string {
  const exists = embeds.get(filter.column)
  if (exists !== undefined && filter.jsonPath.length === 0 && filter.op === 'is' && (filter.value === 'null' || filter.value === 'not_null')) {
    // `embed=is.null` is an anti-join, `embed=not.is.null` works like `!inner` (PostgREST 11+).
    const present = (filter.value === 'not_null') !== filter.negated
    return present ? exists : `not ${exists}`
  }
  const target = fieldSql(level, filter.column, filter.jsonPath, params)
  const type = valueType(level, filter.column, filter.jsonPath)
  // `->` yields json for a json column; compare as jsonb so `=` exists.
  const left = type === 'jsonb' && filter.jsonPath.length > 0 ? `(${target})::jsonb` : target
  let sql: string
  switch (filter.op) {
    case 'is':
      sql = `${left} is ${{ null: 'null', not_null: 'not null', true: 'true', false: 'false', unknown: 'unknown' }[filter.value]}`
      break
    case 'in':
      sql = `${left} = any(array(select jsonb_array_elements_text(${params.json(filter.value)}))::${type}[])`
      break
    case 'fts':
    case 'plfts':
    case 'phfts':
    case 'wfts': {
      const fn = FTS[filter.op]!
      const language = filter.language === undefined ? null : `${params.text(filter.language)}::regconfig`
      const query = language ? `${fn}(${language}, ${params.text(filter.value)})` : `${fn}(${params.text(filter.value)})`
      // A tsvector is searched as it is; text (and json) is turned into one in the same language.
      const vector = filter.jsonPath.length === 0 && level.relation.columns.get(filter.column)!.type === 'tsvector'
      const document = vector ? target : type === 'jsonb' || type === 'json' ? left : `${left}::text`
      sql = `${vector ? target : `to_tsvector(${language ? `${language}, ` : ''}${document})`} @@ ${query}`
      break
    }
    default: {
      const operator = COMPARISON[filter.op]!
      const textual = TEXT_OPERATORS.has(filter.op)
      const operand = textual ? `${left}::text` : left
      if ('quantifier' in filter && filter.quantifier) {
        const elementType = textual ? 'text' : type
        sql = `${operand} ${operator} ${filter.quantifier}(${params.text(filter.value)}::${elementType}[])`
      } else {
        sql = `${operand} ${operator} ${params.text(filter.value)}::${textual ? 'text' : type}`
      }
    }
  }
  return filter.negated ? `not (${sql})` : sql
}

function logicSql(level: Level, tree: LogicTree, params: Params, embeds: EmbedExists): string {
  const parts = tree.children.map((child) => (child.kind === 'filter' ? filterSql(level, child, params, embeds) : logicSql(level, child, params, embeds)))
  const joined = parts.length === 0 ? 'true' : `(${parts.join(tree.kind === 'and' ? ' and ' : ' or ')})`
  return tree.negated ? `not ${joined}` : joined
}

interface RequestParts {
  filters: readonly Filter[]
  logic: readonly LogicTree[]
  order: readonly OrderClause[]
  ranges: readonly RangeClause[]
}

function conditionsAt(level: Level, parts: RequestParts, params: Params, embeds: EmbedExists = new Map()): string[] {
  const key = pathKey(level.path)
  return [
    ...parts.filters.filter((f) => pathKey(f.path) === key).map((f) => filterSql(level, f, params, embeds)),
    ...parts.logic.filter((l) => pathKey(l.path) === key).map((l) => logicSql(level, l, params, embeds)),
  ]
}

interface BuildContext {
  schema: Schema
  params: Params
  aliases: Aliases
  parts: RequestParts
}

function embedName(item: EmbedSelect): string {
  return item.alias ?? item.relation
}

function joinSql(relationship: Relationship, parentAlias: string, childAlias: string): string[] {
  return relationship.join.map(([p, c]) => `${ident(childAlias)}.${ident(c)} = ${ident(parentAlias)}.${ident(p)}`)
}

/** `order=author(name).desc`: a column of a to-one embed of this level. */
function relatedOrderSql(ctx: BuildContext, level: Level, relation: string, field: { column: string; jsonPath: JsonPath }): string {
  const embed = level.items.find((item): item is EmbedSelect => item.kind === 'embed' && embedName(item) === relation)
  if (!embed) {
    throw new PostgrestError('PGRST108', 400, `'${relation}' is not an embedded resource in this request`, {
      hint: `Verify that '${relation}' is included in the 'select' query parameter.`,
    })
  }
  const relationship = resolveRelationship(ctx.schema, level.relation, embed.relation, embed.hint)
  if (!isToOne(relationship)) {
    throw new PostgrestError('PGRST118', 400, `A related order on '${relation}' is not possible`, {
      details: `'${level.relation.name}' and '${relationship.target.name}' do not form a many-to-one or one-to-one relationship`,
    })
  }
  const child: Level = { relation: relationship.target, alias: ctx.aliases.next(), path: [], items: [] }
  const expr = fieldSql(child, field.column, field.jsonPath, ctx.params)
  return `(select ${expr} from ${ident(ctx.schema.name)}.${ident(child.relation.name)} as ${ident(child.alias)}` +
    ` where ${joinSql(relationship, level.alias, child.alias).join(' and ')} limit 1)`
}

function orderAt(ctx: BuildContext, level: Level): string {
  const clause = ctx.parts.order.find((o) => pathKey(o.path) === pathKey(level.path))
  if (!clause || clause.terms.length === 0) return ''
  return ' order by ' + clause.terms.map((term) => {
    const expr = term.relation !== undefined
      ? relatedOrderSql(ctx, level, term.relation, term)
      : fieldSql(level, term.column, term.jsonPath, ctx.params)
    return `${expr}${term.direction ? ` ${term.direction}` : ''}${term.nulls ? ` nulls ${term.nulls}` : ''}`
  }).join(', ')
}

function windowSql(window: { offset: number; limit: number | null }, params: Params): string {
  return `${window.limit !== null ? ` limit (${params.text(window.limit)})::bigint` : ''}${window.offset > 0 ? ` offset (${params.text(window.offset)})::bigint` : ''}`
}

/**
 * The default output name of a selected column, as PostgREST names it: its alias, else the
 * last key of its JSON path (`data->a->>0` is `a`), else the column (`data->>0` is `data`).
 */
function outputName(item: Extract<SelectItem, { kind: 'column' }>): string {
  if (item.alias) return item.alias
  const key = item.jsonPath.findLast((step) => typeof step.key === 'string')?.key
  return typeof key === 'string' ? key : item.name
}

/** One output column: the SQL expression and the JSON key it becomes. */
interface Output {
  expr: string
  name: string
}

function outputsSql(outputs: readonly Output[]): string {
  return outputs.map((o) => `${o.expr} as ${ident(o.name)}`).join(', ')
}

interface SelectList {
  outputs: Output[]
  /** Conditions the level's `!inner` embeds add. */
  conditions: string[]
  /** `exists (...)` of every embed, by its name, for null filters on embeds. */
  embeds: Map<string, string>
}

/** The select list of one level, with what its embeds add to the level's conditions. */
function selectList(ctx: BuildContext, level: Level): SelectList {
  const outputs: Output[] = []
  const conditions: string[] = []
  const embeds = new Map<string, string>()
  for (const item of level.items) {
    if (item.kind === 'star') {
      for (const name of level.relation.columns.keys()) outputs.push({ expr: `${ident(level.alias)}.${ident(name)}`, name })
      continue
    }
    if (item.kind === 'column') {
      let expr = fieldSql(level, item.name, item.jsonPath, ctx.params)
      if (item.cast) expr = `(${expr})::${castType(item.cast)}`
      outputs.push({ expr, name: outputName(item) })
      continue
    }
    const relationship = resolveRelationship(ctx.schema, level.relation, item.relation, item.hint)
    const child: Level = {
      relation: relationship.target,
      alias: ctx.aliases.next(),
      path: [...level.path, embedName(item)],
      items: item.select,
    }
    const from = `${ident(ctx.schema.name)}.${ident(child.relation.name)} as ${ident(child.alias)}`
    const inner = selectList(ctx, child)
    const where = [...joinSql(relationship, level.alias, child.alias), ...conditionsAt(child, ctx.parts, ctx.params, inner.embeds), ...inner.conditions]
    const whereSql = ` where ${where.join(' and ')}`
    const exists = `exists (select 1 from ${from}${whereSql})`
    embeds.set(embedName(item), exists)
    if (item.inner) conditions.push(exists)
    if (item.select.length === 0) continue
    if (isToOne(relationship)) {
      if (item.spread) {
        for (const o of inner.outputs) outputs.push({ expr: `(select ${o.expr} from ${from}${whereSql} limit 1)`, name: o.name })
      } else {
        outputs.push({ expr: `(select row_to_json(_e) from (select ${outputsSql(inner.outputs)} from ${from}${whereSql} limit 1) _e)`, name: embedName(item) })
      }
    } else {
      if (item.spread) throw new PostgrestError('PGRST119', 400, `A spread operation on '${item.relation}' is not possible`, {
        details: `'${level.relation.name}' and '${item.relation}' do not form a many-to-one or one-to-one relationship`,
      })
      const range = ctx.parts.ranges.find((r) => pathKey(r.path) === pathKey(child.path))
      outputs.push({
        expr: `coalesce((select json_agg(_e) from (select ${outputsSql(inner.outputs)} from ${from}${whereSql}` +
          `${orderAt(ctx, child)}${range ? windowSql(range, ctx.params) : ''}) _e), '[]'::json)`,
        name: embedName(item),
      })
    }
  }
  return { outputs, conditions, embeds }
}

function relationOf(schema: Schema, name: string): Relation {
  const relation = schema.relations.get(name)
  if (!relation) throw tableNotFound(schema.name, name)
  return relation
}

/** The `count` of the envelope for `count=exact|estimated` (null otherwise: planned is explained). */
function countSql(source: string, prefer: Preferences): string {
  if (prefer.count === 'exact') return `(select count(*) from (${source}) _c)`
  if (prefer.count === 'estimated') return `(select count(*) from (${source} limit ${ESTIMATE_EXACT_BELOW}) _c)`
  return 'null'
}

const ROWS = `coalesce((select json_agg(_s) from pgrst_source _s), '[]'::json)`
const FIRST_ROW = `(select row_to_json(_s) from pgrst_source _s limit 1)`

/** A json value as the response's text: through `json_strip_nulls` for `nulls=stripped`. */
function bodyText(value: string, shape: BodyShape): string {
  return `(${shape.stripNulls ? `json_strip_nulls(${value})` : value})::text`
}

/**
 * The envelope `json_build_object('body', <body>, <rest>)`; when the body is text
 * (`bodyText`), the statement also comes `split` for the login pools.
 */
function envelope(body: string, rest: string, text: boolean): Pick<Statement, 'value' | 'bodyText' | 'split'> {
  const value = `json_build_object('body', ${body}, ${rest})`
  return text ? { value, bodyText: true, split: { value: `json_build_object(${rest})`, text: body } } : { value }
}

/** The whole read of one relation (or a function's rows): select, filters, order, window, count. */
function readFrom(ctx: BuildContext, options: { from: string; root: Level; window: ReadRequest; prefer: Preferences; body: 'rows' | 'object'; shape?: BodyShape }): Statement {
  const list = selectList(ctx, options.root)
  const where = [...conditionsAt(options.root, ctx.parts, ctx.params, list.embeds), ...list.conditions]
  const whereSql = where.length > 0 ? ` where ${where.join(' and ')}` : ''
  const countSource = `select 1 from ${options.from}${whereSql}`
  const source = `select ${outputsSql(list.outputs)} from ${options.from}${whereSql}${orderAt(ctx, options.root)}${windowSql(options.window, ctx.params)}`
  const { shape } = options
  const body = shape
    ? bodyText(options.body === 'object' || shape.single ? FIRST_ROW : ROWS, shape)
    : options.body === 'rows' ? ROWS : FIRST_ROW
  return {
    ctes: [`pgrst_source as (${source})`],
    ...envelope(body, `'count', ${countSql(countSource, options.prefer)}, 'rows', (select count(*) from pgrst_source)`, shape !== undefined),
    params: ctx.params.values,
    countSource,
  }
}

/** A read; with `shape`, the body is answered as text (`Statement.bodyText`). */
export function buildRead(schema: Schema, request: ReadRequest, prefer: Preferences, shape?: BodyShape): Statement {
  const ctx: BuildContext = { schema, params: new Params(), aliases: new Aliases(), parts: request }
  const root: Level = { relation: relationOf(schema, request.resource), alias: ctx.aliases.next(), path: [], items: request.select }
  const from = `${ident(schema.name)}.${ident(root.relation.name)} as ${ident(root.alias)}`
  return readFrom(ctx, { from, root, window: request, prefer, body: 'rows', ...(shape ? { shape } : {}) })
}

/** The representation of written rows: the request's select list over `pgrst_source` (the first row for `single`). */
function representation(ctx: BuildContext, relation: Relation, select: readonly SelectItem[], single = false): string {
  const level: Level = { relation, alias: 'pgrst_written', path: [], items: select }
  const list = selectList(ctx, level)
  const rows = `select ${outputsSql(list.outputs)} from pgrst_source as "pgrst_written"`
  return single
    ? `(select row_to_json(_s) from (${rows} limit 1) _s)`
    : `coalesce((select json_agg(_s) from (${rows}) _s), '[]'::json)`
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
  /** With `return=representation`: the written rows are answered as text (`Statement.bodyText`). */
  shape?: BodyShape
}

function rowsOf(body: unknown, allowArray: boolean): Record<string, unknown>[] {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (isObject(body)) return [body]
  if (allowArray && Array.isArray(body) && body.every(isObject)) return body
  throw new PostgrestError('PGRST102', 400, allowArray ? 'Empty or invalid json: the body must be an object or an array of objects' : 'Empty or invalid json: the body must be an object')
}

/**
 * INSERT (with upsert), UPDATE or DELETE, returning `{ body, count, keys, inserted }`: the
 * representation when asked for, the number of rows written, their primary keys (for
 * `Location`) and, for `resolution=merge-duplicates`, how many were inserted rather than
 * updated (PostgREST answers 200 instead of 201 when none was).
 */
export function buildWrite(schema: Schema, input: WriteInput): Statement {
  const { request, prefer } = input
  const params = new Params()
  const ctx: BuildContext = { schema, params, aliases: new Aliases(), parts: request }
  const relation = relationOf(schema, request.resource)
  const table = `${ident(schema.name)}.${ident(relation.name)}`
  const target: Level = { relation, alias: 'pgrst_target', path: [], items: [] }
  let write: string
  let inserted = 'null'
  if (request.method === 'POST') {
    const rows = rowsOf(input.body, true)
    const columns = payloadColumns(relation, rows, request.columns)
    const quoted = columns.map(ident)
    if (rows.length === 0 || columns.length === 0) {
      if (rows.length > 1 && columns.length === 0) {
        throw new PostgrestError('PGRST102', 400, 'Empty or invalid json: objects without columns')
      }
      write = rows.length === 0
        ? `select * from ${table} where false`
        : `insert into ${table} as "pgrst_target" default values returning "pgrst_target".*`
    } else {
      if (prefer.missing === 'default') {
        const values = rows.map((row) => `(${columns.map((name) => name in row
          ? `(select _r.${ident(name)} from json_populate_record(null::${table}, ${params.json(row)}::json) _r)`
          : 'default').join(', ')})`)
        write = `insert into ${table} as "pgrst_target" (${quoted.join(', ')}) values ${values.join(', ')}`
      } else {
        write = `insert into ${table} as "pgrst_target" (${quoted.join(', ')}) select ${columns.map((c) => `_r.${ident(c)}`).join(', ')}` +
          ` from json_populate_recordset(null::${table}, ${params.json(rows)}::json) _r`
      }
      const conflict = request.onConflict ?? (prefer.resolution ? relation.primaryKey : undefined)
      let returning = ' returning "pgrst_target".*'
      if (prefer.resolution && conflict) {
        if (conflict.length === 0) throw new PostgrestError('PGRST100', 400, 'an upsert needs on_conflict or a primary key')
        for (const name of conflict) if (!relation.columns.has(name)) throw columnNotFound(relation.name, name)
        const updates = columns.filter((c) => !conflict.includes(c)).map((c) => `${ident(c)} = excluded.${ident(c)}`)
        write += ` on conflict (${conflict.map(ident).join(', ')}) ` +
          (prefer.resolution === 'ignore-duplicates' || updates.length === 0 ? 'do nothing' : `do update set ${updates.join(', ')}`)
        if (prefer.resolution === 'merge-duplicates' && relation.kind === 'table') {
          // A row an upsert inserted has no xmax yet; an updated one carries this transaction's.
          returning += ', ("pgrst_target".xmax = 0) as "pgrst_inserted"'
          inserted = '(select count(*) from pgrst_source where "pgrst_inserted")'
        }
      }
      write += returning
    }
  } else if (request.method === 'PATCH') {
    const [row] = rowsOf(input.body, false)
    const columns = payloadColumns(relation, [row!], request.columns)
    const where = conditionsAt(target, request, params)
    const limited = limitedRows(ctx, { table, target, request })
    if (columns.length === 0) {
      write = `select * from ${table} as "pgrst_target" where false`
    } else {
      write = `update ${table} as "pgrst_target" set ${columns.map((c) => `${ident(c)} = _r.${ident(c)}`).join(', ')}` +
        ` from json_populate_record(null::${table}, ${params.json(row)}::json) _r` +
        `${limited ?? (where.length > 0 ? ` where ${where.join(' and ')}` : '')} returning "pgrst_target".*`
    }
  } else if (request.method === 'DELETE') {
    const where = conditionsAt(target, request, params)
    const limited = limitedRows(ctx, { table, target, request })
    write = `delete from ${table} as "pgrst_target"${limited ?? (where.length > 0 ? ` where ${where.join(' and ')}` : '')} returning "pgrst_target".*`
  } else {
    throw new PostgrestError('PGRST117', 405, `Unsupported HTTP method: ${request.method}`)
  }
  const { shape } = input
  const represented = prefer.return === 'representation'
  const body = !represented
    ? 'null'
    : shape ? bodyText(representation(ctx, relation, request.select, shape.single), shape) : representation(ctx, relation, request.select)
  // Keys as PostgreSQL writes them as text, what a filter reads back (a bigint keeps its digits).
  const keys = relation.primaryKey.length > 0
    ? `(select json_agg(json_build_object(${relation.primaryKey.map((k) => `'${k.replace(/'/g, "''")}', ${ident(k)}::text`).join(', ')})) from pgrst_source)`
    : 'null'
  return {
    ctes: [`pgrst_source as (${write})`],
    ...envelope(body, `'count', (select count(*) from pgrst_source), 'keys', ${keys}, 'inserted', ${inserted}`, represented && shape !== undefined),
    params: params.values,
  }
}

/** PATCH/DELETE with order and limit (PostgREST 12 limited writes): pick rows by ctid. */
function limitedRows(ctx: BuildContext, options: { table: string; target: Level; request: MutationRequest }): string | null {
  const { table, target, request } = options
  if (request.limit === null && request.offset === 0) return null
  const inner: Level = { ...target, alias: 'pgrst_pick' }
  const conditions = conditionsAt(inner, request, ctx.params)
  return ` where "pgrst_target".ctid = any(array(select "pgrst_pick".ctid from ${table} as "pgrst_pick"` +
    `${conditions.length > 0 ? ` where ${conditions.join(' and ')}` : ''}${orderAt(ctx, inner)}${windowSql(request, ctx.params)}))`
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
      `Could not find the function ${schema.name}.${name}${given.size ? `(${[...given].sort().join(', ')})` : ' without parameters'} in the schema cache`, {
        hint: overloads.length > 0 ? `The function exists with other parameters: ${overloads.map((fn) => `${name}(${fn.arguments.map((a) => a.name).join(', ')})`).join(', ')}` : null,
      })
  }
  throw new PostgrestError('PGRST203', 300, `Could not choose the best candidate function between several overloads of ${name}`)
}

/** The rows a function returns, as a relation the select, filters and order can refer to. */
function resultRelation(schema: Schema, fn: DbFunction): Relation | null {
  if (fn.returnsRelation) return schema.relations.get(fn.returnsRelation) ?? null
  if (!fn.returnColumns) return null
  return {
    name: fn.name,
    kind: 'view',
    columns: new Map(fn.returnColumns.map((c) => [c.name, c])),
    primaryKey: [],
    uniqueKeys: [],
    insertable: false,
  }
}

/**
 * A call of an app database function with named arguments from a JSON object. Scalar results
 * are `{ body: value }`; rows (`returns setof table`, `returns table (...)`, a composite) are
 * read like a relation, so select, filters, order, limit and counts apply. The function runs
 * in FROM (once), never as `(f()).*`, which would call it once per column. With `shape`, the
 * result (a scalar, a set, rows, a composite) is answered as text (`Statement.bodyText`).
 */
export function buildCall(schema: Schema, fn: DbFunction, args: Record<string, unknown>, request: ReadRequest, prefer: Preferences, shape?: BodyShape): Statement {
  const params = new Params()
  const given = fn.arguments.filter((a) => a.name in args)
  const argsFrom = given.length > 0
    ? `json_to_record(${params.json(args)}::json) as _args(${given.map((a) => `${ident(a.name)} ${a.type}`).join(', ')})`
    : null
  const call = `${ident(schema.name)}.${ident(fn.name)}(${given.map((a) => `${ident(a.name)} => _args.${ident(a.name)}`).join(', ')})`
  if (fn.returnsScalar || fn.returnsVoid) {
    // In a CTE a volatile call runs exactly once, even when its value is not used (void).
    const source = `pgrst_source as (select ${call} as _v${argsFrom ? ` from ${argsFrom}` : ''})`
    const first = '(select to_json(_v) from pgrst_source limit 1)'
    const value = fn.returnsSet && !shape?.single ? `coalesce((select json_agg(_v) from pgrst_source), '[]'::json)` : first
    const text = !fn.returnsVoid && shape !== undefined
    return {
      ctes: [source],
      ...envelope(fn.returnsVoid ? 'null' : text ? bodyText(value, shape!) : value, `'count', null, 'rows', (select count(*) from pgrst_source)`, text),
      params: params.values,
    }
  }
  const returned = resultRelation(schema, fn)
  const rowsFrom = `(select _r.* from ${argsFrom ? `${argsFrom}, lateral ` : ''}${call} as _r)`
  const ctx: BuildContext = { schema, params, aliases: new Aliases(), parts: request }
  if (!returned) {
    // `returns record` without a column definition: PostgreSQL cannot call it from FROM.
    throw new PostgrestError('PGRST202', 404, `The function ${schema.name}.${fn.name} returns an undescribed record and cannot be called`)
  }
  const root: Level = { relation: returned, alias: ctx.aliases.next(), path: [], items: request.select }
  return readFrom(ctx, {
    from: `${rowsFrom} as ${ident(root.alias)}`, root, window: request, prefer, body: fn.returnsSet ? 'rows' : 'object', ...(shape ? { shape } : {}),
  })
}
