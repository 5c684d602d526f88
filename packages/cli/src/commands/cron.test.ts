import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, test } from 'node:test'
import { promisify } from 'node:util'
import type { ServerType } from '@hono/node-server'
import { nextOccurrences } from '@service/platform/cron'
import { bundle, manifest, startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { capture, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

async function run(...args: string[]) {
  const { io, out, err } = capture({})
  const code = await main(['cron', 'next', ...args], io)
  return { code, out, err: err.join('\n') }
}

describe('service cron next', () => {
  test('prints the next runs in the zone with their offsets, one a line', async () => {
    const result = await run('30 2 * * *', '--tz', 'Europe/Berlin', '--from', '2026-03-28T12:00:00Z', '--count', '3')
    assert.equal(result.code, 0)
    assert.deepEqual(result.out, ['2026-03-29T03:00:00+02:00', '2026-03-30T02:30:00+02:00', '2026-03-31T02:30:00+02:00'])
  })

  test('prints what the scheduler computes: the same instants as nextOccurrences', async () => {
    const from = new Date('2026-10-03T14:40:00Z')
    const result = await run('*/15 * * * *', '--tz', 'Australia/Lord_Howe', '--from', from.toISOString(), '--count', '6')
    const expected = nextOccurrences('*/15 * * * *', { timezone: 'Australia/Lord_Howe', from, count: 6 })
    assert.deepEqual(result.out.map((line) => new Date(line).getTime()), expected.map((instant) => instant.getTime()))
    assert.equal(result.out[3], '2026-10-04T02:30:00+11:00')
  })

  test('defaults to UTC and five runs', async () => {
    const result = await run('0 0 * * MON', '--from', '2026-01-01T00:00:00Z')
    assert.deepEqual(result.out, [
      '2026-01-05T00:00:00+00:00', '2026-01-12T00:00:00+00:00', '2026-01-19T00:00:00+00:00',
      '2026-01-26T00:00:00+00:00', '2026-02-02T00:00:00+00:00',
    ])
  })

  test('--from without an offset is local time in --tz; with an offset it is taken as written', async () => {
    // 01:30 is repeated that night; a bare local time means its first instance (EDT).
    const local = await run('*/15 * * * *', '--tz', 'America/New_York', '--from', '2026-11-01T01:30', '--count', '1')
    assert.deepEqual(local.out, ['2026-11-01T01:45:00-04:00'])
    // From the second 01:30 (EST) the repeated 01:45 has already run; 02:00 EST is next.
    const offset = await run('*/15 * * * *', '--tz', 'America/New_York', '--from', '2026-11-01T01:30-05:00', '--count', '1')
    assert.deepEqual(offset.out, ['2026-11-01T02:00:00-05:00'])
    const date = await run('0 12 * * *', '--tz', 'Asia/Kolkata', '--from', '2026-06-01', '--count', '1')
    assert.deepEqual(date.out, ['2026-06-01T12:00:00+05:30'])
  })

  test('an invalid schedule exits 1 with the parser message', async () => {
    const result = await run('0 0 30 2 *')
    assert.equal(result.code, 1)
    assert.equal(result.out.length, 0)
    assert.match(result.err, /"0 0 30 2 \*" is not a valid cron schedule: day-of-month field "30": no listed day exists/)
  })

  test('an unknown zone exits 1 and names the zone', async () => {
    const result = await run('0 0 * * *', '--tz', 'europe/berlin')
    assert.equal(result.code, 1)
    assert.match(result.err, /"europe\/berlin" is not an IANA time zone name/)
  })

  test('usage errors exit 2: missing or unquoted schedule, bad --count, bad --from', async () => {
    for (const [args, message] of [
      [[], /the schedule expression is missing/],
      [['0', '0', '*', '*', '*'], /quote the schedule/],
      [['0 0 * * *', '--count', '0'], /--count must be a whole number from 1 to 1000, not "0"/],
      [['0 0 * * *', '--count', '1001'], /--count must be/],
      [['0 0 * * *', '--count', '2.5'], /--count must be/],
      [['0 0 * * *', '--from', 'yesterday'], /--from "yesterday" is not an ISO 8601 date-time/],
      [['0 0 * * *', '--from', '2026-02-30T00:00Z'], /--from "2026-02-30T00:00Z" is not an ISO 8601/],
    ] as const) {
      const result = await run(...args)
      assert.equal(result.code, 2, args.join(' '))
      assert.match(result.err, message)
      assert.equal(result.out.length, 0)
    }
  })

  test('--from outside the supported years exits 1', async () => {
    const result = await run('0 0 * * *', '--from', '1960-01-01T00:00:00Z')
    assert.equal(result.code, 1)
    assert.match(result.err, /from must be between 1970-01-01/)
  })

  test('the installed command prints to stdout and sets the exit status', async () => {
    const bin = new URL('../../bin/service.mjs', import.meta.url).pathname
    const { stdout } = await promisify(execFile)(process.execPath, [bin, 'cron', 'next', '0 9 * * *', '--tz', 'Europe/Berlin', '--from', '2026-03-28T12:00:00Z', '--count', '2'])
    assert.equal(stdout, '2026-03-29T09:00:00+02:00\n2026-03-30T09:00:00+02:00\n')
    await assert.rejects(promisify(execFile)(process.execPath, [bin, 'cron', 'next', '61 * * * *']), (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 1)
      assert.match(error.stderr ?? '', /minute field "61": 61 is out of range 0-59/)
      return true
    })
  })
})

describe(`service cron list and run over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let env: Record<string, string>
  before(async () => {
    h = await startHarness()
    let url: string
    ;({ server, url } = await serveHarness(h))
    const { token } = await h.createOwner('cli-cron@acme.test')
    env = { SERVICE_URL: url, SERVICE_TOKEN: token }
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'ticks', visibility: 'public' } })).status, 201)
    const res = await h.request('/v1/apps/ticks/deployments', {
      token,
      json: bundle({
        'service.yaml': manifest('ticks', `functions:
  - name: target
    entrypoint: functions/target.ts
    access: system
cron:
  - name: nightly
    schedule: "30 2 * * *"
    function: target
    timezone: Europe/Berlin
  - name: paused
    schedule: "0 * * * *"
    function: target
    enabled: false
`),
        'functions/target.ts': `import { defineFunction, literal, object, string } from '@service/server'
export default defineFunction({ input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }), async handler() { return null } })`,
      }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  after(async () => {
    server.close()
    await h.close()
  })

  test('cron list prints each entry with its next run in its zone, or that it is disabled', async () => {
    const { io, out } = capture(env)
    assert.equal(await main(['cron', 'list', 'ticks'], io), 0)
    assert.equal(out.length, 2)
    assert.match(out[0]!, /^nightly +"30 2 \* \* \*" +Europe\/Berlin +target +next 2026-11-22T02:30:00\+01:00$/)
    assert.match(out[1]!, /^paused +"0 \* \* \* \*" +UTC +target +disabled$/)
  })

  test('cron run queues a run now and prints its job; an unknown name is CRON_NOT_FOUND', async () => {
    const ran = capture(env)
    assert.equal(await main(['cron', 'run', 'ticks', 'nightly'], ran.io), 0)
    const jobId = /job ([0-9a-f-]{36}); see it with: service jobs get \1 --app ticks$/.exec(ran.out[0]!)?.[1]
    assert.ok(jobId, ran.out[0])
    assert.match(ran.out[0]!, /^queued a run of nightly \(scheduledAt 2026-11-21T12:00:00.000Z\)/)
    const job = await h.request(`/v1/apps/ticks/jobs/${jobId}`, { token: env.SERVICE_TOKEN! })
    assert.equal(((await job.json()) as { job: { queue: string } }).job.queue, 'cron:nightly')
    const unknown = capture(env)
    assert.equal(await main(['cron', 'run', 'ticks', 'nope'], unknown.io), 1)
    assert.match(unknown.err[0]!, /^error CRON_NOT_FOUND: /)
    const usage = capture(env)
    assert.equal(await main(['cron', 'run', 'ticks'], usage.io), 2)
  })
})
