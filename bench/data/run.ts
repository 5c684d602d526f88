/**
 * `npm run bench:data`: the data API (`/rest/v1`) against the `postgres` driver alone.
 *
 * Three cases on a private app's `items` table (100,000 rows, RLS on): a primary-key read, a
 * filtered list of 50 rows through an index, and a single insert with `return=minimal`. Each
 * goes through the platform's real HTTP server on loopback (a child process, authenticated
 * with an `svc_app_` token acting as the owner) and, in the same run on the same server and
 * table at the same concurrency, straight through the driver. More PostgreSQL rows decompose
 * the gap: the API's own statement sent through `runAsRole` without HTTP; the primary-key
 * read with a signed-in person's bearer JWT, and with their browser's app session cookie;
 * the primary-key read through a bare Hono +
 * driver server (the floor for any Node HTTP API here); and one connection instead of ten.
 * The contenders of a case are measured in turn over several rounds, so a slow spell on a
 * shared machine hits all of them; CPU time per request is read per process from /proc. The
 * app token check's own cost is measured on one login connection (its statement with and
 * without the check, alternating). A sequential profile then counts the SQL statements each
 * request runs and their time.
 * PGlite gets the API figures only: it is an in-process engine with no driver of its own to
 * compare against.
 *
 * Environment: DATABASE_URL (else a throwaway server from scripts/postgres-test-server.sh),
 * BENCH_SECONDS (measured seconds per headline contender, default 8; others get half),
 * BENCH_CPU_PROF (a directory: the platform server writes a V8 CPU profile there).
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import { ident } from '../../packages/platform/src/db/db.ts'
import { openPostgres } from '../../packages/platform/src/db/postgres.ts'
import { findNamespace, runAsRole, type Namespace } from '../../packages/platform/src/namespaces/namespaces.ts'
import { createNamespaceSql, type CallerGate, type RunOptions } from '../../packages/platform/src/namespaces/namespace-sql.ts'
import { silentLogger } from '../../packages/platform/src/lib/logger.ts'
import { loadSchema } from '../../packages/platform/src/data-api/schema.ts'
import { parseMutationParams, parseReadRequest } from '../../packages/platform/src/data-api/query-parser.ts'
import { parsePrefer } from '../../packages/platform/src/data-api/query-prefer.ts'
import { buildRead, buildWrite, statementSql, type Statement } from '../../packages/platform/src/data-api/sql.ts'
import { otherSeconds, perRequest, postmasterOf, processSeconds, readCpu, type CpuPerRequest } from './cpu.ts'
import {
  alternate, callRunner, httpOnce, httpRunner, sequentialHttp, summarise, type HttpCase, type HttpTarget, type Runner, type Summary,
} from './load.ts'
import { createDatabase, startServer } from './postgres.ts'
import { startChild, startFloor, type Child } from './child.ts'
import type { Fixture, Profile, Storage } from './protocol.ts'

const CONNECTIONS = 10
const ROWS = 100_000
const CATEGORIES = 100
const PROFILE_REQUESTS = 300
/** The token check on one connection: calls per shape and round, and rounds. */
const CHECK_CALLS = 3000
const CHECK_ROUNDS = 9
/** Measured seconds per headline contender (driver, API), split over the rounds. */
const seconds = Number(process.env.BENCH_SECONDS ?? 8)
const ROUNDS = 4
const HEADLINE = { warmupSeconds: 2, sliceSeconds: seconds / ROUNDS }
const SECONDARY = { warmupSeconds: 1, sliceSeconds: seconds / ROUNDS / 2 }

type CaseName = 'pk read' | 'list 50' | 'insert'
const CASES: readonly CaseName[] = ['pk read', 'list 50', 'insert']
const COLUMNS = 'id, category, name, price, created_by, created_at'
const DRIVER = 'driver (postgres, prepared)'
const API = 'API, svc_app_ token'
const WRAPPED = 'API statement via the wrapper (runAsRole), no HTTP'
const LOGIN = 'API statement via the login pool, no HTTP'
const GATED = 'same, with the app token check in it, no HTTP'
const FLOOR = 'floor: bare Hono + driver, no auth'
const JWT = 'API, user JWT (granted)'
const COOKIE = 'API, app session cookie (granted)'
const INSERT_ROW = { category: 'inserted', name: 'bench insert', price: 9.99 }

