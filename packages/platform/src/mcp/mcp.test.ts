/**
 * The MCP server end to end over Streamable HTTP with the official client SDK, against the
 * platform listening on loopback: what an anonymous caller may do, a scripted agent session
 * (onboarding, a deploy, a Function invoked in a development session and its logs), strict
 * inputs, secrets that never come out, and every tool's authority beside its owner API
 * route's (PGlite, or PostgreSQL with DATABASE_URL).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { backend } from '../../test/test-db.ts'
import { manifest, ownerApi } from '../../test/harness.ts'
import { CookieClient } from '../../test/cookie-client.ts'
import { approveLink, callTool, emailedLink, failure, files, mcpClient, ok, setUpCompany, startMcpPlatform, type McpPlatform } from './test-mcp.ts'

/** A whole scripted session starts Deno for a development namespace. */
const SLOW = { timeout: 180_000 }

const HELLO = `import { defineFunction, object, optional, string } from '@service/server'
export default defineFunction({
  input: object({ name: optional(string()) }),
  handler({ input, log, user }) {
    log.info('hello called', { name: input.name ?? 'world' })
    return { greeting: 'Hello, ' + (input.name ?? 'world'), signedIn: user !== null }
  },
})
`

const TICK = `import { defineFunction, object, string } from '@service/server'
export default defineFunction({
  input: object({ source: string(), name: string(), scheduledAt: string() }),
  handler() {
    return { ticked: true }
  },
})
`

function ordersBundle(slug: string, extra = '') {
  return files({
    'service.yaml': manifest(slug, `functions:
  - name: hello
    entrypoint: functions/hello.ts
    access: public
  - name: tick
    entrypoint: functions/tick.ts
    access: system
secrets:
  API_KEY: required
cron:
  - name: nightly
    schedule: "0 3 * * *"
    function: tick
${extra}`),
    'functions/hello.ts': HELLO,
    'functions/tick.ts': TICK,
    'public/index.html': '<h1>Orders</h1>',
  })
}

async function raw(p: McpPlatform, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${p.base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  })
}

