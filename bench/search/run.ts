/**
 * `npm run bench:search` (issue 16): p50/p99 latency of each search mode (fullText, vector,
 * hybrid) on 10k and 100k rows of 384 dimensions, beside the floor: the same SQL statement
 * run through the driver directly (no Function, no role switch, no RLS policy, no input
 * checks), in the same run. Over both storages (PGlite always; PostgreSQL when DATABASE_URL
 * is set) and both vector paths (`real[]`, exact; `vector(384)`, pgvector, where the database
 * has it).
 *
 * `ctx.data.search` is timed through a system Function run in process (one invocation per
 * search: the Deno worker, the pipe, the statement, the answer). The corpus is
 * deterministic: titles from a small vocabulary, vectors sin(i * 12.9898 + d * 78.233).
 *
 * Environment: DATABASE_URL (adds PostgreSQL), BENCH_SEARCH_STORAGES (default
 * "pglite,postgres"), BENCH_SEARCH_ROWS (default "10000,100000"), BENCH_SEARCH_ROUNDS
 * (default "20,5", per row count). A mode the platform refuses (the statement timeout) is
 * reported as failed with its code.
 *
 * The last line is one JSON object, as every bench ends: `{"bench": "search", "ratios",
 * "figures"}`. `ratios` holds each measured case's search p50 over the floor's p50 of the same
 * run (`pglite_exact_10k_fullText_p50_vs_floor`); `figures` the p50 and p99 of both in ms
 * (`pglite_exact_10k_fullText_search_p50_ms`, `…_floor_p99_ms`), the run's settings
 * (`dimensions`, `rows`, `rounds`, `limit`) and `failed`: case -> the code it failed with.
 */
import { performance } from 'node:perf_hooks'
import { bundle, manifest, startHarness, type Harness } from '../../packages/platform/test/harness.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { findNamespace } from '../../packages/platform/src/namespaces/namespaces.ts'
import { checkSearchDeclarations } from '../../packages/platform/src/search/declarations.ts'
import { readSearchInput } from '../../packages/platform/src/search/input.ts'
import { searchStatement } from '../../packages/platform/src/search/run.ts'

const DIMENSIONS = 384
const ROWS = (process.env.BENCH_SEARCH_ROWS ?? '10000,100000').split(',').map(Number)
const ROUNDS = (process.env.BENCH_SEARCH_ROUNDS ?? '20,5').split(',').map(Number)
const MODES = ['fullText', 'vector', 'hybrid'] as const

const WORDS = ['tea', 'coffee', 'garden', 'mountain', 'river', 'city', 'train', 'book', 'music', 'bread', 'cheese', 'winter']

function migration(path: 'exact' | 'pgvector'): string {
  return `create table docs (id integer primary key, title text not null, body text not null,
  embedding ${path === 'exact' ? 'real[]' : `vector(${DIMENSIONS})`});
alter table docs enable row level security;
create policy docs_read on docs for select using (true);
`
}

function seed(schema: string, path: 'exact' | 'pgvector', from: number, to: number): string {
  const words = `array[${WORDS.map((word) => `'${word}'`).join(', ')}]`
  const vector = `array(select sin(i * 12.9898 + d * 78.233)::real from generate_series(1, ${DIMENSIONS}) d)`
  return `insert into "${schema}".docs
    select i, (${words})[1 + i % ${WORDS.length}] || ' ' || (${words})[1 + (i / 7) % ${WORDS.length}],
           'note ' || i || ' about ' || (${words})[1 + (i / 13) % ${WORDS.length}],
           ${path === 'exact' ? vector : `('[' || array_to_string(${vector}, ',') || ']')::extensions.vector`}
      from generate_series(${from}, ${to}) i`
}