const randomId = () => 1 + Math.floor(Math.random() * ROWS)
const randomCategory = () => `c${Math.floor(Math.random() * CATEGORIES)}`

interface Row {
  storage: Storage
  name: CaseName
  target: string
  connections: number
  summary: Summary
  cpu: CpuPerRequest
  /** Share of the CPUs other processes used while this row was measured (null: unknown). */
  other: number | null
  /** API p50 / driver p50 and driver rps / API rps, for rows compared with a driver row. */
  versus?: { p50: number; rps: number }
}

// ---- The servers under test ----


// ---- The requests ----

function httpCases(fixture: Fixture): Record<CaseName, HttpCase> {
  const auth = { authorization: `Bearer ${fixture.appToken}` }
  return {
    'pk read': { method: 'GET', path: () => `/rest/v1/items?id=eq.${randomId()}`, headers: auth },
    'list 50': { method: 'GET', path: () => `/rest/v1/items?category=eq.${randomCategory()}&order=id&limit=50`, headers: auth },
    insert: {
      method: 'POST',
      path: () => '/rest/v1/items',
      headers: { ...auth, 'content-type': 'application/json', prefer: 'return=minimal' },
      body: JSON.stringify(INSERT_ROW),
    },
  }
}

/** Every case answers what it should before it is timed. */
async function checkCases(target: HttpTarget, cases: Record<string, HttpCase>): Promise<void> {
  for (const [name, spec] of Object.entries(cases)) {
    const { status, body } = await httpOnce(target, spec)
    const expected = spec.method === 'POST' ? 201 : 200
    const rows = status === 200 ? (JSON.parse(body) as unknown[]).length : null
    const rowsOk = rows === null || rows === (name.startsWith('list') ? 50 : 1)
    if (status !== expected || !rowsOk) throw new Error(`${name}: expected ${expected}, got ${status} (${rows} rows) ${body.slice(0, 300)}`)
  }
}

async function profileCases(child: Child, target: HttpTarget, cases: Record<string, HttpCase>): Promise<Map<string, { clientMs: number; profile: Profile }>> {
  const out = new Map<string, { clientMs: number; profile: Profile }>()
  for (const [name, spec] of Object.entries(cases)) {
    await sequentialHttp(target, spec, 50)
    await child.profile(true)
    const sample = await sequentialHttp(target, spec, PROFILE_REQUESTS)
    const profile = await child.profile(false)
    if (!profile) throw new Error('the server returned no profile')
    out.set(name, { clientMs: sample.latencies.reduce((a, b) => a + b, 0) / sample.count, profile })
  }
  return out
}

// ---- Runs ----

function log(line: string): void {
  process.stderr.write(`${line}\n`)
}

interface Meter {
  serverPid: number | null
  postmaster: number | null
}

interface Metered extends Runner {
  cpu(requests: number): CpuPerRequest
  /** Share of the machine's CPUs other processes used during the measured windows. */
  otherShare(): number | null
}

/** A runner whose measured windows (not its warm-up) are charged CPU time, per process. */
function metered(runner: Runner, meter: Meter): Metered {
  const total = { client: 0, server: 0, postgres: 0, other: 0 as number | null, wall: 0 }
  return {
    warm: (s) => runner.warm(s),
    async measure(s) {
      const before = readCpu(meter.serverPid, meter.postmaster)
      const sample = await runner.measure(s)
      const after = readCpu(meter.serverPid, meter.postmaster)
      const used = perRequest(before, after, 1)
      total.client += used.client
      total.server += used.server ?? 0
      total.postgres += used.postgres ?? 0
      const other = otherSeconds(before, after)
      total.other = other === null || total.other === null ? null : total.other + other * 1e6
      total.wall += sample.seconds * 1e6
      return sample
    },
    otherShare: () => (total.other === null || total.wall === 0 ? null : total.other / (total.wall * os.availableParallelism())),
    cpu: (requests) => ({
      client: total.client / requests,
      server: meter.serverPid === null ? null : total.server / requests,
      postgres: meter.postmaster === null ? null : total.postgres / requests,
    }),
  }
}

