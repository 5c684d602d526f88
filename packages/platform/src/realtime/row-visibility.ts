/**
 * Which changed rows one subscriber identity may read, asked of the database as that identity:
 * one read-only statement per identity per batch of changes, run as the namespace's user
 * role with the identity's `request.jwt.claims` through the data API's own path
 * (NamespaceSql: a login pool or the wrapper), so row-level security answers exactly as it
 * answers that person's data API reads.
 *
 * - Inserts and updates: the rows are read back by primary key (`select … where key in
 *   (…)`); a row the identity cannot read, or that is gone by now, is not there. What is
 *   delivered is the row as this statement read it.
 * - Deletes: the row no longer exists, so it cannot be read back. The change log kept the old
 *   row (platform-only); the statement evaluates the table's read policies (their USING
 *   expressions for SELECT and ALL, for the user role) on that old row, as the identity, and
 *   answers the keys that pass. Only the key is ever delivered.
 *
 * Each equality filter of the identity's subscriptions is evaluated in the same statement,
 * with the filter's value cast to the column's type (the value was checked to cast when the
 * subscription was made).
 */
import { ident, type Db } from '../db/db.ts'
import { roleName, type Namespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql } from '../namespaces/namespace-sql.ts'
import type { TableInfo } from './tables.ts'

/** What one identity's statement asks about one table. */
export interface TableQuestion {
  table: TableInfo
  /** Keys (jsonb objects) of inserted and updated rows to read back. */
  upsertKeys: readonly Record<string, unknown>[]
  /** Old rows of deleted rows to evaluate the read policies on. */
  deletedRows: readonly Record<string, unknown>[]
  /** The distinct filters the identity's subscriptions on this table use; answers come in this order. */
  filters: readonly { column: string; value: string }[]
}

export interface TableAnswer {
  /** Readable rows by key text: the row, and each filter's answer (null: the column was null). */
  rows: Map<string, { record: Record<string, unknown>; filters: (boolean | null)[] }>
  /** Deleted rows the identity could read, by key text, with each filter's answer on the old row. */
  deleted: Map<string, { filters: (boolean | null)[] }>
}

/** The read policies of a table for the namespace's user role, as SQL text (the app's own). */
export interface ReadPolicy {
  rowSecurity: boolean
  permissive: string[]
  restrictive: string[]
}

/**
 * The table's read policies for the namespace's user role (a SELECT or ALL policy for
 * PUBLIC or a role the user role is a member of), read from the catalog by the platform.
 */
export async function readPolicy(db: Db, namespace: Namespace, table: TableInfo): Promise<ReadPolicy> {
  const [row] = await db.query<{ rls: boolean; permissive: string[] | null; restrictive: string[] | null }>(
    `select c.relrowsecurity as rls,
            array_agg(pg_catalog.pg_get_expr(p.polqual, p.polrelid)) filter (where p.polpermissive and p.polqual is not null) as permissive,
            array_agg(pg_catalog.pg_get_expr(p.polqual, p.polrelid)) filter (where not p.polpermissive and p.polqual is not null) as restrictive
       from pg_catalog.pg_class c
       join pg_catalog.pg_namespace n on n.oid = c.relnamespace
       left join pg_catalog.pg_policy p on p.polrelid = c.oid and p.polcmd in ('r', '*')
        and exists (select from unnest(p.polroles) as r(oid) where r.oid = 0 or pg_catalog.pg_has_role($3, r.oid, 'MEMBER'))
      where n.nspname = $1 and c.relname = $2
      group by c.relrowsecurity`,
    [namespace.schemaName, table.name, roleName(namespace, 'user')])
  return { rowSecurity: row?.rls ?? true, permissive: row?.permissive ?? [], restrictive: row?.restrictive ?? [] }
}

/** The policies as one condition on a row named by the table's own name. */
function policyCondition(policy: ReadPolicy): string {
  if (!policy.rowSecurity) return 'true'
  if (policy.permissive.length === 0) return 'false'
  const permissive = policy.permissive.map((expression) => `(${expression})`).join(' or ')
  const restrictive = policy.restrictive.map((expression) => ` and (${expression})`).join('')
  return `(${permissive})${restrictive}`
}

