/**
 * App namespaces in the database: one schema and three roles per app x environment x
 * development namespace. The owner role runs the app's migrations and owns its tables;
 * the user role serves signed-in and anonymous requests; the system role serves `system`
 * Functions (`auth.is_system()` is true only for it). App SQL only ever runs through
 * `runAsRole`, inside a per-role security-definer wrapper, so it cannot switch roles,
 * reach another namespace or touch the platform schema.
 */
import { ident, type Db, type Queryable } from '../db/db.ts'
import { lockPlatform } from '../db/platform-lock.ts'
import { randomHex } from '../lib/crypto.ts'

export type NamespaceRole = 'owner' | 'user' | 'system'
export const NAMESPACE_ROLES: readonly NamespaceRole[] = ['owner', 'user', 'system']

export interface Namespace {
  id: string
  appId: string
  environment: 'production' | 'development'
  devName: string
  schemaName: string
  rolePrefix: string
}

interface NamespaceRow extends Record<string, unknown> {
  id: string
  app_id: string
  environment: 'production' | 'development'
  dev_name: string
  schema_name: string
  role_prefix: string
}

function fromRow(row: NamespaceRow): Namespace {
  return {
    id: row.id,
    appId: row.app_id,
    environment: row.environment,
    devName: row.dev_name,
    schemaName: row.schema_name,
    rolePrefix: row.role_prefix,
  }
}

export function roleName(namespace: Pick<Namespace, 'rolePrefix'>, role: NamespaceRole): string {
  return `${namespace.rolePrefix}_${role}`
}

/** The schema an app namespace lives in, e.g. app_tasks or app_tasks__dev_alice. */
export function schemaNameFor(slug: string, devName: string): string {
  const base = 'app_' + slug.replace(/-/g, '_')
  return devName ? `${base}__dev_${devName.replace(/-/g, '_')}` : base
}

export async function findNamespace(
  db: Queryable,
  appId: string,
  environment: Namespace['environment'] = 'production',
  devName = '',
): Promise<Namespace | null> {
  const rows = await db.query<NamespaceRow>(
    `select id, app_id, environment, dev_name, schema_name, role_prefix
       from platform.namespaces where app_id = $1 and environment = $2 and dev_name = $3`,
    [appId, environment, devName],
  )
  return rows[0] ? fromRow(rows[0]) : null
}

/**
 * Written into every wrapper's body; a wrapper without it predates this platform version and
 * is replaced at start. Bump it whenever the wrapper's body changes.
 */
const WRAPPER_VERSION = 'platform_exec wrapper v2'

/**
 * SQL that creates (or, for namespaces made by an older platform, replaces) the wrapper
 * through which app SQL runs as one namespace role.
 */
function wrapperSql(namespace: Namespace, role: NamespaceRole, verb: 'create' | 'create or replace' = 'create'): string {
  const fn = `platform_exec.${ident(roleName(namespace, role))}`
  return `
${verb} function ${fn}(claims text, statement text, params jsonb) returns json
language plpgsql security definer
set search_path = ${ident(namespace.schemaName)}, extensions
as $wrapper$
declare
  result json;
  prepared record;
begin
  -- ${WRAPPER_VERSION}
  perform pg_catalog.set_config('request.jwt.claims', coalesce(claims, ''), true);
  if params is null then
    execute statement;
  else
    execute statement into result using params;
  end if;
  -- Deferred triggers fire now, as this role, not at commit as the platform.
  set constraints all immediate;
  -- Session settings app SQL changed (search_path and the like) must not outlive it.
  reset all;
  -- Nor any other session state on the platform's pooled connection. A holdable cursor would
  -- run its query at commit as the platform's session user: it fails the call, and the
  -- rollback drops it. A prepared statement (not transactional) could stand in for one of the
  -- platform's: deallocated. A session advisory lock could block deploys: released.
  if exists (select from pg_catalog.pg_cursors where is_holdable) then
    raise exception 'app SQL may not leave a holdable cursor open' using errcode = '42501';
  end if;
  for prepared in select name from pg_catalog.pg_prepared_statements where from_sql loop
    execute pg_catalog.format('deallocate %I', prepared.name);
  end loop;
  perform pg_catalog.pg_advisory_unlock_all();
  return result;
end
$wrapper$;
alter function ${fn}(text, text, jsonb) owner to ${ident(roleName(namespace, role))};
revoke all on function ${fn}(text, text, jsonb) from public;`
}