interface Entry {
  name: CaseName
  target: string
  connections: number
  runner: Metered
  timing: { warmupSeconds: number; sliceSeconds: number }
  /** The entry (by target and connections) whose p50 and rps this one is compared with. */
  versus?: string
}

/** Runs entries in alternation and appends their rows; `versus` names a baseline target. */
async function runGroup(storage: Storage, entries: Entry[], rows: Row[]): Promise<void> {
  const samples = await alternate(entries.map((e) => ({ runner: e.runner, ...e.timing })), ROUNDS)
  const results = entries.map((e, i) => ({ entry: e, summary: summarise(samples[i]!), requests: samples[i]!.count }))
  for (const { entry, summary, requests } of results) {
    const base = entry.versus ? results.find((r) => r.entry.target === entry.versus && r.entry.connections === entry.connections) : undefined
    rows.push({
      storage, name: entry.name, target: entry.target, connections: entry.connections, summary,
      cpu: entry.runner.cpu(requests),
      other: entry.runner.otherShare(),
      ...(base ? { versus: versus(summary, base.summary) } : {}),
    })
  }
}

/**
 * The app token check's PostgreSQL CPU per request, on one login connection: the pk read's
 * statement with the check in it, then the same statement with its claims given, sent one
 * after the other on a pool of one connection, in alternation over rounds; the CPU of that
 * one backend (/proc) per call. Unlike two rows measured apart at 10 connections, the
 * difference is not buried in the noise of a shared machine. Medians of the rounds.
 */
