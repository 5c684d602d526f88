/**
 * The leak tests' search (issue 12: "no consumer, log, error, job row or database table ever
 * sees a credential"): every row of every table the platform can read, in the `platform`
 * schema and in every app namespace (`app_…`, development namespaces included: the provider
 * app's own database), read as the platform and dumped as text, plus the responses a test
 * recorded, for the secret values a test planted or that an authorization server issued.
 * A value is also looked for hex-encoded, as a `bytea` column's text shows it.
 */
import assert from 'node:assert/strict'
import type { Queryable } from '../src/db/db.ts'
import type { Platform } from '../src/platform.ts'

/** One table the scan read: `schema.table` and how many rows it had. */
export interface ScannedTable {
  name: string
  rows: number
}

/** Where each secret turned up (`secret index in schema.table`), and what was read. */
export interface LeakScan {
  hits: string[]
  tables: ScannedTable[]
}

function hex(value: string): string {
  return Buffer.from(value, 'utf8').toString('hex')
}

/**
 * Reads every row of every table of the `platform` schema and of every app namespace schema
 * as text and reports which of `secrets` (or their hex) occur. Hits name the secret by its
 * index in `secrets`, so an assertion message never repeats the value.
 *
 * @example
 * const { hits, tables } = await scanTables(h.t.db, [API_KEY])
 */
export async function scanTables(db: Queryable, secrets: readonly string[]): Promise<LeakScan> {
  assert.ok(secrets.length > 0 && secrets.every((s) => s.length >= 8), 'secrets to look for, each long enough not to match by chance')
  const tables = await db.query<{ table_schema: string; table_name: string }>(
    `select table_schema, table_name from information_schema.tables
      where table_type = 'BASE TABLE' and (table_schema = 'platform' or table_schema like 'app\\_%')
      order by table_schema, table_name`)
  const needles = secrets.flatMap((secret) => [secret, hex(secret)])
  const hits: string[] = []
  const scanned: ScannedTable[] = []
  for (const { table_schema, table_name } of tables) {
    const name = `"${table_schema.replace(/"/g, '""')}"."${table_name.replace(/"/g, '""')}"`
    const [row] = await db.query<{ rows: number; found: number[] | null }>(
      `select (select count(*)::int from ${name}) as rows,
              array(select n.i::int from unnest($1::text[]) with ordinality as n(needle, i)
                     where exists (select 1 from ${name} t where strpos(t::text, n.needle) > 0)) as found`,
      [needles])
    scanned.push({ name: `${table_schema}.${table_name}`, rows: row!.rows })
    for (const i of row!.found ?? []) hits.push(`secret ${Math.floor((i - 1) / 2)} in ${table_schema}.${table_name}`)
  }
  return { hits, tables: scanned }
}

/**
 * Fails unless none of `secrets` is in any table scanTables reads or in any of `texts` (log
 * lines, response and error bodies, by name), and unless every schema named in `schemas`
 * (e.g. the provider app's `app_shop`) was among those read. Returns what was read.
 *
 * @example
 * await assertNoLeak(h.t.db, { secrets: [API_KEY], texts: { log: log.text(), responses: seen.join('\n') }, schemas: ['app_shop'] })
 */
export async function assertNoLeak(
  db: Queryable,
  input: { secrets: readonly string[]; texts: Readonly<Record<string, string>>; schemas?: readonly string[] },
): Promise<LeakScan> {
  const scan = await scanTables(db, input.secrets)
  assert.ok(scan.tables.filter((t) => t.name.startsWith('platform.')).length > 20, 'the platform schema was read')
  for (const schema of input.schemas ?? []) {
    assert.ok(scan.tables.some((t) => t.name.startsWith(`${schema}.`)), `the schema ${schema} was read`)
  }
  assert.deepEqual(scan.hits, [], 'a secret value is stored in a table')
  for (const [name, text] of Object.entries(input.texts)) {
    input.secrets.forEach((secret, i) => assert.ok(!text.includes(secret), `secret ${i} appeared in ${name}`))
  }
  return scan
}

/** Every response a platform answered since recordResponses, as read by `texts()`. */
export interface RecordedResponses {
  /** Each response's status line, headers and body, once every body has been read. */
  texts(): Promise<string[]>
}

/**
 * Wraps `platform.fetch` so that every response it answers (status, headers, body) is kept
 * for a leak scan, whoever made the request (owner API calls, a cookie browser's pages and
 * redirects). The body is read from a clone: not for endless streaming responses.
 *
 * @example
 * const responses = recordResponses(h.platform)
 * // ... the flow ...
 * await assertNoLeak(h.t.db, { secrets, texts: { responses: (await responses.texts()).join('\n') } })
 */
export function recordResponses(platform: Pick<Platform, 'fetch'>): RecordedResponses {
  const pending: Promise<string>[] = []
  const fetch = platform.fetch.bind(platform)
  platform.fetch = async (request, env) => {
    const response = await fetch(request, env)
    const head = `${response.status} ${request.method} ${request.url} ${JSON.stringify([...response.headers])}`
    pending.push(response.clone().text().then((body) => `${head}\n${body}`))
    return response
  }
  return { texts: () => Promise.all(pending) }
}
