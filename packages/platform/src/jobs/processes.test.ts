// Several platform processes over one PostgreSQL: real child processes running the platform's
// dispatcher. One is killed (SIGKILL) during attempts and another finishes the work: every
// job ends exactly once in a terminal state and each lost attempt counts exactly once. Two
// processes together never run more of a queue at once than its concurrency (measured from
// the start and end times the consumer records in its own table), and both run its jobs. PostgreSQL only: PGlite
// is one process's embedded database.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { platformProcesses, type PlatformProcesses } from '../../test/platform-processes.ts'
import { findAppBySlug, type App } from '../apps/apps.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'
import type { QueueDeclaration } from '../manifest/index.ts'
import { enqueueOnQueue } from './enqueue.ts'

const SLUG = 'crashy'

const QUEUES: QueueDeclaration[] = [
  // Leases are the timeout plus 1 s (test/platform-process.ts): long enough for a cold start on a busy machine.
  { name: 'crash', function: 'consume', concurrency: 4, maxAttempts: 3, retryDelaySeconds: 0, retryBackoff: false, timeoutSeconds: 8 },
  // Concurrency 3 over two processes of capacity 2: neither can run it alone (so both take
  // part), and together they could run 4 if the claim let them.
  { name: 'shared', function: 'consume', concurrency: 3, maxAttempts: 3, retryDelaySeconds: 0, retryBackoff: false, timeoutSeconds: 10 },
]

const YAML = `functions:
  - name: consume
    entrypoint: functions/consume.ts
    access: system
queues:
${QUEUES.map((q) => `  - name: ${q.name}
    function: ${q.function}
    concurrency: ${q.concurrency}
    maxAttempts: ${q.maxAttempts}
    retryDelaySeconds: ${q.retryDelaySeconds}
    timeoutSeconds: ${q.timeoutSeconds}
`).join('')}`

const CONSUME = `
import { defineFunction, number, object } from '@service/server'
export default defineFunction({
  input: object({ ms: number() }),
  async handler({ input, job, data }) {
    const runs = data.table('runs')
    const row = await runs.create({ job_id: job.id, queue: job.queue, attempt: job.attempt })
    await new Promise((resolve) => setTimeout(resolve, input.ms))
    await runs.updateById(row.id, { ended: true })
    return null
  },
})`

const MIGRATION = `
create table runs (
  id uuid primary key default gen_random_uuid(),
  job_id text not null, queue text not null, attempt integer not null,
  started_at timestamptz not null default clock_timestamp(),
  ended boolean not null default false,
  ended_at timestamptz
);
create function stamp_end() returns trigger language plpgsql as $$
begin new.ended_at := clock_timestamp(); return new; end $$;
create trigger runs_end before update on runs for each row execute function stamp_end();
alter table runs enable row level security;
create policy runs_system on runs for all using (auth.is_system()) with check (auth.is_system());
`