async function tokenCheckOnOneConnection(options: {
  db: Parameters<typeof createNamespaceSql>[0]['db']
  loginKey: Uint8Array
  namespace: Namespace
  statement: () => Statement
  claims: Record<string, unknown>
  gate: CallerGate
}): Promise<{ withCheckUs: number; withoutUs: number; checkUs: number }> {
  const sql = createNamespaceSql({
    db: options.db, logger: silentLogger, loginKey: options.loginKey,
    connections: 1, poolSize: 1, statementTimeoutMs: 120_000, sweepIntervalMs: 0,
  })
  const target = { namespace: options.namespace, role: 'user' as const }
  const shapes: [string, RunOptions][] = [
    ['with', { claims: null, readOnly: true, gate: options.gate }],
    ['without', { claims: options.claims, readOnly: true }],
  ]
  // The pool's one connection's backend, asked through that connection.
  const backend = async () =>
    Number(await sql.statement(target, { ctes: [], value: 'pg_catalog.pg_backend_pid()', params: [] }, { claims: null, readOnly: true }))
  const perCall: Record<string, number[]> = { with: [], without: [] }
  try {
    for (const [, run] of shapes) for (let i = 0; i < 300; i++) await sql.statement(target, options.statement(), run)
    for (let round = 0; round < CHECK_ROUNDS; round++) {
      for (const [name, run] of shapes) {
        const pid = await backend()
        const before = processSeconds(pid)
        for (let i = 0; i < CHECK_CALLS; i++) await sql.statement(target, options.statement(), run)
        // A round on a connection that was replaced meanwhile is left out.
        if (before === null || (await backend()) !== pid) continue
        perCall[name]!.push(((processSeconds(pid)! - before) / CHECK_CALLS) * 1e6)
      }
    }
  } finally {
    await sql.close()
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
  const withCheckUs = median(perCall['with']!)
  const withoutUs = median(perCall['without']!)
  return { withCheckUs, withoutUs, checkUs: withCheckUs - withoutUs }
}

let oneConnectionCheck: Awaited<ReturnType<typeof tokenCheckOnOneConnection>> | null = null

async function runPostgres(databaseUrl: string, rows: Row[]): Promise<Map<string, { clientMs: number; profile: Profile }>> {
  log('postgres: starting the platform server and seeding the app')
  const child = await startChild({ storage: 'postgres', databaseUrl, rows: ROWS, categories: CATEGORIES })
  const { fixture } = child
  log(`postgres: ${fixture.rows} rows; deploy with migrations and seed took ${fixture.seedSeconds.toFixed(1)} s`)
  const target: HttpTarget = { port: fixture.port, host: fixture.host }
  const cases = httpCases(fixture)
  const jwtCase: HttpCase = { ...cases['pk read'], headers: { authorization: `Bearer ${fixture.userJwt}` } }
  const cookieCase: HttpCase = { ...cases['pk read'], headers: { cookie: fixture.userCookie, accept: 'application/json' } }
  const driver = postgres(databaseUrl, { max: CONNECTIONS, onnotice: () => {} })
  const platformDb = openPostgres({ url: databaseUrl, maxConnections: CONNECTIONS })
  try {
    await checkCases(target, { ...cases, 'pk read (user JWT)': jwtCase, 'pk read (cookie)': cookieCase })
    const [backend] = await driver<{ pid: number }[]>`select pg_backend_pid() as pid`
    const postmaster = backend ? postmasterOf(backend.pid) : null
    const onServer: Meter = { serverPid: child.pid, postmaster }
    const inClient: Meter = { serverPid: null, postmaster }
    const table = `${ident(fixture.schemaName)}.items`
    const driverCalls: Record<CaseName, () => Promise<unknown>> = {
      'pk read': () => driver.unsafe(`select ${COLUMNS} from ${table} where id = $1`, [randomId()], { prepare: true }),
      'list 50': () => driver.unsafe(`select ${COLUMNS} from ${table} where category = $1 order by id limit 50`, [randomCategory()], { prepare: true }),
      insert: () => driver.unsafe(`insert into ${table} (category, name, price) values ($1, $2, $3)`,
        [INSERT_ROW.category, INSERT_ROW.name, INSERT_ROW.price], { prepare: true }),
    }

    // The API's own statement for each case, built by the same parser and SQL builder, run as
    // the namespace's user role through runAsRole on the platform's Db adapter.
    const namespace = await findNamespace(platformDb, fixture.appId)
    if (!namespace) throw new Error('no namespace for the bench app')
    const schema = await loadSchema(platformDb, fixture.schemaName)
    const claims = { sub: fixture.ownerId, role: 'authenticated', email: fixture.ownerEmail, aud: fixture.appId }
    const statements: Record<CaseName, () => Statement> = {
      'pk read': () => buildRead(schema, parseReadRequest('items', new URLSearchParams(`id=eq.${randomId()}`)), parsePrefer(null)),
      'list 50': () => buildRead(schema, parseReadRequest('items', new URLSearchParams(`category=eq.${randomCategory()}&order=id&limit=50`)), parsePrefer(null)),
      insert: () => buildWrite(schema, {
        request: parseMutationParams('items', new URLSearchParams(), { method: 'POST' }),
        prefer: parsePrefer('return=minimal'),
        body: INSERT_ROW,
      }),
    }
    const appSql = createNamespaceSql({
      db: platformDb, logger: silentLogger, loginKey: new Uint8Array(Buffer.from(fixture.loginKey, 'base64')),
      connections: 32, poolSize: 4, statementTimeoutMs: 120_000, sweepIntervalMs: 0,
    })
    const readOnly: Record<CaseName, boolean> = { 'pk read': true, 'list 50': true, insert: false }
    const viaLogin = (name: CaseName) => () =>
      appSql.statement({ namespace, role: 'user' }, statements[name](), { claims, readOnly: readOnly[name] })
    // The same statement with the app token checked in its first CTE, as the API sends it.
    const tokenGate = { check: 'app_token' as const, args: [fixture.appId, createHash('sha256').update(fixture.appToken).digest('hex')] }
    const viaLoginGated = (name: CaseName) => () =>
      appSql.statement({ namespace, role: 'user' }, statements[name](), { claims: null, readOnly: readOnly[name], gate: tokenGate })
    const wrapped = (name: CaseName) => () => {
      const statement = statements[name]()
      return runAsRole(platformDb, { namespace, role: 'user' }, statementSql(statement), { claims, params: statement.params })
    }
    const api = (spec: HttpCase, connections: number) => metered(httpRunner(target, spec, connections), onServer)
    const calls = (call: () => Promise<unknown>, connections: number) => metered(callRunner(call, connections), inClient)

    log('postgres: starting the floor server (bare Hono + driver)')
    const floor = await startFloor(databaseUrl, table, CONNECTIONS)
    try {
      const floorTarget: HttpTarget = { port: floor.port, host: `127.0.0.1:${floor.port}` }
      const floorCase: HttpCase = { method: 'GET', path: cases['pk read'].path, headers: {} }
      const onFloor: Meter = { serverPid: floor.pid, postmaster }
      const floorRunner = (connections: number) => metered(httpRunner(floorTarget, floorCase, connections), onFloor)
      for (const name of CASES) {
        const group: Entry[] = [
          { name, target: DRIVER, connections: CONNECTIONS, runner: calls(driverCalls[name], CONNECTIONS), timing: HEADLINE },
          { name, target: API, connections: CONNECTIONS, runner: api(cases[name], CONNECTIONS), timing: HEADLINE, versus: DRIVER },
          { name, target: LOGIN, connections: CONNECTIONS, runner: calls(viaLogin(name), CONNECTIONS), timing: SECONDARY, versus: DRIVER },
          { name, target: WRAPPED, connections: CONNECTIONS, runner: calls(wrapped(name), CONNECTIONS), timing: SECONDARY, versus: DRIVER },
        ]
        if (name === 'pk read') {
          group.push(
            { name, target: GATED, connections: CONNECTIONS, runner: calls(viaLoginGated(name), CONNECTIONS), timing: SECONDARY, versus: DRIVER },
            { name, target: JWT, connections: CONNECTIONS, runner: api(jwtCase, CONNECTIONS), timing: SECONDARY, versus: DRIVER },
            { name, target: COOKIE, connections: CONNECTIONS, runner: api(cookieCase, CONNECTIONS), timing: SECONDARY, versus: DRIVER },
            { name, target: FLOOR, connections: CONNECTIONS, runner: floorRunner(CONNECTIONS), timing: SECONDARY, versus: DRIVER },
          )
        }
        log(`postgres: ${name}: ${group.map((e) => e.target).join(' / ')}, in turn, ${ROUNDS} rounds`)
        await runGroup('postgres', group, rows)
      }
      log(`postgres: pk read over one connection: ${DRIVER} / ${API} / ${FLOOR}, in turn, ${ROUNDS} rounds`)
      await runGroup('postgres', [
        { name: 'pk read', target: DRIVER, connections: 1, runner: calls(driverCalls['pk read'], 1), timing: SECONDARY },
        { name: 'pk read', target: API, connections: 1, runner: api(cases['pk read'], 1), timing: SECONDARY, versus: DRIVER },
        { name: 'pk read', target: FLOOR, connections: 1, runner: floorRunner(1), timing: SECONDARY, versus: DRIVER },
      ], rows)
    } finally {
      await floor.stop()
      await appSql.close()
    }
    log(`postgres: the app token check on one login connection, ${CHECK_ROUNDS} rounds of ${CHECK_CALLS} calls with and without it`)
    oneConnectionCheck = await tokenCheckOnOneConnection({
      db: platformDb, loginKey: new Uint8Array(Buffer.from(fixture.loginKey, 'base64')), namespace,
      statement: statements['pk read'], claims, gate: tokenGate,
    })
    log(`postgres: profiling ${PROFILE_REQUESTS} sequential requests per case`)
    return await profileCases(child, target, { ...cases, 'pk read (user JWT)': jwtCase, 'pk read (cookie)': cookieCase })
  } finally {
    await driver.end({ timeout: 5 })
    await platformDb.close()
    await child.stop()
  }
}

async function runPglite(rows: Row[]): Promise<Map<string, { clientMs: number; profile: Profile }>> {
  log('pglite: starting the platform server (in-memory PGlite) and seeding the app')
  const child = await startChild({ storage: 'pglite', rows: ROWS, categories: CATEGORIES })
  try {
    const target: HttpTarget = { port: child.fixture.port, host: child.fixture.host }
    const cases = httpCases(child.fixture)
    await checkCases(target, cases)
    const onServer: Meter = { serverPid: child.pid, postmaster: null }
    log(`pglite: ${CASES.join(' / ')} through the API, in turn, ${ROUNDS} rounds`)
    await runGroup('pglite', CASES.map((name) => ({
      name, target: API, connections: CONNECTIONS, runner: metered(httpRunner(target, cases[name], CONNECTIONS), onServer), timing: SECONDARY,
    })), rows)
    return await profileCases(child, target, cases)
  } finally {
    await child.stop()
  }
}

function versus(api: Summary, base: Summary): { p50: number; rps: number } {
  return { p50: api.p50 / base.p50, rps: base.rps / api.rps }
}

// ---- Report ----

function printTable(headers: string[], body: string[][], numericFrom: number): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i >= numericFrom ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`
  console.log(line(headers))
  console.log(`| ${widths.map((w, i) => (i >= numericFrom ? '-'.repeat(w - 1) + ':' : '-'.repeat(w))).join(' | ')} |`)
  for (const r of body) console.log(line(r))
}

function printResults(rows: Row[]): void {
  printTable(
    ['storage', 'case', 'target', 'conns', 'rps', 'p50 ms', 'p99 ms', 'p50 / driver p50', 'driver rps / rps'],
    rows.map((r) => [
      r.storage, r.name, r.target, String(r.connections),
      Math.round(r.summary.rps).toLocaleString('en-US'),
      r.summary.p50.toFixed(2), r.summary.p99.toFixed(2),
      r.versus ? `${r.versus.p50.toFixed(2)}x` : (r.storage === 'postgres' ? 'baseline' : 'n/a'),
      r.versus ? `${r.versus.rps.toFixed(2)}x` : '',
    ]),
    3,
  )
}

function printCpu(rows: Row[]): void {
  const micro = (value: number | null) => (value === null ? '-' : Math.round(value).toLocaleString('en-US'))
  console.log('\nCPU per request in the measured windows (microseconds; "client" is this process: autocannon, or the driver ' +
    'workers). "CPUs used by others": the share of all CPUs that other processes used meanwhile; above a few percent the ' +
    'row was disturbed.\n')
  printTable(
    ['storage', 'case', 'target', 'conns', 'client', 'server', 'PostgreSQL', 'total', 'CPUs used by others'],
    rows.map((r) => [
      r.storage, r.name, r.target, String(r.connections), micro(r.cpu.client), micro(r.cpu.server), micro(r.cpu.postgres),
      micro(r.cpu.client + (r.cpu.server ?? 0) + (r.cpu.postgres ?? 0)),
      r.other === null ? '-' : `${(r.other * 100).toFixed(0)}%`,
    ]),
    3,
  )
}

function printProfile(storage: Storage, profiles: Map<string, { clientMs: number; profile: Profile }>): void {
  console.log(`\nWhere a request's time goes (${storage}, ${PROFILE_REQUESTS} sequential requests per case, one connection; ms per request):\n`)
  printTable(
    ['case', 'SQL statements', 'client ms', 'server ms', 'of which SQL', 'server non-SQL', 'outside server'],
    [...profiles].map(([name, { clientMs, profile }]) => {
      const n = profile.requests
      const statements = profile.statements.reduce((a, s) => a + s.count, 0)
      const sqlMs = profile.statements.reduce((a, s) => a + s.ms, 0) / n
      const serverMs = profile.serverMs / n
      return [name, (statements / n).toFixed(2), clientMs.toFixed(3), serverMs.toFixed(3), sqlMs.toFixed(3),
        (serverMs - sqlMs).toFixed(3), (clientMs - serverMs).toFixed(3)]
    }),
    1,
  )
  for (const [name, { profile }] of profiles) {
    console.log(`\n  ${storage} / ${name}: statements per request (count, mean ms each)`)
    for (const s of profile.statements) {
      console.log(`    ${(s.count / profile.requests).toFixed(2)} x ${(s.ms / s.count).toFixed(3)} ms  ${s.sql}`)
    }
  }
}

