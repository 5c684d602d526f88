/**
 * Test support for managed files: an app whose Functions call `ctx.files` with whatever a
 * test gives, as a person (`public` Functions) or as the app (`system` ones), a producer
 * that enqueues with a delegated read grant and a consumer that records what it could read.
 */
import { bundle, manifest } from '../../test/harness.ts'

const FUNCTIONS_YAML = `functions:
  - name: op
    entrypoint: functions/op.ts
    access: public
  - name: sysOp
    entrypoint: functions/sys-op.ts
    access: system
  - name: produce
    entrypoint: functions/produce.ts
    access: public
  - name: scan
    entrypoint: functions/scan.ts
    access: system
  - name: sysProduce
    entrypoint: functions/sys-produce.ts
    access: system
queues:
  - name: scans
    function: scan
    maxAttempts: 3
    retryDelaySeconds: 10
    timeoutSeconds: 60
`

/**
 * One operation on ctx.files; errors come back as { error: code } so a test sees the code.
 * Data is generated in the Function: \`size\` bytes of a pattern (seeded), or \`text\`.
 */
const OP = `
import { defineFunction, number, object, optional, string } from '@service/server'
function pattern(size, seed) {
  const bytes = new Uint8Array(size)
  for (let i = 0; i < size; i += 1) bytes[i] = (i * 31 + seed) & 0xff
  return bytes
}
async function sha(bytes) {
  return Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)), (b) => b.toString(16).padStart(2, '0')).join('')
}
export default defineFunction({
  input: object({ op: string(), ref: optional(string()), name: optional(string()), contentType: optional(string()), size: optional(number()), seed: optional(number()), text: optional(string()) }),
  async handler({ input, files }) {
    const data = input.text !== undefined ? input.text : pattern(input.size ?? 0, input.seed ?? 7)
    try {
      switch (input.op) {
        case 'upload': {
          const ref = await files.upload({ data, name: input.name ?? 'a.bin', contentType: input.contentType ?? 'application/octet-stream' })
          return { ref, info: await files.info(ref) }
        }
        case 'download': {
          const file = await files.download(input.ref)
          return { name: file.name, contentType: file.contentType, size: file.size, generation: file.generation, length: file.data.byteLength, sha: await sha(file.data) }
        }
        case 'replace': {
          const ref = await files.replace(input.ref, { data, name: input.name ?? 'b.bin' })
          return { ref, info: await files.info(ref) }
        }
        case 'remove':
          await files.remove(input.ref)
          return { removed: true }
        case 'info':
          return { info: await files.info(input.ref) }
        case 'sha':
          return { sha: await sha(data) }
      }
      return { error: 'UNKNOWN_OP' }
    } catch (error) {
      return { error: error.code ?? String(error.message) }
    }
  },
})`

const PRODUCE = `
import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ payload: string(), options: string() }),
  async handler({ input, jobs }) {
    try {
      return await jobs.enqueue('scans', JSON.parse(input.payload), JSON.parse(input.options))
    } catch (error) {
      return { error: error.code ?? String(error.message) }
    }
  },
})`

/** Reads the payload's file (and tries what it names); records the outcome; fails attempt 1 when told. */
const SCAN = `
import { defineFunction, errors, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ ref: string(), also: optional(string()), failFirst: optional(string()) }),
  async handler({ input, job, files, data }) {
    let outcome
    try {
      const file = await files.download(input.ref)
      outcome = 'ok:' + file.data.byteLength + ':' + file.generation
    } catch (error) {
      outcome = error.code ?? String(error.message)
    }
    if (input.also === 'remove' || input.also === 'replace') {
      try {
        if (input.also === 'remove') await files.remove(input.ref)
        else await files.replace(input.ref, { data: 'x', name: 'x.txt' })
        outcome += ';' + input.also + ':ok'
      } catch (error) {
        outcome += ';' + input.also + ':' + (error.code ?? String(error.message))
      }
    }
    await data.table('scans').create({ job_id: job.id, attempt: job.attempt, outcome })
    if (input.failFirst === 'yes' && job.attempt === 1) throw errors.unavailable('TRY_AGAIN', 'first attempt fails')
    return null
  },
})`

const MIGRATION = `
create table scans (
  id uuid primary key default gen_random_uuid(),
  job_id text, attempt integer, outcome text,
  created_at timestamptz not null default clock_timestamp()
);
alter table scans enable row level security;
create policy scans_system on scans for all using (auth.is_system()) with check (auth.is_system());
`

/** The app's bundle; `sdk` replaces the pinned runtime SDK version (2.6.0). */
export function filesBundle(slug: string, sdk = '2.6.0') {
  return bundle({
    'service.yaml': manifest(slug, FUNCTIONS_YAML).replace('version: 2.6.0', `version: ${sdk}`),
    'functions/op.ts': OP,
    'functions/sys-op.ts': OP,
    'functions/produce.ts': PRODUCE,
    'functions/sys-produce.ts': PRODUCE,
    'functions/scan.ts': SCAN,
    'database/migrations/0001_scans.sql': MIGRATION,
  })
}
