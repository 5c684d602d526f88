/**
 * `BASE=<checkout> npx tsx bench/data/compare-trees.ts`: the data API's key read on this
 * tree's platform server beside another checkout's (a profiling aid for bench:data, not part
 * of it), with the floor (bare Hono + driver), measured in turn over ROUNDS rounds of 2 s at
 * 10 connections on one PostgreSQL. Each server has its own copy of the bench app; each runs
 * its own tree's bench/data/server.ts. The other checkout is usually a worktree of an
 * earlier commit (`git worktree add /tmp/base <commit>`, its node_modules linked to this
 * one's). A throwaway PostgreSQL unless DATABASE_URL is set.
 *
 *   git worktree add /tmp/base HEAD~1 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   BASE=/tmp/base ROUNDS=6 npx tsx bench/data/compare-trees.ts
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { startChild } from './child.ts'
import type { Summary } from './load.ts'
import { CONNECTIONS, ROWS, keyReadsInTurn, withServers } from './side-by-side.ts'

const rounds = Number(process.env.ROUNDS ?? 6)

async function main(): Promise<void> {
  if (!process.env.BASE) throw new Error('BASE: the other checkout to compare with (a directory)')
  const base = (await import(pathToFileURL(resolve(process.env.BASE, 'bench/data/child.ts')).href)) as typeof import('./child.ts')
  const options = (databaseUrl: string) => ({ storage: 'postgres' as const, databaseUrl, rows: ROWS, categories: 100 })
  await withServers([(url) => base.startChild(options(url)), (url) => startChild(options(url))], CONNECTIONS, async (children, floor) => {
    const summaries = await keyReadsInTurn([
      { name: `API, ${process.env.BASE}`, child: children[0]! },
      { name: 'API, this tree', child: children[1]! },
    ], { name: `floor, ${CONNECTIONS} connections`, ...floor }, rounds)
    const [b, t, f] = summaries as [Summary, Summary, Summary]
    const ratios = { this_vs_base_rps: +(t.rps / b.rps).toFixed(3), base_p50_vs_floor: +(b.p50 / f.p50).toFixed(3), this_p50_vs_floor: +(t.p50 / f.p50).toFixed(3) }
    console.log(JSON.stringify({ bench: 'data-compare-trees', ratios, figures: { base: process.env.BASE, rps: summaries.map((s) => Math.round(s.rps)) } }))
  })
}

await main()