/** Milliseconds for a fixed single-threaded workload: a coarse check that the CPUs were not shared. */
function calibrate(): number {
  const block = new Uint8Array(1 << 20)
  const t0 = performance.now()
  for (let i = 0; i < 200; i++) createHash('sha256').update(block).digest()
  return performance.now() - t0
}

function gitState(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'packages/platform/src'], { encoding: 'utf8' }).trim()
    return `platform at ${head}${dirty ? ' plus uncommitted changes under packages/platform/src' : ''}`
  } catch {
    return 'platform at an unknown commit'
  }
}

function machine(postgresVersion: string): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  const pglite = (JSON.parse(readFileSync(new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url), 'utf8')) as { version: string }).version
  return `${os.availableParallelism()} CPUs (${cpu}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}, ` +
    `PostgreSQL ${postgresVersion}, PGlite ${pglite}, ${os.platform()} ${os.release()}`
}

async function main(): Promise<void> {
  const started = Date.now()
  const speedAtStart = calibrate()
  const rows: Row[] = []
  const server = startServer(process.env.DATABASE_URL)
  // Interrupted: still stop a throwaway server (the child servers exit when we do).
  process.once('SIGINT', () => {
    server.stop()
    process.exit(130)
  })
  let postgresVersion = 'unknown'
  let pgProfile: Map<string, { clientMs: number; profile: Profile }>
  try {
    const database = await createDatabase(server.adminUrl)
    postgresVersion = database.version
    try {
      pgProfile = await runPostgres(database.url, rows)
    } finally {
      await database.drop()
    }
  } finally {
    server.stop()
  }
  const pgliteProfile = await runPglite(rows)

  const speedAtEnd = calibrate()
  console.log(`\nbench:data on ${machine(postgresVersion)}; ${gitState()}`)
  console.log(`CPU check: a fixed hashing loop took ${speedAtStart.toFixed(0)} ms at the start and ${speedAtEnd.toFixed(0)} ms ` +
    'at the end (compare across runs: a slow or uneven pair means other work shared the CPUs)')
  console.log(`items: ${ROWS.toLocaleString('en-US')} rows, ${CATEGORIES} categories, index (category, id), RLS on; ` +
    `${CONNECTIONS} connections unless stated; each case's contenders measured in turn over ${ROUNDS} rounds after a warm-up; loopback only.\n`)
  printResults(rows)
  console.log(`
Overhead ratio = API p50 latency / driver p50 latency for the same case, same PostgreSQL server
and table, same number of concurrent connections (HTTP keep-alive sockets vs driver workers).
Target (issue #4): <= 1.50x on PostgreSQL. "driver rps / rps" is the same comparison in
throughput. "floor" is a bare @hono/node-server + Hono route doing the same prepared select
through the driver (no app lookup, auth or wrapper): the least an HTTP hop costs here.
PGlite has no driver baseline: it runs inside the server process, with no separate
driver to send the same statements through.`)
  printCpu(rows)
  printProfile('postgres', pgProfile)
  printProfile('pglite', pgliteProfile)
  const statementsPerRequest = {
    postgres: statementsOf(pgProfile),
    pglite: statementsOf(pgliteProfile),
  }
  const check = tokenCheckShare(rows, oneConnectionCheck)
  console.log(`\nStatements per request (sequential profile): PostgreSQL ${Object.entries(statementsPerRequest.postgres).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}; ` +
    `PGlite ${Object.entries(statementsPerRequest.pglite).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`)
  if (check) {
    console.log(`App token check (spec 2.3: revalidated on every request, inside the data statement): ` +
      (check.oneConnection
        ? `${check.oneConnection.checkUs.toFixed(1)} µs of PostgreSQL CPU per request on one login connection ` +
          `(the pk read's statement ${check.oneConnection.withCheckUs.toFixed(1)} µs with it, ${check.oneConnection.withoutUs.toFixed(1)} µs without), ` +
          `${(check.cpuShare * 100).toFixed(1)} % of the API token path's ${check.apiCpuUs.toFixed(0)} µs of CPU per request; `
        : '') +
      `the paired rows at ${CONNECTIONS} connections (login pool statement with the check against without): ` +
      `${check.pairedCpuUs.toFixed(0)} µs, ${(check.pairedCpuShare * 100).toFixed(1)} %; ` +
      `throughput estimate ${(check.rpsShare * 100).toFixed(1)} % of its rps (API rps x (1/rps with check - 1/rps without))`)
  }
  console.log(`\ntotal run time ${((Date.now() - started) / 1000).toFixed(0)} s`)
  console.log(JSON.stringify(summaryJson(rows, { statementsPerRequest, check })))
}