describe(`MCP server over Streamable HTTP (${backend})`, () => {
  let p: McpPlatform
  before(async () => {
    p = await startMcpPlatform()
  })
  after(async () => {
    await p?.close()
  })

  test('without credentials only initialize and the onboarding tools answer; anything else is 401 naming the protected resource metadata', async () => {
    // Initializing works without a credential; listing tools does not (its 401 starts a client's OAuth flow).
    const anonymous = await mcpClient(p)
    await assert.rejects(anonymous.listTools(), (error: { code?: unknown }) => error.code === 401)
    assert.equal((await failure(anonymous, 'start_onboarding', { email: 'not-an-email', projectName: 'X' })).code, 'VALIDATION_FAILED')
    await anonymous.close()

    const challenge = `Bearer resource_metadata="${p.base}/.well-known/oauth-protected-resource/mcp"`
    const call = await raw(p, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_apps', arguments: {} } })
    assert.equal(call.status, 401)
    assert.equal(call.headers.get('www-authenticate'), challenge)
    // No server-held stream for anyone: a 401 there would start a second OAuth flow in clients that probe it.
    const stream = await fetch(`${p.base}/mcp`, { headers: { accept: 'text/event-stream' } })
    assert.equal(stream.status, 405)
    for (const token of ['svc_owner_forged', 'svc_app_forged', 'not-a-token']) {
      const forged = await raw(p, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, { authorization: `Bearer ${token}` })
      assert.equal(forged.status, 401, token)
      assert.match(forged.headers.get('www-authenticate')!, /error="invalid_token"/)
    }
    const owner = await p.h.createOwner('stream@acme.test', 'Streams')
    const get = await fetch(`${p.base}/mcp`, { headers: { accept: 'text/event-stream', authorization: `Bearer ${owner.token}` } })
    assert.equal(get.status, 405, 'stateless: no server-held stream')
  })

  test('a scripted agent session onboards, deploys an app, invokes a Function in a development session and reads its logs', SLOW, async () => {
    const agent = await mcpClient(p)
    const started = await ok(agent, 'start_onboarding', { email: 'ada@orders.test', projectName: 'Orders' })
    assert.equal(started.status, 'organisation_setup_required')
    assert.deepEqual(Object.keys(started).sort(), ['id', 'pollToken', 'status'], 'no app and no credential')
    assert.deepEqual(await ok(agent, 'poll_onboarding', { id: started.id, pollToken: started.pollToken }), { status: 'organisation_setup_required' })

    // The person confirms the emailed link and sets up a company, in their browser.
    const browser = new CookieClient(p.h)
    const confirmed = await approveLink(browser, p, await emailedLink(p, 'ada@orders.test', '/confirm'))
    assert.equal(confirmed.status, 303, await confirmed.text())
    assert.equal((await setUpCompany(browser, p, 'Orders Ltd', `/launch/${started.id}`)).status, 303)
    const ready = await ok(agent, 'poll_onboarding', { id: started.id, pollToken: started.pollToken })
    assert.equal(ready.status, 'ready')
    assert.match(ready.token, /^svc_owner_/)
    assert.deepEqual(await ok(agent, 'poll_onboarding', { id: started.id, pollToken: started.pollToken }), { status: 'ready' }, 'once')
    await agent.close()

    const builder = await mcpClient(p, ready.token)
    const names = (await builder.listTools()).tools.map((t) => t.name)
    for (const name of ['deploy_app', 'invoke_dev_function', 'read_logs', 'list_background_jobs']) assert.ok(names.includes(name), name)
    const created = await ok(builder, 'create_app', { slug: 'orders', visibility: 'public' })
    assert.equal(created.app.slug, 'orders')

    // Validation answers line-precise problems and changes nothing.
    const broken = await ok(builder, 'validate_app', {
      appId: 'orders', files: files({ 'service.yaml': manifest('orders', 'functions:\n  - name: hello\n    entrypoint: functions/missing.ts\n    access: public\n') }),
    })
    assert.equal(broken.valid, false)
    assert.equal(broken.code, 'MANIFEST_INVALID')
    assert.ok(broken.problems.length > 0)
    for (const problem of broken.problems) assert.ok(Number.isInteger(problem.line) && problem.line > 0, JSON.stringify(problem))
    assert.deepEqual((await ok(builder, 'list_releases', { appId: 'orders' })).releases, [])
    const valid = await ok(builder, 'validate_app', { appId: 'orders', files: ordersBundle('orders') })
    assert.equal(valid.valid, true)

    const production = await ok(builder, 'deploy_app', { appId: 'orders', files: ordersBundle('orders') })
    assert.equal(production.release.version, 1)
    const dev = await ok(builder, 'deploy_app', { appId: 'orders', sessionId: 'alice', files: ordersBundle('orders') })
    assert.equal(dev.sessionId, 'alice')
    assert.equal((await ok(builder, 'list_releases', { appId: 'orders', sessionId: 'alice' })).releases.length, 1)

    const invoked = await ok(builder, 'invoke_dev_function', { appId: 'orders', sessionId: 'alice', functionName: 'hello', input: { name: 'Ada' } })
    assert.equal(invoked.ok, true)
    assert.deepEqual(invoked.value, { greeting: 'Hello, Ada', signedIn: true })
    assert.ok(invoked.logs.some((line: { message: string }) => line.message === 'hello called'))
    const logs = await ok(builder, 'read_logs', { appId: 'orders', sessionId: 'alice', requestId: invoked.requestId })
    assert.equal(logs.logs.length, 1)
    assert.equal(logs.logs[0].message, 'hello called')
    assert.deepEqual((await ok(builder, 'read_logs', { appId: 'orders' })).logs, [], 'production logs stay apart')
    assert.deepEqual((await ok(builder, 'read_logs', { appId: 'orders', sessionId: 'alice', after: logs.newestCursor })).logs, [], 'nothing newer yet')
    const anonymous = await ok(builder, 'invoke_dev_function', { appId: 'orders', sessionId: 'alice', functionName: 'hello', as: 'anonymous' })
    assert.equal(anonymous.value.signedIn, false)

    // Cron of the production release, run now.
    const cron = await ok(builder, 'list_cron', { appId: 'orders' })
    assert.equal(cron.cron[0].name, 'nightly')
    const run = await ok(builder, 'run_cron', { appId: 'orders', name: 'nightly' })
    assert.equal(run.run.cron, 'nightly')
    const job = await ok(builder, 'get_background_job', { appId: 'orders', jobId: run.run.jobId })
    assert.equal(job.job.id, run.run.jobId)
    for (const hidden of ['payload', 'idempotencyKey', 'enqueuedBy', 'enqueued_by', 'idempotency_key']) assert.ok(!(hidden in job.job), hidden)
    const jobs = await ok(builder, 'list_background_jobs', { appId: 'orders' })
    assert.ok(jobs.jobs.some((j: { id: string }) => j.id === run.run.jobId))
    assert.doesNotMatch(JSON.stringify(jobs), /scheduledAt|service\.cron/, 'no payload in the listing')
    assert.equal((await ok(builder, 'list_apps')).apps[0].slug, 'orders')
    await builder.close()
  })

  test('secrets go in and never come out', async () => {
    const owner = await p.h.createOwner('keeper@vault.test', 'Vault')
    assert.equal((await ownerApi(p.h, owner.token, 'POST', '/v1/apps', { slug: 'vault', visibility: 'public' })).status, 201)
    const client = await mcpClient(p, owner.token)
    await ok(client, 'deploy_app', { appId: 'vault', files: ordersBundle('vault') })
    const value = 'sk_live_very_secret_value_123'
    const set = await ok(client, 'set_secret', { appId: 'vault', name: 'API_KEY', value })
    assert.deepEqual({ ...set.secret, updatedAt: 'x' }, { name: 'API_KEY', declared: true, required: true, set: true, updatedAt: 'x' })
    const listed = await ok(client, 'list_secrets', { appId: 'vault' })
    assert.deepEqual(listed.secrets.map((s: { name: string; set: boolean }) => [s.name, s.set]), [['API_KEY', true]])
    assert.doesNotMatch(JSON.stringify([set, listed]), /very_secret/)
    const http = await ownerApi(p.h, owner.token, 'GET', '/v1/apps/vault/secrets')
    assert.deepEqual(listed.secrets, http.body.secrets, 'the tool answers what the owner API answers')
    await client.close()
  })

  test('inputs are strict: unknown keys and wrong types are refused with VALIDATION_FAILED, and the listed schemas say so', async () => {
    const owner = await p.h.createOwner('strict@acme.test', 'Strict')
    const client = await mcpClient(p, owner.token)
    const { tools } = await client.listTools()
    for (const tool of tools) assert.equal((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties, false, tool.name)
    const unknown = await failure(client, 'list_apps', { everything: true })
    assert.equal(unknown.code, 'VALIDATION_FAILED')
    const wrong = await failure(client, 'set_dev_integration_mode', { appId: 'x', sessionId: 'alice', integrationName: 'crm', mode: 'maybe' })
    assert.equal(wrong.code, 'VALIDATION_FAILED')
    assert.equal((await failure(client, 'no_such_tool')).code, 'NOT_FOUND')
    await client.close()
  })

  test('start_onboarding shares the onboarding endpoint\'s limit of 30 starts per client address in 15 minutes', async () => {
    p.h.clock.advance(16 * 60 * 1000) // a fresh window for this address
    const overHttp = (i: number) => fetch(`${p.base}/v1/onboarding`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `http-${i}@limits.test`, projectName: 'Limits' }),
    })
    for (let i = 0; i < 20; i++) assert.equal((await overHttp(i)).status, 201)
    const agent = await mcpClient(p)
    for (let i = 0; i < 10; i++) await ok(agent, 'start_onboarding', { email: `mcp-${i}@limits.test`, projectName: 'Limits' })
    assert.equal((await failure(agent, 'start_onboarding', { email: 'one-more@limits.test', projectName: 'Limits' })).code, 'RATE_LIMITED')
    assert.equal((await overHttp(99)).status, 429, 'and the endpoint counts the tool\'s starts')
    await agent.close()
  })

  describe('every tool has exactly the authority of its owner API route', () => {
    let owner: { token: string; userId: string }
    let member: { token: string; userId: string }
    let outsider: { token: string; userId: string }
    let clients: Client[] = []
    before(async () => {
      owner = await p.h.createOwner('owner@shop.test', 'Shop')
      member = await p.h.createOwner('member@shop.test', 'Shop')
      outsider = await p.h.createOwner('stranger@elsewhere.test', 'Elsewhere')
      assert.equal((await ownerApi(p.h, owner.token, 'POST', '/v1/apps', { slug: 'shop', visibility: 'public' })).status, 201)
      assert.equal((await ownerApi(p.h, owner.token, 'POST', '/v1/apps/shop/deployments', {
        files: ordersBundle('shop').map((f) => ({ path: f.path, content: Buffer.from(f.content).toString('base64') })),
      })).status, 201)
      // The member holds Use on the app: below the Edit every tool but the token request needs.
      assert.equal((await ownerApi(p.h, owner.token, 'POST', '/v1/apps/shop/grants', { email: 'member@shop.test' })).status, 201)
    })
    after(async () => {
      await Promise.all(clients.map((c) => c.close()))
      clients = []
    })

    const JOB = '00000000-0000-4000-8000-000000000000'
    const bundleBody = () => ({ files: ordersBundle('shop').map((f) => ({ path: f.path, content: Buffer.from(f.content).toString('base64') })) })
    /** Each tool on the app, and the owner API call it stands for. */
    const CASES: Array<{ tool: string; args: Record<string, unknown>; route: [string, string, unknown?] }> = [
      { tool: 'validate_app', args: { appId: 'shop', files: ordersBundle('shop') }, route: ['POST', '/v1/apps/shop/deployments?dryRun=true', bundleBody()] },
      { tool: 'deploy_app', args: { appId: 'shop', files: ordersBundle('shop') }, route: ['POST', '/v1/apps/shop/deployments', bundleBody()] },
      { tool: 'list_releases', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/releases'] },
      { tool: 'read_logs', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/logs'] },
      { tool: 'set_secret', args: { appId: 'shop', name: 'API_KEY', value: 'v' }, route: ['PUT', '/v1/apps/shop/secrets/API_KEY', { value: 'v' }] },
      { tool: 'list_secrets', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/secrets'] },
      { tool: 'list_cron', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/cron'] },
      { tool: 'run_cron', args: { appId: 'shop', name: 'nightly' }, route: ['POST', '/v1/apps/shop/cron/nightly/runs', {}] },
      { tool: 'list_custom_integrations', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/custom-integrations'] },
      { tool: 'list_integration_event_deliveries', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/integration-events'] },
      { tool: 'list_background_jobs', args: { appId: 'shop' }, route: ['GET', '/v1/apps/shop/jobs'] },
      { tool: 'get_background_job', args: { appId: 'shop', jobId: JOB }, route: ['GET', `/v1/apps/shop/jobs/${JOB}`] },
      { tool: 'set_dev_integration_mode', args: { appId: 'shop', sessionId: 'alice', integrationName: 'crm', mode: 'fake' }, route: ['PUT', '/v1/apps/shop/dev/alice/integrations/crm/mode', { mode: 'fake' }] },
      { tool: 'inject_dev_integration_event', args: { appId: 'shop', sessionId: 'alice', integrationName: 'crm', type: 'contact.created' }, route: ['POST', '/v1/apps/shop/dev/alice/integrations/crm/events', { type: 'contact.created' }] },
      { tool: 'set_dev_integration_test_connection', args: { appId: 'shop', sessionId: 'alice', integrationName: 'crm', connectionId: JOB }, route: ['PUT', '/v1/apps/shop/dev/alice/integrations/crm/test-connection', { connectionId: JOB }] },
      { tool: 'invoke_dev_function', args: { appId: 'shop', sessionId: 'alice', functionName: 'hello' }, route: ['POST', '/v1/apps/shop/dev/alice/functions/hello/invoke', {}] },
      { tool: 'create_app_access_token', args: { appId: 'shop', name: 'export' }, route: ['POST', '/v1/apps/shop/access-tokens', { name: 'export' }] },
    ]

    for (const who of ['outsider', 'member'] as const) {
      test(`a ${who === 'outsider' ? 'person of another company' : 'Use holder'} is refused by every tool with the route's code`, async () => {
        const token = who === 'outsider' ? outsider.token : member.token
        const client = await mcpClient(p, token)
        clients.push(client)
        for (const { tool, args, route } of CASES) {
          const http = await ownerApi(p.h, token, route[0], route[1], route[2])
          assert.ok(http.status >= 400, `${tool}: the route refuses (${http.status})`)
          const refused = await failure(client, tool, args)
          assert.equal(refused.code, http.body.error.code, `${tool} answers the route's ${http.body.error.code}`)
        }
        const apps = (await ok(client, 'list_apps')).apps.map((a: { slug: string }) => a.slug)
        const http = (await ownerApi(p.h, token, 'GET', '/v1/apps')).body.apps.map((a: { slug: string }) => a.slug)
        assert.deepEqual(apps, http)
      })
    }

    test('the owner is let through by every tool the route lets through', SLOW, async () => {
      const client = await mcpClient(p, owner.token)
      clients.push(client)
      for (const { tool, args, route } of CASES) {
        const answer = await callTool(client, tool, args)
        const http = await ownerApi(p.h, owner.token, route[0], route[1], route[2])
        assert.equal(answer.isError ? answer.code : 'ok', http.status < 400 ? 'ok' : http.body.error.code, `${tool} and ${route[0]} ${route[1]}`)
      }
    })

    test('an unconfirmed account may not create an app access token, as on the owner API', async () => {
      await p.h.t.db.query('update platform.users set email_confirmed_at = null where id = $1', [owner.userId])
      try {
        const client = await mcpClient(p, owner.token)
        clients.push(client)
        const http = await ownerApi(p.h, owner.token, 'POST', '/v1/apps/shop/access-tokens', { name: 'x' })
        assert.equal(http.body.error.code, 'CONFIRMATION_REQUIRED')
        assert.equal((await failure(client, 'create_app_access_token', { appId: 'shop', name: 'x' })).code, 'CONFIRMATION_REQUIRED')
      } finally {
        await p.h.t.db.query('update platform.users set email_confirmed_at = now() where id = $1', [owner.userId])
      }
    })

    test('an access token request emails the owner the approval link and never answers a token', async () => {
      const client = await mcpClient(p, outsider.token)
      clients.push(client)
      const requested = await ok(client, 'request_app_access_token', { appId: 'shop', name: 'reporting' })
      assert.deepEqual(Object.keys(requested).sort(), ['approveUrl', 'expiresAt', 'id', 'pollToken'])
      assert.doesNotMatch(JSON.stringify(requested), /svc_app_/)
      assert.equal(await emailedLink(p, 'owner@shop.test', '/app-tokens/requests/'), requested.approveUrl)
    })
  })
})