const SEARCHES = `data:
  search:
    - name: docs
      table: docs
      select: [id, title]
      fullText:
        language: english
        columns: [title, body]
      vector:
        column: embedding
        dimensions: ${DIMENSIONS}
        model: bench-384
`
const FUNCTIONS = `functions:
  - name: find
    entrypoint: functions/find.ts
    access: system
`
const FIND = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ options: string() }),
  async handler({ input, data }) {
    const { hits } = await data.search('docs', JSON.parse(input.options))
    return { hits: hits.length }
  },
})`

function queryVector(seedValue: number): number[] {
  return Array.from({ length: DIMENSIONS }, (_, d) => Math.sin(seedValue * 3.1 + (d + 1) * 78.233))
}

const LIMIT = 10

function options(mode: typeof MODES[number], round: number): Record<string, unknown> {
  const query = `${WORDS[round % WORDS.length]} ${WORDS[(round + 5) % WORDS.length]}`
  const vector = queryVector(round + 1)
  if (mode === 'fullText') return { mode, query, limit: LIMIT }
  if (mode === 'vector') return { mode, vector, model: 'bench-384', limit: LIMIT }
  return { mode, query, vector, model: 'bench-384', limit: LIMIT }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return Number(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!.toFixed(2))
}

interface Row { storage: string; path: string; rows: number; mode: string; searchP50: number; searchP99: number; floorP50: number; floorP99: number; ratioP50: number }

type Failed = { storage: string; path: string; rows: number; mode: string; failed: string }

async function benchStorage(storage: 'pglite' | 'postgres', results: (Row | Failed)[]): Promise<void> {
  const url = process.env.DATABASE_URL
  if (storage === 'pglite') delete process.env.DATABASE_URL
  let h: Harness
  try {
    h = await startHarness()
  } finally {
    if (url !== undefined) process.env.DATABASE_URL = url
  }
  try {
    const health = await (await h.request('/v1/health')).json() as { search: { vectorPaths: ('exact' | 'pgvector')[] } }
    const { token } = await h.createOwner(`bench@search-${storage}.test`)
    for (const path of health.search.vectorPaths) {
      const slug = `bench${path === 'exact' ? 'exact' : 'pgv'}`
      await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })
      const res = await h.request(`/v1/apps/${slug}/deployments`, {
        token, json: bundle({ 'service.yaml': manifest(slug, FUNCTIONS + SEARCHES), 'functions/find.ts': FIND, 'database/migrations/0001_docs.sql': migration(path) }),
      })
      if (res.status !== 201) throw new Error(`deploy failed: ${await res.text()}`)
      const app = (await findAppBySlug(h.t.db, slug))!
      const namespace = (await findNamespace(h.t.db, app.id))!
      const fn = (await h.platform.functions.resolve(app, 'find'))!
      const [plan] = await checkSearchDeclarations(h.t.db, namespace.schemaName, (await h.t.db.query<{ s: any }>(
        `select manifest -> 'data' -> 'search' as s from platform.releases where id = $1`, [app.activeReleaseId]))[0]!.s)
      let seeded = 0
      for (const [index, rows] of ROWS.entries()) {
        const started = performance.now()
        await h.t.db.query(seed(namespace.schemaName, path, seeded + 1, rows))
        await h.t.db.query(`analyze "${namespace.schemaName}".docs`)
        seeded = rows
        console.error(`[bench:search] ${storage} ${path}: ${rows} rows seeded in ${Math.round(performance.now() - started)} ms`)
        const rounds = ROUNDS[index] ?? ROUNDS[ROUNDS.length - 1]!
        for (const mode of MODES) {
          const search: number[] = []
          const floor: number[] = []
          let failed: string | null = null
          for (let round = -1; round < rounds && failed === null; round += 1) {
            const given = options(mode, Math.max(round, 0))
            let t0 = performance.now()
            const result = await h.platform.functions.run(fn, { input: { options: JSON.stringify(given) }, user: null })
            const searchMs = performance.now() - t0
            // A search the platform refuses (e.g. the statement timeout) is reported, not timed.
            if (!result.ok) { failed = (result.error as { code?: string }).code ?? result.error.kind; break }
            const parts = searchStatement(namespace.schemaName, plan!, readSearchInput(plan!, given))
            t0 = performance.now()
            await h.t.db.query(`with ${parts.ctes.join(', ')} select ${parts.value} as hits`.replaceAll('$1', '($1::jsonb)'), [JSON.stringify(parts.params)])
            const floorMs = performance.now() - t0
            if (round >= 0) { search.push(searchMs); floor.push(floorMs) } // round -1 warms up
          }
          if (failed !== null) {
            results.push({ storage, path, rows, mode, failed })
            console.log(`${storage.padEnd(8)} ${path.padEnd(8)} ${String(rows).padStart(6)} ${mode.padEnd(8)} failed ${failed}`)
            continue
          }
          const row: Row = {
            storage, path, rows, mode,
            searchP50: percentile(search, 50), searchP99: percentile(search, 99),
            floorP50: percentile(floor, 50), floorP99: percentile(floor, 99),
            ratioP50: Number((percentile(search, 50) / percentile(floor, 50)).toFixed(2)),
          }
          results.push(row)
          console.log(`${storage.padEnd(8)} ${path.padEnd(8)} ${String(rows).padStart(6)} ${mode.padEnd(8)} search p50 ${row.searchP50} ms p99 ${row.searchP99} ms | floor p50 ${row.floorP50} ms p99 ${row.floorP99} ms | x${row.ratioP50}`)
        }
      }
    }
  } finally {
    await h.close()
  }
}

/** A case's key: storage, vector path, rows (10k, 100k), mode. */
function caseKey(result: Row | Failed): string {
  const rows = result.rows % 1000 === 0 ? `${result.rows / 1000}k` : String(result.rows)
  return `${result.storage}_${result.path}_${rows}_${result.mode}`
}

/** The closing line: ratios (search p50 over the floor's p50, same run) and figures (ms, settings, failures). */
function summaryJson(results: (Row | Failed)[]): { bench: 'search'; ratios: Record<string, number>; figures: Record<string, unknown> } {
  const ratios: Record<string, number> = {}
  const failed: Record<string, string> = {}
  const figures: Record<string, unknown> = { dimensions: DIMENSIONS, rows: ROWS, rounds: ROUNDS, limit: LIMIT }
  for (const result of results) {
    const key = caseKey(result)
    if ('failed' in result) { failed[key] = result.failed; continue }
    ratios[`${key}_p50_vs_floor`] = result.ratioP50
    figures[`${key}_search_p50_ms`] = result.searchP50
    figures[`${key}_search_p99_ms`] = result.searchP99
    figures[`${key}_floor_p50_ms`] = result.floorP50
    figures[`${key}_floor_p99_ms`] = result.floorP99
  }
  figures['failed'] = failed
  return { bench: 'search', ratios, figures }
}

const STORAGES = (process.env.BENCH_SEARCH_STORAGES ?? 'pglite,postgres').split(',')
const results: (Row | Failed)[] = []
if (STORAGES.includes('pglite')) await benchStorage('pglite', results)
if (STORAGES.includes('postgres') && process.env.DATABASE_URL) await benchStorage('postgres', results)
console.log(JSON.stringify(summaryJson(results)))
process.exit(0)
