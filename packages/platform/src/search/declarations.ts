/**
 * Search declarations against the migrated schema (issue 16): deploy runs this after the
 * bundle's migrations, inside the deploy's transaction, so a declaration naming a table or
 * column the app's schema does not have (or has with the wrong type) refuses the deploy with
 * SEARCH_DECLARATION_INVALID naming the search, the field and the column; nothing is kept.
 *
 * The vector path is chosen here from the declared column's type: `vector(n)` (pgvector,
 * where the database has it) or `real[]` (the exact path any PostgreSQL runs). Both compute
 * the exact cosine distance; only the operator differs.
 */
import type { Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import type { SearchDeclaration } from '../manifest/index.ts'

export type VectorPath = 'pgvector' | 'exact'

/** A declared search with what deploy learned from the schema. */
export interface SearchPlan extends SearchDeclaration {
  readonly vectorPath: VectorPath | null
  /** Each filter column's type name (`pg_type.typname`: int4, bool, text, a domain's own name …). */
  readonly filterTypes: Readonly<Record<string, string>>
  /**
   * Each filter column's type as SQL (`format_type`, schema-qualified where it is the app's
   * own: `integer`, `character varying(20)`, `app_x.positive`): a `where` value is cast to it.
   */
  readonly filterCasts: Readonly<Record<string, string>>
}

interface ColumnRow extends Record<string, unknown> {
  relname: string
  attname: string
  typname: string
  typcategory: string
  typmod: number
  elemname: string | null
  sqltype: string
}

/** Column types a `where` filter compares by equality (no arrays, documents or vectors). */
const NOT_SCALAR = new Set(['json', 'jsonb', 'tsvector', 'tsquery', 'vector', 'xml', 'bytea'])

/** Reads the columns of the searched tables in `schema`, by table then column name. */
async function columnsOf(db: Queryable, schema: string, tables: string[]): Promise<Map<string, Map<string, ColumnRow>>> {
  const rows = await db.query<ColumnRow>(
    `select c.relname, a.attname, t.typname, t.typcategory::text as typcategory, a.atttypmod as typmod, e.typname as elemname,
            pg_catalog.format_type(a.atttypid, a.atttypmod) as sqltype
       from pg_catalog.pg_attribute a
       join pg_catalog.pg_class c on c.oid = a.attrelid
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       join pg_catalog.pg_type t on t.oid = a.atttypid
       left join pg_catalog.pg_type e on e.oid = t.typelem and t.typcategory = 'A'
      where n.nspname = $1 and c.relname = any($2::text[]) and c.relkind in ('r', 'p', 'v')
        and a.attnum > 0 and not a.attisdropped`,
    [schema, tables],
  )
  const byTable = new Map<string, Map<string, ColumnRow>>()
  for (const row of rows) {
    let columns = byTable.get(row.relname)
    if (columns === undefined) byTable.set(row.relname, columns = new Map())
    columns.set(row.attname, row)
  }
  return byTable
}

function refuse(search: string, field: string, message: string, extra: Record<string, unknown> = {}): never {
  throw new ServiceError('SEARCH_DECLARATION_INVALID', `search "${search}": ${message}`, {
    details: { search, field: `data.search[${search}].${field}`, ...extra },
  })
}

/**
 * Checks each declared search against the app's migrated schema and answers the plans
 * (with their vector path); throws SEARCH_DECLARATION_INVALID at the first problem.
 */
export async function checkSearchDeclarations(
  db: Queryable,
  schema: string,
  searches: readonly SearchDeclaration[],
): Promise<SearchPlan[]> {
  if (searches.length === 0) return []
  const tables = await columnsOf(db, schema, [...new Set(searches.map((s) => s.table))])
  return searches.map((search) => planOf(search, tables.get(search.table)))
}

function planOf(search: SearchDeclaration, columns: Map<string, ColumnRow> | undefined): SearchPlan {
  const name = search.name
  if (columns === undefined) refuse(name, 'table', `table "${search.table}" does not exist in the app's schema`, { table: search.table })
  const need = (field: string, column: string): ColumnRow => {
    const found = columns.get(column)
    if (found === undefined) refuse(name, field, `column "${column}" does not exist in table "${search.table}"`, { table: search.table, column })
    return found
  }
  for (const column of search.select) {
    const row = need('select', column)
    if (row.typname === 'vector' || row.typname === 'tsvector') {
      refuse(name, 'select', `column "${column}" is a ${row.typname}; select only returnable columns (a vector is the search's input, not its result)`, { table: search.table, column })
    }
  }
  const filterTypes: Record<string, string> = {}
  const filterCasts: Record<string, string> = {}
  for (const column of search.filters) {
    const row = need('filters', column)
    if (row.typcategory === 'A' || NOT_SCALAR.has(row.typname)) {
      refuse(name, 'filters', `column "${column}" has type ${row.typname}; filters compare scalar columns by equality`, { table: search.table, column })
    }
    filterTypes[column] = row.typname
    filterCasts[column] = row.sqltype
  }
  for (const column of search.fullText?.columns ?? []) {
    const row = need('fullText.columns', column)
    if (row.typcategory !== 'S') {
      refuse(name, 'fullText.columns', `column "${column}" has type ${row.typname}; full-text columns must be text`, { table: search.table, column })
    }
  }
  let vectorPath: VectorPath | null = null
  if (search.vector !== undefined) {
    const { column, dimensions } = search.vector
    const row = need('vector.column', column)
    if (row.typname === 'vector') {
      if (row.typmod !== dimensions) {
        refuse(name, 'vector.dimensions',
          row.typmod < 0
            ? `column "${column}" is a vector without dimensions; declare it vector(${dimensions})`
            : `column "${column}" is vector(${row.typmod}) but the search declares ${dimensions} dimensions`,
          { table: search.table, column, declared: dimensions, ...(row.typmod < 0 ? {} : { actual: row.typmod }) })
      }
      vectorPath = 'pgvector'
    } else if (row.typcategory === 'A' && row.elemname === 'float4') {
      vectorPath = 'exact'
    } else {
      refuse(name, 'vector.column', `column "${column}" has type ${row.typname}; a vector column is vector(${dimensions}) (pgvector) or real[]`, { table: search.table, column })
    }
  }
  return { ...search, vectorPath, filterTypes, filterCasts }
}

/** Whether the database has pgvector installed in the `extensions` schema (reported by /v1/health). */
export async function pgvectorInstalled(db: Queryable): Promise<boolean> {
  const rows = await db.query<{ installed: boolean }>(`select exists (select 1 from pg_catalog.pg_extension where extname = 'vector') as installed`)
  return rows[0]?.installed === true
}

/**
 * What /v1/health reports: the vector paths this database offers. `exact` (cosine over
 * `real[]`) always; `pgvector` (columns of type vector(n)) where the extension is installed.
 */
export async function searchHealth(db: Queryable): Promise<{ vectorPaths: VectorPath[] }> {
  return { vectorPaths: (await pgvectorInstalled(db)) ? ['pgvector', 'exact'] : ['exact'] }
}
