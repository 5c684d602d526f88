/**
 * The data API's view of one app namespace schema: relations (tables and views) with their
 * columns and primary keys, foreign keys (for embedding), and functions (for RPC), read from
 * the PostgreSQL catalog. Loaded once per namespace and release: a schema only changes
 * through migrations, which only run at deploy.
 */
import type { Queryable } from '../db/db.ts'

export interface Column {
  name: string
  /** The column's type as PostgreSQL spells it (`format_type`), safe to use in a cast. */
  type: string
  /** The element type of an array column, or null. */
  elementType: string | null
  nullable: boolean
  hasDefault: boolean
  position: number
}

export interface Relation {
  name: string
  kind: 'table' | 'view'
  columns: Map<string, Column>
  primaryKey: string[]
  /** The primary key and every unique constraint, as column lists (for one-to-one embeds). */
  uniqueKeys: string[][]
  insertable: boolean
}

export interface ForeignKey {
  name: string
  table: string
  columns: string[]
  referencedTable: string
  referencedColumns: string[]
}

export interface FunctionArgument {
  name: string
  type: string
  hasDefault: boolean
  variadic: boolean
}

export interface DbFunction {
  name: string
  arguments: FunctionArgument[]
  returnType: string
  returnsSet: boolean
  /** The relation a function returns rows of (`returns setof notes`), or null. */
  returnsRelation: string | null
  /** Scalar (a base type) vs composite or table results. */
  returnsScalar: boolean
  /** `returns void`: PostgREST answers 204. */
  returnsVoid: boolean
  /**
   * The columns of a composite result that is not a relation of the schema: `returns table
   * (...)`, OUT parameters, or a composite type. Null for scalars and relation rows.
   */
  returnColumns: Column[] | null
  volatility: 'immutable' | 'stable' | 'volatile'
}

export interface Schema {
  name: string
  relations: Map<string, Relation>
  foreignKeys: ForeignKey[]
  functions: Map<string, DbFunction[]>
  /**
   * The schema has a partitioned table. PostgreSQL prunes partitions when a statement starts,
   * before the statement's own first CTE runs, so claims must be set by a statement before.
   */
  partitioned: boolean
}

const RELATIONS_SQL = `
select c.relname as name, c.relkind as kind,
       a.attname as column, format_type(a.atttypid, a.atttypmod) as type,
       case when t.typcategory = 'A' then format_type(t.typelem, null) end as element_type,
       not a.attnotnull as nullable, a.atthasdef or a.attidentity <> '' as has_default, a.attnum as position,
       coalesce(pk.key, '{}') as primary_key,
       coalesce(uk.keys, '[]') as unique_keys,
       c.relkind in ('r', 'p') or (pg_catalog.pg_relation_is_updatable(c.oid::regclass, false) & 8) = 8 as insertable
  from pg_catalog.pg_class c
  join pg_catalog.pg_namespace n on n.oid = c.relnamespace
  join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
  join pg_catalog.pg_type t on t.oid = a.atttypid
  left join lateral (
    select array_agg(ka.attname order by k.ord) as key
      from pg_catalog.pg_constraint pc
      cross join lateral unnest(pc.conkey) with ordinality as k(attnum, ord)
      join pg_catalog.pg_attribute ka on ka.attrelid = pc.conrelid and ka.attnum = k.attnum
     where pc.conrelid = c.oid and pc.contype = 'p'
  ) pk on true
  left join lateral (
    select json_agg(array(select ka.attname from unnest(pc.conkey) with ordinality k(attnum, ord)
                           join pg_catalog.pg_attribute ka on ka.attrelid = pc.conrelid and ka.attnum = k.attnum
                          order by k.ord)) as keys
      from pg_catalog.pg_constraint pc
     where pc.conrelid = c.oid and pc.contype in ('p', 'u')
  ) uk on true
 where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'f')
 order by c.relname, a.attnum`

const FOREIGN_KEYS_SQL = `
select pc.conname as name, src.relname as table, dst.relname as referenced_table,
       array(select a.attname from unnest(pc.conkey) with ordinality k(n, o)
               join pg_catalog.pg_attribute a on a.attrelid = pc.conrelid and a.attnum = k.n order by k.o) as columns,
       array(select a.attname from unnest(pc.confkey) with ordinality k(n, o)
               join pg_catalog.pg_attribute a on a.attrelid = pc.confrelid and a.attnum = k.n order by k.o) as referenced_columns
  from pg_catalog.pg_constraint pc
  join pg_catalog.pg_class src on src.oid = pc.conrelid
  join pg_catalog.pg_class dst on dst.oid = pc.confrelid
  join pg_catalog.pg_namespace n on n.oid = src.relnamespace
  join pg_catalog.pg_namespace dn on dn.oid = dst.relnamespace
 where pc.contype = 'f' and n.nspname = $1 and dn.nspname = $1
 order by pc.conname`

const FUNCTIONS_SQL = `
select p.proname as name, p.proretset as returns_set, p.provolatile as volatility,
       format_type(p.prorettype, null) as return_type,
       rt.typtype as return_typtype, rc.relname as returns_relation, rn.nspname as returns_relation_schema,
       coalesce(p.proargnames, '{}') as arg_names, coalesce(p.proargmodes::text[], '{}') as arg_modes,
       array(select format_type(x, null) from unnest(p.proargtypes) x) as in_types,
       array(select format_type(x, null) from unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) x) as all_types,
       coalesce((select json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod)) order by a.attnum)
                   from pg_catalog.pg_attribute a
                  where a.attrelid = rt.typrelid and a.attnum > 0 and not a.attisdropped), '[]') as type_columns,
       p.pronargdefaults as defaults, p.provariadic <> 0 as variadic
  from pg_catalog.pg_proc p
  join pg_catalog.pg_namespace n on n.oid = p.pronamespace
  join pg_catalog.pg_type rt on rt.oid = p.prorettype
  left join pg_catalog.pg_class rc on rc.oid = rt.typrelid
  left join pg_catalog.pg_namespace rn on rn.oid = rc.relnamespace
 where n.nspname = $1 and p.prokind = 'f'
 order by p.proname, p.oid`

