/**
 * Logins for namespace roles (PostgreSQL only). The data API's fast path connects as the
 * namespace's own role, so no platform (superuser) session ever runs that app's SQL. Each
 * role's password is derived from the master key and never stored or sent anywhere but in
 * the connection's SCRAM exchange; PostgreSQL keeps only its SCRAM verifier, which the
 * platform computes itself, so the `alter role` that sets it never carries the password.
 *
 * A role may change its own password (PostgreSQL allows that to every login role), so the
 * platform checks the verifiers it set and puts them back (`sweepLogins`).
 */
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import { ident, literal, type Db } from '../db/db.ts'

/** Group role every namespace login belongs to, for one pg_hba.conf line (`+service_app_login`). */
export const LOGIN_GROUP = 'service_app_login'

const SCRAM_ITERATIONS = 4096

export interface LoginCredentials {
  role: string
  password: string
  /** `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, what PostgreSQL stores. */
  verifier: string
}

/**
 * The password and verifier of one role, from a key derived from the master key. Both are
 * deterministic, so every process over one database sets and expects the same verifier.
 */
export function loginCredentials(key: Uint8Array, role: string): LoginCredentials {
  const password = createHmac('sha256', key).update(`password:${role}`).digest('base64url')
  const salt = createHmac('sha256', key).update(`salt:${role}`).digest().subarray(0, 16)
  return { role, password, verifier: scramVerifier(password, salt, SCRAM_ITERATIONS) }
}

/** RFC 5802/7677 as PostgreSQL spells it (`pg_authid.rolpassword`). */
export function scramVerifier(password: string, salt: Uint8Array, iterations: number): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256')
  const clientKey = createHmac('sha256', salted).update('Client Key').digest()
  const storedKey = createHash('sha256').update(clientKey).digest()
  const serverKey = createHmac('sha256', salted).update('Server Key').digest()
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64')
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`
}

/**
 * Settings every namespace login carries as its role's own defaults: superuser-only
 * parameters, which the role's own SQL can neither change nor remove. `temp_file_limit`
 * bounds the temporary files one session (a held cursor, a large sort) keeps on the server.
 */
export const LOGIN_ROLE_CONFIG: readonly string[] = ['temp_file_limit=1GB']

/**
 * What `ensureLogin` found: `ready` (nothing to do), `enabled` (first login), or `repaired`:
 * the role could log in but with another password or settings (its own SQL changed them, or
 * the master key changed). After `repaired`, sessions opened with the other password may be
 * open: the caller ends them.
 */
export type LoginState = 'ready' | 'enabled' | 'repaired'

const READINESS_SQL = `
select a.rolcanlogin as can_login,
       a.rolcanlogin and a.rolpassword is not distinct from $2
       and coalesce((select s.setconfig from pg_catalog.pg_db_role_setting s
                      where s.setrole = a.oid and s.setdatabase = 0), '{}') @> $4::text[]
       and pg_catalog.has_database_privilege(a.oid, pg_catalog.current_database(), 'CONNECT')
       and pg_catalog.pg_has_role(a.oid, $3, 'MEMBER')
       and exists (select from platform.namespace_logins l where l.role_name = a.rolname and l.verifier = $2) as ready,
       pg_catalog.has_database_privilege(a.oid, pg_catalog.current_database(), 'CONNECT') as can_connect
  from pg_catalog.pg_authid a where a.rolname = $1`

/**
 * Makes `credentials.role` a login role with the expected verifier and settings, allowed to
 * connect to this database and a member of `LOGIN_GROUP`, and records the verifier for the
 * sweep. One read when all is in place. A repair takes a lock on `platform.namespace_logins`,
 * which no app role can reach (an advisory lock's key, app SQL could compute and hold), so one
 * repair runs at a time: PostgreSQL fails concurrent `alter role` of one role and concurrent
 * grants on one database with "tuple concurrently updated".
 */
export async function ensureLogin(db: Db, credentials: LoginCredentials, namespaceId: string): Promise<LoginState> {
  const params = [credentials.role, credentials.verifier, LOGIN_GROUP, LOGIN_ROLE_CONFIG]
  const [seen] = await db.query<{ ready: boolean }>(READINESS_SQL, params)
  if (!seen) throw new Error(`role ${credentials.role} does not exist`)
  if (seen.ready) return 'ready'
  return db.transaction(async (tx) => {
    await tx.query(`select pg_catalog.set_config('lock_timeout', '10s', true)`)
    await tx.exec('lock table platform.namespace_logins in share row exclusive mode')
    const [row] = await tx.query<{ can_login: boolean; ready: boolean; can_connect: boolean }>(READINESS_SQL, params)
    if (!row) throw new Error(`role ${credentials.role} does not exist`)
    // Another process may have repaired it meanwhile.
    if (row.ready) return 'ready'
    const role = ident(credentials.role)
    await tx.exec(`
