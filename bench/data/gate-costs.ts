/**
 * `npx tsx bench/data/gate-costs.ts`: what the data statement's caller checks cost
 * PostgreSQL per request, measured on their own (a profiling aid for bench:data, not part of
 * it). Each shape is the prologue a `/rest/v1` statement starts with, sent as one prepared
 * statement over one connection, many times in a row; the CPU time of that connection's
 * backend (/proc, so the server must be local) is divided by the calls. Shapes alternate
 * over the rounds so a slow spell on a shared machine hits them all; medians are printed.
 *
 * - `claims given`: the prologue with the claims as a parameter (the login pool statement
 *   without a check);
 * - `empty door`: a security-definer PL/pgSQL function with the check's signature and
 *   settings that returns at once: the least any check inside the statement costs; and the
 *   same without its `set search_path` clause, to show what that clause costs;
 * - `token check, 0027`: migration 0027's check (the token, its app, its owner: three index
 *   probes and the claims' JSON built per call), recreated here under another name;
 * - `token check`: the check the platform runs (migration 0033: one probe on
 *   `platform.app_token_callers`);
 * - `cookie check`: the app session cookie's check (migration 0033).
 *
 * A platform schema with 1,000 users, apps and 5,000 tokens, and one app session. A
 * throwaway PostgreSQL unless DATABASE_URL is set. Environment: GATE_CALLS (per shape and
 * round, default 20,000), GATE_ROUNDS (default 5).
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { createDatabase, startServer } from './postgres.ts'

const CALLS = Number(process.env.GATE_CALLS ?? 20_000)
const ROUNDS = Number(process.env.GATE_ROUNDS ?? 5)
const OWNERS = 1000
const TOKENS_PER_APP = 5

/** utime + stime of a process, in microseconds. */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) / 100) * 1e6
}

function loadAverage(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  } catch {
    return 'unknown'
  }
}

const sha256 = (value: string) => createHash('sha256').update(value).digest()

/** Migration 0027's token check, kept for comparison in a schema of this tool's own. */
const CHECK_0027 = `
create schema bench_gate;
create function bench_gate.app_token_caller_0027(p_app uuid, p_hash text) returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $check$
declare
  r platform_gate.caller;
begin
  select pg_catalog.json_build_object('sub', u.id, 'role', 'authenticated', 'email', u.email, 'aud', p_app)::text, t.id
    into r
    from platform.app_access_tokens t
    join platform.apps a on a.id = t.app_id and a.owner_id = t.created_by
    join platform.users u on u.id = a.owner_id
   where t.token_hash = pg_catalog.decode(p_hash, 'hex') and t.app_id = p_app
     and t.revoked_at is null and u.email_confirmed_at is not null;
  if r.claims is null then
    raise exception 'the app access token is not valid for this app' using errcode = 'SVA01';
  end if;
  return r;
end
$check$;
create function bench_gate.empty_caller(p_app uuid, p_hash text) returns platform_gate.caller
language plpgsql stable security definer
set search_path = pg_catalog, pg_temp
as $check$ begin return row('{}', null)::platform_gate.caller; end $check$;
create function bench_gate.empty_caller_unset(p_app uuid, p_hash text) returns platform_gate.caller
language plpgsql stable security definer
as $check$ begin return row('{}', null)::platform_gate.caller; end $check$;
`

