/**
 * What a deploy writes to the platform log: one line per app migration applied and one
 * "deploy succeeded" line with the app, release and duration; a refused deploy writes one
 * "deploy failed" line naming the code (and the migration that failed).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../test/captured-log.ts'
import { backend } from '../../test/test-db.ts'

describe(`deploy log lines (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let token: string

  before(async () => {
    log = capturedLog('info')
    h = await startHarness(undefined, { logger: log.logger })
    token = (await h.createOwner('owner@acme.test')).token
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'notes', visibility: 'public' } })).status, 201)
  })
  after(() => h.close())

  const deploy = (migrations: Record<string, string>) =>
    h.request('/v1/apps/notes/deployments', { token, json: bundle({ 'service.yaml': manifest('notes'), 'public/index.html': 'hi', ...migrations }) })

  test('a deploy logs each migration it applied and one "deploy succeeded" line with app, release and duration', async () => {
    const first = log.lines.length
    const res = await deploy({ 'database/migrations/0001_notes.sql': 'create table notes (id int primary key);' })
    assert.equal(res.status, 201, await res.text())
    const lines = log.lines.slice(first).filter((l) => l.message !== 'request')
    assert.deepEqual(lines.map((l) => [l.level, l.message, l.app, l.release]), [
      ['info', 'app migration applied', 'notes', 1],
      ['info', 'deploy succeeded', 'notes', 1],
    ])
    assert.equal(lines[0]!.migration, '0001_notes.sql')
    assert.equal(lines[1]!.migrations, 1)
    assert.equal(typeof lines[1]!.durationMs, 'number')
  })

  test('a deploy whose migration fails logs one "deploy failed" warning with the code and the migration', async () => {
    const first = log.lines.length
    const res = await deploy({
      'database/migrations/0001_notes.sql': 'create table notes (id int primary key);',
      'database/migrations/0002_broken.sql': 'create tabel nope (id int);',
    })
    assert.equal(res.status, 422)
    const lines = log.lines.slice(first).filter((l) => l.message !== 'request')
    assert.deepEqual(lines.map((l) => [l.level, l.message, l.app, l.code, l.migration]), [
      ['warn', 'deploy failed', 'notes', 'MIGRATION_FAILED', 'database/migrations/0002_broken.sql'],
    ])
  })

  test('an invalid manifest is one "deploy failed" warning with MANIFEST_INVALID', async () => {
    const first = log.lines.length
    const res = await h.request('/v1/apps/notes/deployments', { token, json: bundle({ 'service.yaml': 'schemaVersion: 2' }) })
    assert.equal(res.status, 422)
    const lines = log.lines.slice(first).filter((l) => l.message !== 'request')
    assert.deepEqual(lines.map((l) => [l.level, l.message, l.code]), [['warn', 'deploy failed', 'MANIFEST_INVALID']])
  })
})
