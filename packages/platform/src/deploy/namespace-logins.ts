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
 * Makes `credentials.role` a login role with the expected verifier, allowed to connect to
 * this database and a member of `LOGIN_GROUP`. A read when all is in place; one process at a
 * time per role otherwise (concurrent `alter role` on one role fails in PostgreSQL).
 */
export async function ensureLogin(db: Db, credentials: LoginCredentials): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(hashtext($1))', [`namespace-login:${credentials.role}`])
    const [row] = await tx.query<{ ready: boolean }>(
      `select a.rolcanlogin and a.rolpassword is not distinct from $2
              and pg_catalog.has_database_privilege(a.oid, pg_catalog.current_database(), 'CONNECT')
              and pg_catalog.pg_has_role(a.oid, $3, 'MEMBER') as ready
         from pg_catalog.pg_authid a where a.rolname = $1`,
      [credentials.role, credentials.verifier, LOGIN_GROUP])
    if (!row) throw new Error(`role ${credentials.role} does not exist`)
    if (row.ready) return
    const role = ident(credentials.role)
    await tx.exec(`
alter role ${role} login password ${literal(credentials.verifier)};
grant ${ident(LOGIN_GROUP)} to ${role};
do $grant$ begin
  execute pg_catalog.format('grant connect on database %I to %I', pg_catalog.current_database(), ${literal(credentials.role)});
end $grant$;`)
  })
}

/**
 * Of the given logins, those whose role no longer has the verifier the platform set (the
 * role's own SQL changed its password, or an operator did): the caller puts them back.
 */
export async function tamperedLogins(db: Db, logins: readonly LoginCredentials[]): Promise<string[]> {
  if (logins.length === 0) return []
  const rows = await db.query<{ rolname: string }>(
    `select a.rolname from unnest($1::text[], $2::text[]) as e(role, verifier)
       join pg_catalog.pg_authid a on a.rolname = e.role
      where not a.rolcanlogin or a.rolpassword is distinct from e.verifier`,
    [logins.map((l) => l.role), logins.map((l) => l.verifier)])
  return rows.map((r) => r.rolname)
}

/** Ends every session of a role (after its password was put back: a session opened with the other one). */
export async function terminateSessions(db: Db, role: string): Promise<number> {
  // Materialized first: in one WHERE the planner may call pg_terminate_backend before it
  // filters by role, ending every session on the server.
  const rows = await db.query<{ pid: number }>(
    `with targets as materialized (select pid from pg_catalog.pg_stat_activity where usename = $1)
     select pid from targets where pg_catalog.pg_terminate_backend(pid)`, [role])
  return rows.length
}