/** SQL statements per request in each case's sequential profile. */
function statementsOf(profiles: Map<string, { clientMs: number; profile: Profile }>): Record<string, number> {
  return Object.fromEntries([...profiles].map(([name, { profile }]) =>
    [name, profile.statements.reduce((a, s) => a + s.count, 0) / profile.requests]))
}

/**
 * What the app token check costs the token path, as a share of the API token row's CPU per
 * request (pk read, 10 connections, all processes): the check's PostgreSQL CPU measured on one
 * login connection (`tokenCheckOnOneConnection`; `cpuShare`), and, as before 2026-11-27, the
 * login pool statement with the check in it against the same statement without from the
 * rows at 10 connections (all processes; `pairedCpuShare`, which on a shared machine swings
 * by more than the check costs), and the same rows' throughput estimate (`rpsShare`).
 */
function tokenCheckShare(rows: Row[], oneConnection: typeof oneConnectionCheck) {
  const find = (target: string) => rows.find((r) => r.storage === 'postgres' && r.name === 'pk read' && r.target === target && r.connections === CONNECTIONS)
  const [gated, plain, api] = [find(GATED), find(LOGIN), find(API)]
  if (!gated || !plain || !api) return null
  const total = (r: Row) => r.cpu.client + (r.cpu.server ?? 0) + (r.cpu.postgres ?? 0)
  const pairedCpuUs = total(gated) - total(plain)
  return {
    oneConnection,
    apiCpuUs: total(api),
    cpuShare: oneConnection ? oneConnection.checkUs / total(api) : pairedCpuUs / total(api),
    pairedCpuUs,
    pairedCpuShare: pairedCpuUs / total(api),
    rpsShare: api.summary.rps * (1 / gated.summary.rps - 1 / plain.summary.rps),
  }
}