/** Builds one identity's statement: a json object with `u<i>` and `d<i>` arrays per table. */
function buildStatement(questions: readonly TableQuestion[], policies: ReadonlyMap<string, ReadPolicy>): { value: string; params: unknown[] } {
  const params: unknown[] = []
  const bind = (value: unknown) => {
    params.push(value)
    return params.length - 1
  }
  const parts: string[] = []
  questions.forEach((question, i) => {
    const { table } = question
    const alias = ident(table.name)
    const relation = `${ident(table.schema)}.${ident(table.name)}`
    const keyObject = `pg_catalog.jsonb_build_object(${table.keyColumns.map((column) => `'${column.replace(/'/g, "''")}', ${alias}.${ident(column)}`).join(', ')})::text`
    const filterValues = question.filters.map((filter) => {
      const type = table.columnTypes.get(filter.column)!
      return `${alias}.${ident(filter.column)} = cast(($1::jsonb->>${bind(filter.value)}) as ${type})`
    })
    const filterArray = `pg_catalog.json_build_array(${filterValues.join(', ')})`
    if (question.upsertKeys.length > 0) {
      const keys = bind(question.upsertKeys)
      const keyList = table.keyColumns.map((column) => `${alias}.${ident(column)}`).join(', ')
      const keyFrom = table.keyColumns.map((column) => `k.${ident(column)}`).join(', ')
      parts.push(`'u${i}', (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_object('k', ${keyObject}, 'r', pg_catalog.row_to_json(${alias}.*), 'f', ${filterArray})), '[]'::json)
        from ${relation} as ${alias}
        where (${keyList}) in (select ${keyFrom} from pg_catalog.jsonb_populate_recordset(null::${relation}, ($1::jsonb->${keys})) as k))`)
    }
    if (question.deletedRows.length > 0) {
      const rows = bind(question.deletedRows)
      const policy = policies.get(table.name)!
      parts.push(`'d${i}', (select coalesce(pg_catalog.json_agg(pg_catalog.json_build_object('k', ${keyObject}, 'f', ${filterArray})), '[]'::json)
        from pg_catalog.jsonb_populate_recordset(null::${relation}, ($1::jsonb->${rows})) as ${alias}
        where ${policyCondition(policy)})`)
    }
  })
  return { value: `pg_catalog.json_build_object(${parts.join(',\n')})`, params }
}

/**
 * Asks, as one identity, which of the changed rows it may read; one statement.
 *
 * @example
 * const answers = await askAs(deps, { namespace, claims: { sub, role: 'authenticated', aud } }, questions)
 * answers[0].rows.get('{"id": 4}') // { record: {...}, filters: [true] }
 */
export async function askAs(
  deps: { db: Db; sql: NamespaceSql },
  who: { namespace: Namespace; claims: Record<string, unknown> },
  questions: readonly TableQuestion[],
): Promise<TableAnswer[]> {
  const policies = new Map<string, ReadPolicy>()
  for (const question of questions) {
    if (question.deletedRows.length > 0 && !policies.has(question.table.name)) {
      policies.set(question.table.name, await readPolicy(deps.db, who.namespace, question.table))
    }
  }
  const { value, params } = buildStatement(questions, policies)
  const result = (await deps.sql.statement({ namespace: who.namespace, role: 'user' }, { ctes: [], value, params }, {
    claims: who.claims, readOnly: true,
  })) as Record<string, { k: string; r?: Record<string, unknown>; f: (boolean | null)[] }[]> | null
  return questions.map((_, i) => {
    const rows = new Map<string, { record: Record<string, unknown>; filters: (boolean | null)[] }>()
    for (const item of result?.[`u${i}`] ?? []) rows.set(item.k, { record: item.r ?? {}, filters: item.f })
    const deleted = new Map<string, { filters: (boolean | null)[] }>()
    for (const item of result?.[`d${i}`] ?? []) deleted.set(item.k, { filters: item.f })
    return { rows, deleted }
  })
}