/** Creates the schema, roles, grants and wrappers of a new namespace (inside `tx`). */
export async function createNamespace(
  tx: Queryable,
  options: { appId: string; slug: string; environment?: Namespace['environment']; devName?: string },
): Promise<Namespace> {
  const environment = options.environment ?? 'production'
  const devName = options.devName ?? ''
  const [row] = await tx.query<NamespaceRow>(
    `insert into platform.namespaces (app_id, environment, dev_name, schema_name, role_prefix)
     values ($1, $2, $3, $4, $5)
     returning id, app_id, environment, dev_name, schema_name, role_prefix`,
    [options.appId, environment, devName, schemaNameFor(options.slug, devName), `ns_${randomHex(6)}`],
  )
  const namespace = fromRow(row!)
  // GRANTs on the shared schemas auth and extensions rewrite their ACL row: on PostgreSQL two
  // first deploys at once failed "tuple concurrently updated". Namespace creation is serial.
  await lockPlatform(tx, 'namespace-create')
  const [owner, user, system] = NAMESPACE_ROLES.map((role) => ident(roleName(namespace, role)))
  const schema = ident(namespace.schemaName)
  await tx.exec(`
create role ${owner} nologin noinherit;
create role ${user} nologin noinherit;
create role ${system} nologin noinherit;
create schema ${schema} authorization ${owner};
grant usage on schema ${schema} to ${user}, ${system};
grant usage on schema auth, extensions to ${owner}, ${user}, ${system};
alter default privileges for role ${owner} in schema ${schema}
  grant select, insert, update, delete on tables to ${user}, ${system};
alter default privileges for role ${owner} in schema ${schema}
  grant usage, select on sequences to ${user}, ${system};
${NAMESPACE_ROLES.map((role) => wrapperSql(namespace, role)).join('\n')}
`)
  return namespace
}

/**
 * Replaces the wrappers of namespaces made by an older platform with this version's (run at
 * start, after the platform migrations): a wrapper is created once per namespace, so a fix to
 * it reaches earlier namespaces only this way. Namespaces already current are skipped, so a
 * start costs one query. Returns how many were replaced; one process at a time.
 */
export async function refreshNamespaceWrappers(db: Db): Promise<number> {
  return db.transaction(async (tx) => {
    await lockPlatform(tx, 'namespace-wrappers')
    const rows = await tx.query<NamespaceRow>(
      `select n.id, n.app_id, n.environment, n.dev_name, n.schema_name, n.role_prefix
         from platform.namespaces n
        where exists (
          select from unnest($2::text[]) as r(role)
           where not exists (
             select from pg_catalog.pg_proc p join pg_catalog.pg_namespace s on s.oid = p.pronamespace
              where s.nspname = 'platform_exec' and p.proname = n.role_prefix || '_' || r.role
                and pg_catalog.strpos(p.prosrc, $1) > 0))
        order by n.id`,
      [WRAPPER_VERSION, NAMESPACE_ROLES])
    for (const row of rows) {
      const namespace = fromRow(row)
      await tx.exec(NAMESPACE_ROLES.map((role) => wrapperSql(namespace, role, 'create or replace')).join('\n'))
    }
    return rows.length
  })
}

/** Removes a namespace's schema, wrappers, roles and row (inside `tx`). */
export async function dropNamespace(tx: Queryable, namespace: Namespace): Promise<void> {
  const roles = NAMESPACE_ROLES.map((role) => ident(roleName(namespace, role))).join(', ')
  // The schema first: `drop owned` dropping it together with its default privileges failed
  // with "could not find tuple for default ACL" (PGlite).
  await tx.exec(`drop schema if exists ${ident(namespace.schemaName)} cascade; drop owned by ${roles} cascade; drop role ${roles};`)
  await tx.query('delete from platform.namespaces where id = $1', [namespace.id])
}

export interface RunAsOptions {
  /** `request.jwt.claims` for this statement (null: none). */
  claims?: Record<string, unknown> | null
  /**
   * Bound values, readable in the statement as `$1` (one jsonb array). Omit for a script of
   * several statements without a result (migrations).
   */
  params?: readonly unknown[]
}

/**
 * Runs app SQL as one namespace role and returns the statement's single json value (null
 * for scripts; json, not jsonb, so objects keep their key order). Call it inside the caller's transaction so a failure rolls everything back.
 */
export async function runAsRole(
  db: Queryable,
  target: { namespace: Namespace; role: NamespaceRole },
  statement: string,
  options: RunAsOptions = {},
): Promise<unknown> {
  const fn = `platform_exec.${ident(roleName(target.namespace, target.role))}`
  const rows = await db.query<{ result: unknown }>(`select ${fn}($1, $2, $3::jsonb) as result`, [
    options.claims ? JSON.stringify(options.claims) : null,
    statement,
    options.params === undefined ? null : JSON.stringify(options.params),
  ], { appSql: true })
  return rows[0]?.result ?? null
}
