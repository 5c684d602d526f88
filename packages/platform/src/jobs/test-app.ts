/**
 * Test support for the jobs engine: an app with queues, a producer Function that calls
 * `ctx.jobs.enqueue`/`get` with whatever arguments a test gives, a consumer that records
 * every attempt in its own table and then behaves as its payload says, and cron targets.
 */
import { bundle, manifest } from '../../test/harness.ts'

export const QUEUES_YAML = `functions:
  - name: produce
    entrypoint: functions/produce.ts
    access: public
  - name: lookup
    entrypoint: functions/lookup.ts
    access: public
  - name: consume
    entrypoint: functions/consume.ts
    access: system
  - name: nightly
    entrypoint: functions/nightly.ts
    access: system
  - name: strictCron
    entrypoint: functions/strict-cron.ts
    access: system
`

/** The queue section: `work` (retries), `backoff`, `wide` (concurrency 2), `slow` (1 s timeout). */
export function queuesYaml(overrides: { workConcurrency?: number; workMaxAttempts?: number; without?: string } = {}): string {
  const queues = {
    work: `  - name: work
    function: consume
    concurrency: ${overrides.workConcurrency ?? 1}
    maxAttempts: ${overrides.workMaxAttempts ?? 3}
    retryDelaySeconds: 10
    timeoutSeconds: 20
`,
    backoff: `  - name: backoff
    function: consume
    concurrency: 5
    maxAttempts: 4
    retryDelaySeconds: 10
    retryBackoff: true
    timeoutSeconds: 20
`,
    wide: `  - name: wide
    function: consume
    concurrency: 2
    timeoutSeconds: 20
`,
    slow: `  - name: slow
    function: consume
    maxAttempts: 2
    retryDelaySeconds: 5
    timeoutSeconds: 1
`,
  }
  const kept = Object.entries(queues).filter(([name]) => name !== overrides.without).map(([, text]) => text)
  return `queues:\n${kept.join('')}cron:
  - name: nightly
    schedule: "0 3 * * *"
    function: nightly
  - name: strict
    schedule: "0 4 * * *"
    function: strictCron
`
}

const CONSUME = `
import { defineFunction, errors, number, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ mode: string(), ms: optional(number()), pad: optional(string()) }),
  async handler({ input, job, data }) {
    await data.table('runs').create({ job_id: job?.id ?? null, queue: job?.queue ?? null, attempt: job?.attempt ?? null, mode: input.mode })
    if (input.mode === 'unavailable') throw errors.unavailable('UPSTREAM_DOWN', 'The upstream is down')
    if (input.mode === 'bad') throw errors.badRequest('BAD_THING', 'The payload names a bad thing')
    if (input.mode === 'throw') throw new Error('boom')
    if (input.mode === 'sleep') await new Promise((resolve) => setTimeout(resolve, input.ms ?? 0))
    return { done: true }
  },
})`

const PRODUCE = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ queue: string(), payload: string(), options: string() }),
  async handler({ input, jobs }) {
    return await jobs.enqueue(input.queue, JSON.parse(input.payload), JSON.parse(input.options))
  },
})`

const LOOKUP = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ id: string() }),
  async handler({ input, jobs }) {
    return { job: await jobs.get(input.id) }
  },
})`

const NIGHTLY = `
import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({
  input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }),
  async handler({ input, job, data }) {
    await data.table('runs').create({ job_id: null, queue: job === null ? 'no-job' : job.queue, attempt: null, mode: 'cron:' + input.name + '@' + input.scheduledAt })
    return null
  },
})`

const STRICT_CRON = `
import { defineFunction, object } from '@service/server'
export default defineFunction({ input: object({}), async handler() { return null } })`

const MIGRATION = `
create table runs (
  id uuid primary key default gen_random_uuid(),
  job_id text, queue text, attempt integer, mode text,
  created_at timestamptz not null default clock_timestamp()
);
alter table runs enable row level security;
create policy runs_system on runs for all using (auth.is_system()) with check (auth.is_system());
`

/** The app bundle; `yaml` replaces the queue and cron sections. */
export function queuesBundle(slug: string, yaml = queuesYaml()) {
  return bundle({
    'service.yaml': manifest(slug, QUEUES_YAML + yaml),
    'functions/produce.ts': PRODUCE,
    'functions/lookup.ts': LOOKUP,
    'functions/consume.ts': CONSUME,
    'functions/nightly.ts': NIGHTLY,
    'functions/strict-cron.ts': STRICT_CRON,
    'database/migrations/0001_runs.sql': MIGRATION,
  })
}
