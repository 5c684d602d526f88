/**
 * The app tables a realtime subscription names: found in the namespace's schema with their
 * primary key and column types (read by the platform from the catalog), refused when the
 * namespace's user role may not read them at all, and given the change log's triggers
 * (installed as the namespace's owner role, through its wrapper, as migrations are) on
 * first subscription. Triggers stay while the table is subscribed to, and a day after.
 */
import { ident, type Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { roleName, runAsRole, type Namespace } from '../namespaces/namespaces.ts'

export interface TableInfo {
  schema: string
  name: string
  /** The primary key's columns, in key order. */
  keyColumns: readonly string[]
  /** Every column's SQL type as `format_type` spells it (for filters' casts). */
  columnTypes: ReadonlyMap<string, string>
}

interface TableRow extends Record<string, unknown> {
  key_columns: string[] | null
  column_types: Record<string, string>
  readable: boolean
  trigger_args: string[] | null
}

const TRIGGERS = [
  { name: 'platform_realtime_insert', event: 'insert', transition: 'new' },
  { name: 'platform_realtime_update', event: 'update', transition: 'new' },
  { name: 'platform_realtime_delete', event: 'delete', transition: 'old' },
] as const

/** The triggers' arguments as pg_trigger.tgargs holds them: each followed by a zero byte, hex. */
function triggerArgsHex(columns: readonly string[]): string {
  return Buffer.concat(columns.map((column) => Buffer.concat([Buffer.from(column, 'utf8'), Buffer.from([0])]))).toString('hex')
}

/** How long a table found, with its triggers in place, is taken as it is before the catalog is read again. */
const KNOWN_MS = 10_000
/** How often a subscription records that its table is still subscribed to (the trigger sweep reads it). */
const MARK_EVERY_MS = 10 * 60_000

export interface RealtimeTables {
  /**
   * The table with its triggers in place, or a ServiceError a subscriber can act on:
   * REALTIME_TABLE_NOT_FOUND, REALTIME_TABLE_NO_PRIMARY_KEY, REALTIME_FILTER_INVALID.
   */
  prepare(namespace: Namespace, table: string, filter: { column: string; value: string } | null): Promise<TableInfo>
  /** Records the tables still subscribed to in this process (a sweep drops others' triggers after a day). */
  mark(tables: Iterable<{ namespace: Namespace; table: string }>): Promise<void>
  /** Drops the triggers of tables nobody subscribed to for `idleSeconds` (default a day); how many tables. */
  sweep(idleSeconds?: number): Promise<number>
}

export function createRealtimeTables(deps: { db: Db; clock: Clock }): RealtimeTables {
  const { db } = deps
  const known = new Map<string, { info: TableInfo; at: number }>()
  const marked = new Map<string, number>()

  async function read(namespace: Namespace, table: string): Promise<TableRow | undefined> {
    const [row] = await db.query<TableRow>(
      `select (select array_agg(a.attname::text order by k.n)
                 from pg_catalog.pg_index i
                 cross join lateral unnest(i.indkey::int2[]) with ordinality as k(attnum, n)
                 join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
                where i.indrelid = c.oid and i.indisprimary) as key_columns,
              (select json_object_agg(a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod))
                 from pg_catalog.pg_attribute a where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped) as column_types,
              pg_catalog.has_table_privilege($3, c.oid, 'SELECT') as readable,
              (select array_agg(t.tgname::text || ':' || encode(t.tgargs, 'hex')) from pg_catalog.pg_trigger t
                where t.tgrelid = c.oid and t.tgname like 'platform\\_realtime\\_%') as trigger_args
         from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $1 and c.relname = $2 and c.relkind in ('r', 'p')`,
      [namespace.schemaName, table, roleName(namespace, 'user')])
    return row
  }

  async function installTriggers(namespace: Namespace, table: string, keyColumns: readonly string[]): Promise<void> {
    const args = keyColumns.map((column) => `'${column.replace(/'/g, "''")}'`).join(', ')
    const target = `${ident(namespace.schemaName)}.${ident(table)}`
    await db.transaction((tx) => runAsRole(tx, { namespace, role: 'owner' }, TRIGGERS.map((trigger) =>
      `create or replace trigger ${trigger.name} after ${trigger.event} on ${target}
         referencing ${trigger.transition} table as platform_realtime_rows
         for each statement execute function platform_realtime.capture(${args});`).join('\n')))
  }

  async function markOne(namespace: Namespace, table: string): Promise<void> {
    await db.query(
      `insert into platform.realtime_tables (namespace_id, table_name) values ($1, $2)
       on conflict (namespace_id, table_name) do update set subscribed_at = pg_catalog.now()`,
      [namespace.id, table])
  }

  return {
    async prepare(namespace, table, filter) {
      const cacheKey = `${namespace.id}:${table}`
      const now = deps.clock.now().getTime()
      let info = known.get(cacheKey)
      if (!info || now - info.at > KNOWN_MS || now < info.at) {
        const row = await read(namespace, table)
        if (!row || !row.readable) {
          // A table the app's users may not read at all is answered as none, as the data API does.
          throw new ServiceError('REALTIME_TABLE_NOT_FOUND', `the app has no table "${table}" its users may read`, { details: { table } })
        }
        const keyColumns = row.key_columns ?? []
        if (keyColumns.length === 0) {
          throw new ServiceError('REALTIME_TABLE_NO_PRIMARY_KEY',
            `"${table}" has no primary key; realtime names changed rows by their primary key`, { details: { table } })
        }
        const expected = TRIGGERS.map((trigger) => `${trigger.name}:${triggerArgsHex(keyColumns)}`).sort()
        const present = [...(row.trigger_args ?? [])].sort()
        if (JSON.stringify(expected) !== JSON.stringify(present)) await installTriggers(namespace, table, keyColumns)
        info = { info: { schema: namespace.schemaName, name: table, keyColumns, columnTypes: new Map(Object.entries(row.column_types)) }, at: now }
        if (known.size >= 1000) known.delete(known.keys().next().value!)
        known.set(cacheKey, info)
      }
      if (filter) {
        const type = info.info.columnTypes.get(filter.column)
        if (!type) {
          throw new ServiceError('REALTIME_FILTER_INVALID', `"${table}" has no column "${filter.column}"`, { details: { table, column: filter.column } })
        }
        try {
          await db.query(`select cast($1::text as ${type})`, [filter.value])
        } catch (error) {
          throw new ServiceError('REALTIME_FILTER_INVALID', `"${filter.value.slice(0, 80)}" is not a value of ${filter.column} (${type})`, {
            details: { table, column: filter.column }, cause: error,
          })
        }
      }
      if ((marked.get(cacheKey) ?? 0) < now - MARK_EVERY_MS || (marked.get(cacheKey) ?? 0) > now) {
        await markOne(namespace, table)
        marked.set(cacheKey, now)
      }
      return info.info
    },

    async mark(tables) {
      const now = deps.clock.now().getTime()
      for (const { namespace, table } of tables) {
        const cacheKey = `${namespace.id}:${table}`
        if ((marked.get(cacheKey) ?? 0) >= now - MARK_EVERY_MS && (marked.get(cacheKey) ?? 0) <= now) continue
        await markOne(namespace, table)
        marked.set(cacheKey, now)
      }
    },

    async sweep(idleSeconds = 24 * 60 * 60) {
      const idle = await db.query<{ id: string; app_id: string; environment: Namespace['environment']; dev_name: string; schema_name: string; role_prefix: string; table_name: string }>(
        `select n.id, n.app_id, n.environment, n.dev_name, n.schema_name, n.role_prefix, t.table_name
           from platform.realtime_tables t join platform.namespaces n on n.id = t.namespace_id
          where t.subscribed_at < pg_catalog.now() - make_interval(secs => $1)
          order by t.subscribed_at limit 100`, [idleSeconds])
      for (const row of idle) {
        const namespace: Namespace = {
          id: row.id, appId: row.app_id, environment: row.environment, devName: row.dev_name, schemaName: row.schema_name, rolePrefix: row.role_prefix,
        }
        const target = `${ident(namespace.schemaName)}.${ident(row.table_name)}`
        await db.transaction(async (tx) => {
          const [still] = await tx.query(
            `delete from platform.realtime_tables where namespace_id = $1 and table_name = $2
               and subscribed_at < pg_catalog.now() - make_interval(secs => $3) returning 1`, [namespace.id, row.table_name, idleSeconds])
          if (!still) return
          const [exists] = await tx.query('select pg_catalog.to_regclass($1) as oid', [target])
          if (!exists?.['oid']) return
          await runAsRole(tx, { namespace, role: 'owner' }, TRIGGERS.map((trigger) => `drop trigger if exists ${trigger.name} on ${target};`).join('\n'))
        })
        known.delete(`${namespace.id}:${row.table_name}`)
        marked.delete(`${namespace.id}:${row.table_name}`)
      }
      return idle.length
    },
  }
}