/**
 * The run's closing line, for scripts. `ratios` carries issue 14's three (PGlite's API rps over
 * PostgreSQL's for the pk read; the API's p50 over the floor's; the user JWT's rps over the app
 * token's), the app session cookie's rps over the app token's, the app token check's share,
 * then every row's p50 against its driver row; `figures` every row's rps and p50 (the cookie
 * path's too).
 */
function summaryJson(rows: Row[], extra: {
  statementsPerRequest: Record<Storage, Record<string, number>>
  check: ReturnType<typeof tokenCheckShare>
}) {
  const figures: Record<string, number> = {}
  const round = (value: number) => Math.round(value * 1000) / 1000
  const pk = (storage: Storage, target: string) =>
    rows.find((r) => r.storage === storage && r.name === 'pk read' && r.target === target && r.connections === CONNECTIONS)
  const [pgApi, liteApi, floor, jwt, cookie] =
    [pk('postgres', API), pk('pglite', API), pk('postgres', FLOOR), pk('postgres', JWT), pk('postgres', COOKIE)]
  const ratios: Record<string, number> = {
    pglite_vs_postgres_rps: pgApi && liteApi ? round(liteApi.summary.rps / pgApi.summary.rps) : NaN,
    api_p50_vs_floor: pgApi && floor ? round(pgApi.summary.p50 / floor.summary.p50) : NaN,
    user_jwt_vs_token_rps: pgApi && jwt ? round(jwt.summary.rps / pgApi.summary.rps) : NaN,
    user_cookie_vs_token_rps: pgApi && cookie ? round(cookie.summary.rps / pgApi.summary.rps) : NaN,
  }
  if (extra.check) {
    ratios['app_token_check_cpu_share'] = round(extra.check.cpuShare)
    ratios['app_token_check_cpu_share_paired_rows'] = round(extra.check.pairedCpuShare)
    ratios['app_token_check_rps_share'] = round(extra.check.rpsShare)
    if (extra.check.oneConnection) {
      figures['app token check µs of PostgreSQL CPU per request, one connection'] = round(extra.check.oneConnection.checkUs)
      figures['pk read statement µs of PostgreSQL CPU, one connection, with the check'] = round(extra.check.oneConnection.withCheckUs)
      figures['pk read statement µs of PostgreSQL CPU, one connection, claims given'] = round(extra.check.oneConnection.withoutUs)
    }
  }
  for (const storage of ['postgres', 'pglite'] as const) {
    for (const [name, n] of Object.entries(extra.statementsPerRequest[storage])) figures[`${storage} ${name} statements per request`] = round(n)
  }
  for (const r of rows) {
    const key = `${r.storage} ${r.name} ${r.target} x${r.connections}`
    figures[`${key} rps`] = Math.round(r.summary.rps)
    figures[`${key} p50 ms`] = round(r.summary.p50)
    if (r.versus) ratios[`${key} p50 / driver p50`] = round(r.versus.p50)
  }
  return { bench: 'data', ratios, figures }
}

await main()
