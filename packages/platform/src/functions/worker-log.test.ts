/**
 * What the platform log says about Functions workers: a line when one starts and when one
 * ends, each naming the app, namespace and release it serves (issue 11: a user reading the
 * server log can tell which app's workers come and go).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { capturedLog, type CapturedLog } from '../../test/captured-log.ts'
import { eventually } from '../../test/eventually.ts'

const FUNCTION = `import { defineFunction, object } from '@service/server'
export default defineFunction({
  input: object({}),
  async handler() {
    return { ok: true }
  },
})
`

describe(`Functions worker log lines (${backend})`, () => {
  let h: Harness
  let log: CapturedLog
  let app: { id: string; activeReleaseId: string }
  before(async () => {
    log = capturedLog('info')
    h = await startHarness(undefined, { logger: log.logger })
    const owner = await h.createOwner('owner@acme.test')
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug: 'worker-log', visibility: 'public' } })).status, 201)
    const deployed = await h.request('/v1/apps/worker-log/deployments', {
      token: owner.token,
      json: bundle({
        'service.yaml': manifest('worker-log', `functions:
  - name: probe
    entrypoint: functions/probe.ts
    access: public
`),
        'functions/probe.ts': FUNCTION,
      }),
    })
    assert.equal(deployed.status, 201, await deployed.text())
    const body = (await (await h.request('/v1/apps/worker-log', { token: owner.token })).json()) as { app: { id: string; activeReleaseId: string } }
    app = body.app
  })
  after(() => h.close())

  const call = () => h.request('/_service/functions/probe', { host: 'worker-log', json: {}, headers: { 'x-service-sdk': '1' } })

  test('a worker start and a worker crash are each one info or warn line naming the app and release', async () => {
    assert.equal((await call()).status, 200)
    const started = log.withMessage('functions worker started')
    assert.ok(started.length >= 1)
    assert.equal(started[0]!.level, 'info')
    assert.equal(started[0]!.appId, app.id)
    assert.equal(started[0]!.releaseId, app.activeReleaseId)
    assert.equal(started[0]!.devName, null)

    // A worker that dies (killed from outside, as the OOM killer would).
    process.kill(started[0]!.pid as number, 'SIGKILL')
    await eventually(async () => log.withMessage('functions worker ended').length === 1, 'the end is logged')
    const ended = log.withMessage('functions worker ended')
    assert.equal(ended[0]!.level, 'warn')
    assert.equal(ended[0]!.appId, app.id)
    assert.equal(ended[0]!.releaseId, app.activeReleaseId)
  })
})