async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe(`jobs across platform processes (${backend})`, { skip: backend !== 'postgres' && 'needs PostgreSQL (PGlite is one process)' }, () => {
  let h: Harness
  let app: App
  let namespace: Namespace
  let processes: PlatformProcesses

  before(async () => {
    h = await startHarness()
    const { token } = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await h.request(`/v1/apps/${SLUG}/deployments`, {
      token,
      json: bundle({ 'service.yaml': manifest(SLUG, YAML), 'functions/consume.ts': CONSUME, 'database/migrations/0001_runs.sql': MIGRATION }),
    })
    assert.equal(res.status, 201, await res.text())
    app = (await findAppBySlug(h.t.db, SLUG))!
    namespace = (await findNamespace(h.t.db, app.id))!
    processes = await platformProcesses(h)
  })

  after(async () => {
    await processes?.close()
    await h?.close()
  })


  async function enqueueMany(queue: QueueDeclaration, count: number, ms: number): Promise<string[]> {
    const ids: string[] = []
    for (let i = 0; i < count; i++) {
      const { row } = await enqueueOnQueue(h.t.db, {
        appId: app.id, namespaceId: namespace.id, declaration: queue, enqueuedBy: null, now: new Date(),
        request: { queue: queue.name, payload: { ms }, idempotencyKey: `${queue.name}-${i}`, delaySeconds: 0, timeoutMs: null },
      })
      ids.push(row.id)
    }
    return ids
  }

  async function states(ids: string[]): Promise<{ id: string; state: string; attempts: number }[]> {
    return await h.t.db.query(`select id, state, attempts from platform.jobs where id = any($1::uuid[]) order by id`, [ids])
  }

  test('a process killed during attempts: another finishes every job, each exactly once terminal, lost attempts counted once', async () => {
    const ids = await enqueueMany(QUEUES[0]!, 12, 1500)
    const doomed = await processes.start('jobs', 8)
    await waitFor('attempts in progress', async () =>
      (await h.t.db.query(`select 1 from app_crashy.runs where queue = 'crash' and not ended`)).length >= 2)
    doomed.process.kill('SIGKILL')
    await doomed.exited
    const cut = await h.t.db.query<{ job_id: string; attempt: number }>(`select job_id, attempt from app_crashy.runs where queue = 'crash' and not ended`)
    assert.ok(cut.length >= 1, 'the kill interrupted at least one attempt')

    const survivor = await processes.start('jobs', 8)
    await waitFor('every job to end', async () => (await states(ids)).every((job) => job.state === 'succeeded' || job.state === 'dead_lettered'))
    survivor.process.kill('SIGTERM')
    await survivor.exited

    const jobs = await states(ids)
    assert.deepEqual(jobs.map((job) => job.state), ids.map(() => 'succeeded'))
    const runs = await h.t.db.query<{ job_id: string; attempt: number; ended: boolean }>(
      `select job_id, attempt, ended from app_crashy.runs where queue = 'crash' order by job_id, attempt`)
    for (const job of jobs) {
      const mine = runs.filter((run) => run.job_id === job.id)
      const attempts = mine.map((run) => run.attempt)
      assert.equal(new Set(attempts).size, attempts.length, `no attempt number of ${job.id} was delivered twice`)
      assert.ok(attempts.every((n) => n >= 1 && n <= job.attempts), 'every delivery was counted')
      assert.equal(attempts.at(-1), job.attempts, 'the last counted attempt is the one that succeeded')
      assert.equal(mine.at(-1)!.ended, true)
    }
    for (const { job_id: jobId, attempt } of cut) {
      const job = jobs.find((j) => j.id === jobId)!
      assert.equal(job.attempts, attempt + 1, 'the attempt lost in the crash counts once, its retry once more')
    }
  })

  test('two processes together never run more of a queue at once than its concurrency, and both run its jobs', async () => {
    const pids = [(await processes.start('jobs', 2)).process.pid, (await processes.start('jobs', 2)).process.pid]
    const ids = await enqueueMany(QUEUES[1]!, 12, 400)
    const owners = new Set<string>()
    await waitFor('every job to succeed', async () => {
      const running = await h.t.db.query<{ lease_owner: string }>(
        `select lease_owner from platform.jobs where id = any($1::uuid[]) and state = 'running'`, [ids])
      for (const { lease_owner: owner } of running) owners.add(owner)
      return (await states(ids)).every((job) => job.state === 'succeeded')
    })
    // A lease owner is `host:pid:random`.
    const ran = new Set([...owners].map((owner) => Number(owner.split(':')[1])))
    assert.deepEqual([...ran].sort(), [...pids].sort(), 'both processes ran jobs of the queue')
    const [{ most }] = (await h.t.db.query<{ most: number }>(
      `select max((select count(*) from app_crashy.runs b
                    where b.queue = 'shared' and b.started_at <= a.started_at and b.ended_at > a.started_at))::int as most
         from app_crashy.runs a where a.queue = 'shared'`)) as [{ most: number }]
    assert.ok(most >= 1 && most <= 3, `at most 3 ran at once (measured ${most})`)
    const runs = await h.t.db.query(`select 1 from app_crashy.runs where queue = 'shared'`)
    assert.equal(runs.length, 12, 'each job ran once')
  })
})