interface RelationRow extends Record<string, unknown> {
  name: string
  kind: string
  column: string
  type: string
  element_type: string | null
  nullable: boolean
  has_default: boolean
  position: number
  primary_key: string[]
  unique_keys: string[][]
  insertable: boolean
}

interface FunctionRow extends Record<string, unknown> {
  name: string
  returns_set: boolean
  volatility: 'i' | 's' | 'v'
  return_type: string
  return_typtype: string
  returns_relation: string | null
  returns_relation_schema: string | null
  arg_names: string[]
  arg_modes: string[]
  in_types: string[]
  all_types: string[]
  type_columns: { name: string; type: string }[]
  defaults: number
  variadic: boolean
}

const VOLATILITY = { i: 'immutable', s: 'stable', v: 'volatile' } as const

/** Reads a schema's relations, foreign keys and functions from the catalog. */
export async function loadSchema(db: Queryable, schemaName: string): Promise<Schema> {
  const relations = new Map<string, Relation>()
  let partitioned = false
  for (const row of await db.query<RelationRow>(RELATIONS_SQL, [schemaName])) {
    if (row.kind === 'p') partitioned = true
    let relation = relations.get(row.name)
    if (!relation) {
      relation = {
        name: row.name,
        kind: row.kind === 'r' || row.kind === 'p' || row.kind === 'f' ? 'table' : 'view',
        columns: new Map(),
        primaryKey: row.primary_key,
        uniqueKeys: row.unique_keys,
        insertable: row.insertable,
      }
      relations.set(row.name, relation)
    }
    relation.columns.set(row.column, {
      name: row.column,
      type: row.type,
      elementType: row.element_type,
      nullable: row.nullable,
      hasDefault: row.has_default,
      position: row.position,
    })
  }
  const foreignKeys = (await db.query<{ name: string; table: string; referenced_table: string; columns: string[]; referenced_columns: string[] }>(
    FOREIGN_KEYS_SQL, [schemaName])).map((row) => ({
    name: row.name,
    table: row.table,
    columns: row.columns,
    referencedTable: row.referenced_table,
    referencedColumns: row.referenced_columns,
  }))
  const functions = new Map<string, DbFunction[]>()
  for (const row of await db.query<FunctionRow>(FUNCTIONS_SQL, [schemaName])) {
    const inputs = inputArguments(row)
    const returnsRelation = row.returns_relation_schema === schemaName && row.returns_relation !== null && relations.has(row.returns_relation)
      ? row.returns_relation
      : null
    const returnsScalar = row.return_typtype !== 'c' && row.return_type !== 'record'
    const fn: DbFunction = {
      name: row.name,
      arguments: inputs,
      returnType: row.return_type,
      returnsSet: row.returns_set,
      returnsRelation,
      returnsScalar,
      returnsVoid: row.return_type === 'void',
      returnColumns: returnsScalar || returnsRelation !== null ? null : resultColumns(row),
      volatility: VOLATILITY[row.volatility],
    }
    functions.set(row.name, [...(functions.get(row.name) ?? []), fn])
  }
  return { name: schemaName, relations, foreignKeys, functions, partitioned }
}

/** The IN and INOUT arguments of a function, with which of the last ones have defaults. */
function inputArguments(row: FunctionRow): FunctionArgument[] {
  const modes = row.arg_modes.length > 0 ? row.arg_modes : row.in_types.map(() => 'i')
  const names: string[] = []
  modes.forEach((mode, index) => {
    if (mode === 'i' || mode === 'b' || mode === 'v') names.push(row.arg_names[index] ?? '')
  })
  const firstDefault = row.in_types.length - row.defaults
  return row.in_types.map((type, index) => ({
    name: names[index] ?? '',
    type,
    hasDefault: index >= firstDefault,
    variadic: row.variadic && index === row.in_types.length - 1,
  }))
}

/** The columns of a composite result: OUT/TABLE parameters, else the composite type's attributes. */
function resultColumns(row: FunctionRow): Column[] {
  const outputs: { name: string; type: string }[] = []
  row.arg_modes.forEach((mode, index) => {
    if (mode === 'o' || mode === 'b' || mode === 't') outputs.push({ name: row.arg_names[index] ?? '', type: row.all_types[index] ?? 'text' })
  })
  const columns = outputs.length > 0 ? outputs : row.type_columns
  return columns.map((c, index) => ({ name: c.name, type: c.type, elementType: null, nullable: true, hasDefault: false, position: index + 1 }))
}

/**
 * Schemas by namespace and release. A deploy that runs migrations makes a new release, so a
 * new key; old entries are dropped when the cache grows past its bound.
 */
export interface SchemaCache {
  get(db: Queryable, key: { schemaName: string; releaseId: string }): Promise<Schema>
}

export function createSchemaCache(options: { maxEntries?: number } = {}): SchemaCache {
  const entries = new Map<string, Promise<Schema>>()
  const max = options.maxEntries ?? 256
  return {
    get(db: Queryable, key: { schemaName: string; releaseId: string }): Promise<Schema> {
      const id = `${key.schemaName}@${key.releaseId}`
      let entry = entries.get(id)
      if (!entry) {
        if (entries.size >= max) entries.delete(entries.keys().next().value!)
        entry = loadSchema(db, key.schemaName)
        entry.catch(() => entries.delete(id))
        entries.set(id, entry)
      }
      return entry
    },
  }
}