alter role ${role} login password ${literal(credentials.verifier)};
${LOGIN_ROLE_CONFIG.map((setting) => {
  const [name, value] = setting.split('=') as [string, string]
  return `alter role ${role} set ${ident(name)} = ${literal(value)};`
}).join('\n')}
grant ${ident(LOGIN_GROUP)} to ${role};`)
    // Usually CONNECT comes from PUBLIC; granted only where an operator revoked that.
    if (!row.can_connect) {
      await tx.exec(`do $grant$ begin
  execute pg_catalog.format('grant connect on database %I to %I', pg_catalog.current_database(), ${literal(credentials.role)});
end $grant$;`)
    }
    await tx.query(
      `insert into platform.namespace_logins (role_name, namespace_id, verifier) values ($1, $2, $3)
       on conflict (role_name) do update set verifier = excluded.verifier, updated_at = now()`,
      [credentials.role, namespaceId, credentials.verifier])
    return row.can_login ? 'repaired' : 'enabled'
  })
}

/**
 * Namespace logins that can log in with a password other than the one the platform set (the
 * role's own SQL changed it, or an operator did), whichever process set it: one query. A role
 * an operator made NOLOGIN is left so.
 */
export async function tamperedLogins(db: Db): Promise<{ role: string; namespaceId: string }[]> {
  const rows = await db.query<{ role_name: string; namespace_id: string }>(
    `select l.role_name, l.namespace_id from platform.namespace_logins l
       join pg_catalog.pg_authid a on a.rolname = l.role_name
      where a.rolcanlogin and a.rolpassword is distinct from l.verifier`)
  return rows.map((r) => ({ role: r.role_name, namespaceId: r.namespace_id }))
}

/** Ends every session of a role (after its password was put back: one may be an intruder's). */
export async function terminateSessions(db: Db, role: string): Promise<number> {
  // Materialized first: in one WHERE the planner may call pg_terminate_backend before it
  // filters by role, ending every session on the server.
  const rows = await db.query<{ pid: number }>(
    `with targets as materialized (select pid from pg_catalog.pg_stat_activity where usename = $1)
     select pid from targets where pg_catalog.pg_terminate_backend(pid)`, [role])
  return rows.length
}

/**
 * Stops the statements of namespace logins in this database that have run longer than
 * `maxMs`: a session's own statement_timeout is a setting its SQL can lift, and a commit's
 * deferred triggers have none. A cancel first; PL/pgSQL can catch a cancel
 * (`exception when query_canceled`), so a statement still running `graceMs` later has its
 * session terminated, which nothing catches. Any process may do it for any login; one query.
 */
export async function stopOverdue(db: Db, maxMs: number, graceMs: number): Promise<{ active: number; cancelled: number; terminated: number }> {
  const rows = await db.query<{ overdue: boolean; terminate: boolean; stopped: boolean }>(
    `with active as materialized (
       select a.pid,
              a.query_start < pg_catalog.clock_timestamp() - $1 * interval '1 millisecond' as overdue,
              a.query_start < pg_catalog.clock_timestamp() - ($1 + $2) * interval '1 millisecond' as terminate
         from pg_catalog.pg_stat_activity a
        where a.state = 'active' and a.datname = pg_catalog.current_database()
          and a.usesysid in (select m.member from pg_catalog.pg_auth_members m
                               join pg_catalog.pg_roles g on g.oid = m.roleid where g.rolname = $3))
     select overdue, terminate,
            case when not overdue then false
                 when terminate then pg_catalog.pg_terminate_backend(pid)
                 else pg_catalog.pg_cancel_backend(pid) end as stopped
       from active`,
    [maxMs, graceMs, LOGIN_GROUP])
  return {
    active: rows.length,
    cancelled: rows.filter((r) => r.stopped && !r.terminate).length,
    terminated: rows.filter((r) => r.stopped && r.terminate).length,
  }
}