const server = startServer(process.env.DATABASE_URL)
try {
  const database = await createDatabase(server.adminUrl)
  try {
    const db = openPostgres({ url: database.url, maxConnections: 2 })
    let app = ''
    let owner = ''
    let tokenHash = ''
    let cookieHash = ''
    try {
      await migratePlatform(db)
      await db.exec(CHECK_0027)
      const [{ id: organisation }] = await db.query<{ id: string }>(`insert into platform.organisations (name) values ('Bench') returning id`) as [{ id: string }]
      for (let i = 0; i < OWNERS; i++) {
        const [user] = await db.query<{ id: string }>(
          'insert into platform.users (organisation_id, email, email_confirmed_at) values ($1, $2, now()) returning id', [organisation, `owner${i}@bench.test`])
        const [created] = await db.query<{ id: string }>(
          `insert into platform.apps (organisation_id, owner_id, slug, name, visibility) values ($1, $2, $3, $3, 'private') returning id`,
          [organisation, user!.id, `bench-app-${i}`])
        for (let j = 0; j < TOKENS_PER_APP; j++) {
          const hash = sha256(`svc_app_${randomBytes(32).toString('base64url')}`)
          await db.query(`insert into platform.app_access_tokens (app_id, name, token_hash, created_by, created_at) values ($1, 'bench', $2, $3, now())`,
            [created!.id, hash, user!.id])
          if (i === OWNERS / 2 && j === 2) {
            app = created!.id
            owner = user!.id
            tokenHash = hash.toString('hex')
          }
        }
        if (i === OWNERS / 2) {
          const [session] = await db.query<{ id: string }>(
            `insert into platform.sessions (user_id, secret_hash, provisional, created_at, expires_at) values ($1, $2, false, now(), now() + interval '30 days') returning id`,
            [user!.id, sha256(randomBytes(32).toString('base64url'))])
          const cookie = sha256(randomBytes(32).toString('base64url'))
          await db.query(
            `insert into platform.app_sessions (session_id, app_id, user_id, secret_hash, refresh_token_enc, access_expires_at, created_at, expires_at)
             values ($1, $2, $3, $4, 'x', now() + interval '1 hour', now(), now() + interval '30 days')`,
            [session!.id, created!.id, user!.id, cookie])
          cookieHash = cookie.toString('hex')
        }
      }
      await db.exec('analyze')
    } finally {
      await db.close()
    }

    const sql = postgres(database.url, { max: 1, onnotice: () => {} })
    try {
      const [backend] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`
      const pid = backend!.pid
      const claims = JSON.stringify({ sub: owner, role: 'authenticated', email: 'owner@bench.test', aud: app })
      const gated = (call: string) => `select pg_catalog.set_config('request.jwt.claims', g.claims, true), g.token_id from ${call} as g`
      const now = () => new Date().toISOString()
      const shapes: [string, string, () => unknown[]][] = [
        ['claims given', `select pg_catalog.set_config('request.jwt.claims', $1, true)`, () => [claims]],
        ['empty door', gated('bench_gate.empty_caller($1::uuid, $2::text)'), () => [app, tokenHash]],
        ['empty door without set search_path', gated('bench_gate.empty_caller_unset($1::uuid, $2::text)'), () => [app, tokenHash]],
        ['token check, 0027 (three probes)', gated('bench_gate.app_token_caller_0027($1::uuid, $2::text)'), () => [app, tokenHash]],
        ['token check, 0033 (one probe)', gated('platform_gate.app_token_caller($1::uuid, $2::text)'), () => [app, tokenHash]],
        ['cookie check, 0033', gated('platform_gate.app_cookie_caller($1::uuid, $2::text, $3::timestamptz, $4::timestamptz, $5::boolean, $6::uuid)'),
          () => [app, cookieHash, now(), now(), true, owner]],
      ]
      const results = new Map<string, { cpu: number[]; wall: number[] }>(shapes.map(([name]) => [name, { cpu: [], wall: [] }]))
      for (const [, text, args] of shapes) for (let i = 0; i < 200; i++) await sql.unsafe(text, args() as never[], { prepare: true })
      const loads = [loadAverage()]
      for (let round = 0; round < ROUNDS; round++) {
        for (const [name, text, args] of shapes) {
          const values = args()
          const cpu0 = cpuMicros(pid)
          const t0 = performance.now()
          for (let i = 0; i < CALLS; i++) await sql.unsafe(text, values as never[], { prepare: true })
          const wall = (performance.now() - t0) * 1000 / CALLS
          results.get(name)!.cpu.push((cpuMicros(pid) - cpu0) / CALLS)
          results.get(name)!.wall.push(wall)
        }
        loads.push(loadAverage())
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
      const base = median(results.get('claims given')!.cpu)
      console.log(`PostgreSQL ${database.version}; ${CALLS.toLocaleString('en-US')} calls per shape and round, ${ROUNDS} rounds, one connection; ` +
        `load average (1, 5, 15 min) ${loads.join(' -> ')}\n`)
      console.log('| prologue | backend CPU µs per call (median) | over `claims given` | round trip µs (median) | CPU per round |')
      console.log('| --- | ---: | ---: | ---: | --- |')
      for (const [name, { cpu, wall }] of results) {
        const m = median(cpu)
        console.log(`| ${name} | ${m.toFixed(1)} | ${name === 'claims given' ? '' : `+${(m - base).toFixed(1)}`} | ${median(wall).toFixed(0)} | ${cpu.map((v) => v.toFixed(1)).join(', ')} |`)
      }
    } finally {
      await sql.end({ timeout: 5 })
    }
  } finally {
    await database.drop()
  }
} finally {
  server.stop()
}
