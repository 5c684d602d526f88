import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { CookieClient, field } from '../../../platform/test/cookie-client.ts'
import { AUTH, deployPage, signInTo } from '../../../platform/test/sign-in-flow.ts'
import { capture, printed, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

describe(`service app access-token over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let env: Record<string, string>
  let browser: CookieClient
  before(async () => {
    h = await startHarness()
    const owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
    let url: string
    ;({ server, url } = await serveHarness(h))
    env = {
      SERVICE_URL: url,
      SERVICE_TOKEN: owner.token,
      SERVICE_POLL_INTERVAL_MS: '10',
    }
    browser = new CookieClient(h)
    await signInTo(browser, 'vault', 'owner@acme.test')
  })
  after(async () => {
    server.close()
    await h.close()
  })

  test('create prints a one-time reveal link and never the value; list shows it; revoke removes it', async () => {
    const created = capture(env)
    assert.equal(await main(['app', 'access-token', 'create', 'vault', '--name', 'ci'], created.io), 0, created.err.join('\n'))
    const output = created.out.join('\n')
    assert.doesNotMatch(output, /svc_app_/)
    assert.match(output, /once, for 15 minutes/)
    const revealUrl = await printed(created.out, /^http:\/\/auth\.localhost:8787\/app-tokens\/reveal\?\S+$/)
    const id = /access token ([0-9a-f-]{36})/.exec(output)![1]!

    const review = await browser.fetch(revealUrl)
    const html = await review.text()
    const shown = await browser.post(`${AUTH}/app-tokens/reveal`, { csrf: field(html, 'csrf'), id: field(html, 'id'), k: field(html, 'k') })
    const secret = /svc_app_[A-Za-z0-9_-]{43}/.exec(await shown.text())![0]
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)

    const list = capture(env)
    assert.equal(await main(['app', 'access-token', 'list', 'vault'], list.io), 0)
    assert.match(list.out.join('\n'), new RegExp(`^${id}\\s+ci\\s`, 'm'))
    assert.doesNotMatch(list.out.join('\n'), /svc_app_/)

    const revoked = capture(env)
    assert.equal(await main(['app', 'access-token', 'revoke', 'vault', id], revoked.io), 0)
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 401)
    const empty = capture(env)
    assert.equal(await main(['app', 'access-token', 'list', 'vault'], empty.io), 0)
    assert.match(empty.out[0]!, /^no access tokens for vault/)
  })

  test('request, without owner credentials, waits for the owner to approve in the browser and never prints the value', async () => {
    const agentEnv = { SERVICE_URL: env.SERVICE_URL, SERVICE_POLL_INTERVAL_MS: '10', SERVICE_CREDENTIALS_FILE: '/nonexistent/credentials.json' }
    const agent = capture(agentEnv)
    const running = main(['app', 'access-token', 'request', 'vault', '--name', 'agent'], agent.io)
    const approveUrl = await printed(agent.out, /http:\/\/auth\.localhost:8787\/app-tokens\/requests\/[0-9a-f-]{36}/)
    const html = await (await browser.fetch(approveUrl)).text()
    const approved = await browser.post(approveUrl, { csrf: field(html, 'csrf') })
    const secret = /svc_app_[A-Za-z0-9_-]{43}/.exec(await approved.text())![0]

    assert.equal(await running, 0, agent.err.join('\n'))
    const output = [...agent.out, ...agent.err].join('\n')
    assert.doesNotMatch(output, /svc_app_/)
    assert.match(output, /approved: access token [0-9a-f-]{36} created for vault/)
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)
  })

  test('usage errors exit 2 and platform refusals exit 1 with the code', async () => {
    const usage = capture(env)
    assert.equal(await main(['app', 'access-token', 'revoke', 'vault'], usage.io), 2)
    assert.match(usage.err.join('\n'), /service app access-token revoke <app> <tokenId>/)
    const unknown = capture(env)
    assert.equal(await main(['app', 'access-token', 'request', 'nowhere'], unknown.io), 1)
    assert.match(unknown.err[0]!, /^error APP_NOT_FOUND/)
  })
})
