// The owner dashboard over HTTP (the real platform in-process, a cookie jar for a browser):
// where it lives, who sees what, every change a CSRF-checked form that calls the owner API's
// own functions (the API's answers are the oracle), and no secret value in a page or URL.
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { CookieClient, field } from '../../test/cookie-client.ts'
import { AUTH, signedInBrowser } from '../../test/sign-in-flow.ts'
import { consumerManifest, createTestConnection, deployApp, listOrders, ordersContract } from '../../test/integration-fixture.ts'
import { latestDevMailTo } from '../email/index.ts'
import { findConnection, markReconnectRequired } from '../integrations/connections/index.ts'
import { queuesBundle, queuesYaml } from '../jobs/test-app.ts'
import { SECRET_KEY_PREFIX, SECRET_PAYLOAD, seedJobs, seedLogs } from './test-fixtures.ts'

const SLUG = 'ledger'
const SECRET_VALUE = 'sk_live_value-that-must-never-show-1234'
const HOUR = 60 * 60 * 1000

/** The text of a page without tags, for assertions about what a person reads. */
function textOf(html: string): string {
  return html.replace(/<script[\s\S]*?<\/script>/g, '').replace(/<style[\s\S]*?<\/style>/g, '').replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&').replace(/\s+/g, ' ')
}

/** The number a totals card shows for `name` (data-stat). */
function statOf(html: string, name: string): number {
  const match = new RegExp(`data-stat="${name.replace('.', '\\.')}"[\\s\\S]*?<div class="value">([^<]*)</div>`).exec(html)
  assert.ok(match, `no stat ${name}`)
  return Number(match[1])
}

function hrefOf(html: string, rel: 'next' | 'prev'): string | null {
  const match = new RegExp(`rel="${rel}" href="([^"]*)"`).exec(html)
  return match ? match[1]!.replace(/&amp;/g, '&') : null
}

describe(`the owner dashboard (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  let other: { token: string; userId: string }
  let b: CookieClient

  async function page(path: string): Promise<{ status: number; html: string; response: Response }> {
    const response = await b.fetch(`${AUTH}${path}`)
    return { status: response.status, html: await response.text(), response }
  }

  async function submit(path: string, fields: Record<string, string>, from = '/dashboard'): Promise<Response> {
    const csrf = field(await (await b.fetch(`${AUTH}${from}`)).text(), 'csrf')
    return b.post(`${AUTH}${path}`, { csrf, ...fields })
  }

  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    other = await h.createOwner('other@acme.test')
    // A provider app publishing "orders", and the ledger consuming it beside its queues.
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    await deployApp(h, owner.token, 'shop', {
      'service.yaml': `schemaVersion: 3\napp:\n  id: shop\n  visibility: private\nruntime:\n  sdk:\n    version: 2.6.0\nfunctions:\n  - name: ordersImpl\n    entrypoint: functions/orders.ts\n    access: system\n${ordersContract({ operations: [listOrders('ordersImpl')] })}`,
      'functions/orders.ts': `import { defineFunction, object } from '@service/server'\nexport default defineFunction({ input: object({}), async handler() { return [] } })`,
    })
    assert.equal((await h.request('/v1/apps', { token: owner.token, json: { slug: SLUG, visibility: 'private' } })).status, 201)
    const ledger = queuesBundle(SLUG, queuesYaml() + consumerManifest({ slots: { orders: { integration: 'orders', capabilities: ['orders.read'] } } }))
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token: owner.token, json: ledger })).status, 201)
    h.clock.advance(60_000)
    assert.equal((await h.request(`/v1/apps/${SLUG}/deployments`, { token: owner.token, json: ledger })).status, 201)
    assert.equal((await h.request(`/v1/apps/${SLUG}/dev/alice/deployments`, { token: owner.token, json: ledger })).status, 201)
    assert.equal((await h.request('/v1/apps', { token: other.token, json: { slug: 'gadget', visibility: 'private' } })).status, 201)
    assert.equal((await ownerApi(h, other.token, 'PUT', '/v1/apps/gadget/members/owner@acme.test', { role: 'use' })).status, 201)
    b = await signedInBrowser(h, 'owner@acme.test')
  })

  after(async () => {
    await h.close()
  })

  test('{base_url}/ sends people to the dashboard on the auth host, which sends a signed-out browser to sign-in and back', async () => {
    const home = await h.request('/')
    assert.equal(home.status, 302)
    assert.equal(home.headers.get('location'), `${AUTH}/dashboard`)
    const deep = await h.request('/dashboard/apps/ledger/jobs?size=10')
    assert.equal(deep.headers.get('location'), `${AUTH}/dashboard/apps/ledger/jobs?size=10`)
    const stranger = new CookieClient(h)
    const res = await stranger.fetch(`${AUTH}/dashboard/apps/ledger`)
    assert.equal(res.status, 302)
    assert.equal(res.headers.get('location'), `${AUTH}/sign-in?continue=${encodeURIComponent('/dashboard/apps/ledger')}`)
    const post = await stranger.post(`${AUTH}/dashboard/apps/ledger/secrets`, { csrf: 'x', name: 'A', value: 'b' })
    assert.equal(post.status, 401, 'a form without a session changes nothing')
  })

  test('the home lists the apps the person owns and those they may use, with status and visibility', async () => {
    const { status, html, response } = await page('/dashboard')
    assert.equal(status, 200)
    const text = textOf(html)
    assert.match(text, /Your apps shop shop Active Private Owner ledger ledger Active Public Owner Apps you may use gadget gadget Active Private Use/)
    const policy = response.headers.get('content-security-policy') ?? ''
    assert.match(policy, /script-src 'nonce-[^']+'/)
    assert.doesNotMatch(policy, /unsafe-inline/)
    assert.doesNotMatch(html, /\sstyle="/, 'no style attributes: the CSP would refuse them')
    for (const tag of html.match(/<(script|style)\b[^>]*>/g) ?? []) assert.match(tag, /nonce="/)
  })

  test('an app\'s overview shows status, URL, visibility, releases newest first and development namespaces', async () => {
    const { html } = await page(`/dashboard/apps/${SLUG}`)
    const text = textOf(html)
    assert.match(text, /Active/)
    assert.ok(html.includes('http://ledger.localhost:8787'))
    const releases = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/releases`)).body.releases
    assert.equal(releases.length, 2)
    assert.match(text, /v2 Active 2\.6\.0 .* v1 Superseded 2\.6\.0/)
    assert.ok(html.includes(`datetime="${releases[0].activatedAt}"`), 'activation time as a <time> the script shows locally')
    const namespaces = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/dev`)).body.namespaces
    assert.deepEqual(namespaces.map((n: { name: string }) => n.name), ['alice'])
    assert.equal(namespaces[0].activeRelease.version, 1)
    assert.match(text, /Development namespaces .*alice v1/)
  })

  test('a paused app says why and offers to resend the verification email', async () => {
    await h.t.db.query(`update platform.apps set status = 'paused', paused_reason = 'verification_required' where slug = $1`, [SLUG])
    try {
      const { html } = await page(`/dashboard/apps/${SLUG}`)
      assert.match(textOf(html), /Paused: the owner's email address is not confirmed/)
      assert.match(html, /<form method="post" action="\/verification\/resend">.*name="app" value="ledger"/s)
    } finally {
      await h.t.db.query(`update platform.apps set status = 'active', paused_reason = null where slug = $1`, [SLUG])
    }
  })

  test('a Use holder sees the overview only, and is refused the builders\' sections as the owner API refuses them', async () => {
    const overview = await page('/dashboard/apps/gadget')
    assert.equal(overview.status, 200)
    assert.doesNotMatch(overview.html, /Releases|href="\/dashboard\/apps\/gadget\/secrets"/)
    const api = await ownerApi(h, owner.token, 'GET', '/v1/apps/gadget/secrets')
    for (const section of ['secrets', 'logs', 'jobs', 'feed', 'integrations', 'access']) {
      const refused = await page(`/dashboard/apps/gadget/${section}`)
      assert.equal(refused.status, 403, section)
      if (section !== 'access') assert.ok(textOf(refused.html).includes(api.body.error.message), section)
    }
    const unknown = await page('/dashboard/apps/nowhere')
    assert.equal(unknown.status, 404)
  })

  test('secrets are set and unset with forms; the value never shows in a page, a URL or a redirect', async () => {
    const denied = await b.post(`${AUTH}/dashboard/apps/${SLUG}/secrets`, { csrf: 'forged', name: 'STRIPE_KEY', value: SECRET_VALUE })
    assert.equal(denied.status, 403)
    const csrf = field(await (await b.fetch(`${AUTH}/dashboard/apps/${SLUG}/secrets`)).text(), 'csrf')
    const foreign = await b.post(`${AUTH}/dashboard/apps/${SLUG}/secrets`, { csrf, name: 'STRIPE_KEY', value: SECRET_VALUE }, 'http://evil.localhost:8787')
    assert.equal(foreign.status, 403)
    assert.deepEqual((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/secrets`)).body.secrets, [])

    const saved = await b.post(`${AUTH}/dashboard/apps/${SLUG}/secrets`, { csrf, name: 'STRIPE_KEY', value: SECRET_VALUE })
    assert.equal(saved.status, 303)
    const location = saved.headers.get('location')!
    assert.equal(location, `/dashboard/apps/${SLUG}/secrets?done=secret-set`)
    const listed = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/secrets`)).body.secrets
    assert.deepEqual(listed.map((s: { name: string; set: boolean }) => [s.name, s.set]), [['STRIPE_KEY', true]])
    const { html } = await page(location)
    assert.match(textOf(html), /Secret saved.*STRIPE_KEY .*Set/)
    assert.ok(!html.includes(SECRET_VALUE) && !html.includes('sk_live'), 'the value is not in the page')

    await b.post(`${AUTH}/dashboard/apps/${SLUG}/secrets`, { csrf, name: 'NIGHT_KEY', value: 'dev-only', dev: 'alice' })
    assert.equal((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/dev/alice/secrets`)).body.secrets[0].name, 'NIGHT_KEY')
    assert.equal((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/secrets`)).body.secrets.length, 1, 'production untouched')

    const unset = await b.post(`${AUTH}/dashboard/apps/${SLUG}/secrets/unset`, { csrf, name: 'STRIPE_KEY' })
    assert.equal(unset.status, 303)
    assert.deepEqual((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/secrets`)).body.secrets, [])
  })

  test('creating a token goes to its one-time reveal page; the Access screen lists it and revokes it', async () => {
    const created = await submit(`/dashboard/apps/${SLUG}/access/tokens`, { name: 'nightly export' }, `/dashboard/apps/${SLUG}/access`)
    assert.equal(created.status, 303)
    const reveal = new URL(created.headers.get('location')!)
    assert.equal(`${reveal.origin}${reveal.pathname}`, `${AUTH}/app-tokens/reveal`)
    const confirm = await b.fetch(reveal.toString())
    const confirmHtml = await confirm.text()
    assert.match(confirmHtml, /Show the token/)
    assert.doesNotMatch(confirmHtml, /svc_app_/)
    const shown = await b.post(`${AUTH}/app-tokens/reveal`, { csrf: field(confirmHtml, 'csrf'), id: field(confirmHtml, 'id'), k: field(confirmHtml, 'k') })
    const token = /value="(svc_app_[^"]+)"/.exec(await shown.text())![1]!

    const tokens = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/access-tokens`)).body.tokens
    assert.equal(tokens.length, 1)
    const { html } = await page(`/dashboard/apps/${SLUG}/access`)
    assert.match(textOf(html), /App access tokens .*nightly export/)
    assert.ok(!html.includes(token), 'the Access screen never shows a value')
    assert.equal((await h.request('/rest/v1/runs', { host: SLUG, token })).status, 200)

    const revoked = await submit(`/dashboard/apps/${SLUG}/access/tokens/${tokens[0].id}/revoke`, {})
    assert.equal(revoked.status, 303)
    assert.deepEqual((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/access-tokens`)).body.tokens, [])
    assert.equal((await h.request('/rest/v1/runs', { host: SLUG, token })).status, 401)
    const again = await submit(`/dashboard/apps/${SLUG}/access/tokens/${tokens[0].id}/revoke`, {})
    assert.equal(again.status, 404, 'revoking twice is refused as the API refuses it')
  })

  test('pending token requests are listed for the owner, who refuses one; the agent then reads expired', async () => {
    const filed = await ownerApi(h, owner.token, 'POST', '/v1/app-token-requests', { app: SLUG, name: 'agent export' })
    assert.equal(filed.status, 201)
    const listed = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/access-token-requests`)).body.requests
    assert.deepEqual(listed.map((r: { id: string }) => r.id), [filed.body.id])
    assert.equal(listed[0].approveUrl, filed.body.approveUrl)
    const { html } = await page(`/dashboard/apps/${SLUG}/access`)
    assert.match(textOf(html), /Pending token requests .*agent export .*Review and approve/)
    assert.ok(html.includes(`href="/app-tokens/requests/${filed.body.id}"`))
    assert.equal((await ownerApi(h, other.token, 'GET', '/v1/apps/gadget/access-token-requests')).status, 200, 'the owner of gadget')
    assert.equal((await ownerApi(h, owner.token, 'GET', '/v1/apps/gadget/access-token-requests')).status, 403, 'a Use holder')

    const refused = await submit(`/dashboard/apps/${SLUG}/access/requests/${filed.body.id}/refuse`, {})
    assert.equal(refused.status, 303)
    const poll = await h.request(`/v1/app-token-requests/${filed.body.id}/poll`, { json: { pollToken: filed.body.pollToken } })
    assert.deepEqual(await poll.json(), { status: 'expired' })
    assert.deepEqual((await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/access-token-requests`)).body.requests, [])
    assert.equal((await ownerApi(h, owner.token, 'DELETE', `/v1/apps/${SLUG}/access-token-requests/${filed.body.id}`)).status, 404)
  })

  test('roles are given, changed and removed on the Access screen', async () => {
    assert.equal((await submit(`/dashboard/apps/${SLUG}/access/members`, { member: 'other@acme.test', role: 'edit' })).status, 303)
    let members = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/members`)).body.members
    assert.deepEqual(members.map((m: { email: string; role: string }) => [m.email, m.role]), [['other@acme.test', 'edit']])
    assert.match(textOf((await page(`/dashboard/apps/${SLUG}/access`)).html), /People and roles .*owner@acme\.test Owner .*other@acme\.test/)
    assert.equal((await submit(`/dashboard/apps/${SLUG}/access/members/remove`, { member: members[0].userId })).status, 303)
    members = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/members`)).body.members
    assert.deepEqual(members, [])
    const bad = await submit(`/dashboard/apps/${SLUG}/access/members`, { member: 'nobody@acme.test', role: 'use' })
    assert.equal(bad.status, 404)
    assert.match(textOf(await bad.text()), /no account exists for nobody@acme\.test/)
  })

  test('logs filter by level, Function, time range and request id, newest first, and page with Previous and Next', async () => {
    const start = new Date('2026-11-21T08:00:00Z')
    await seedLogs(h.t.db, SLUG, Array.from({ length: 60 }, (_, i) => ({
      level: (['debug', 'info', 'warn', 'error'] as const)[i % 4]!, fn: i % 2 === 0 ? 'produce' : 'consume',
      requestId: `req-${Math.floor(i / 3)}`, message: `line ${i}`, at: new Date(start.getTime() + i * 60_000),
    })))
    const first = await page(`/dashboard/apps/${SLUG}/logs`)
    const api = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/logs?limit=50`)).body
    const shown = [...first.html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1]))
    assert.deepEqual(shown, api.logs.map((l: { message: string }) => Number(l.message.slice(5))))
    assert.equal(shown[0], 59, 'newest first')
    const next = hrefOf(first.html, 'next')!
    const second = await page(next)
    assert.deepEqual([...second.html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1])), [9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    assert.equal(hrefOf(second.html, 'next'), null)
    assert.deepEqual([...(await page(hrefOf(second.html, 'prev')!)).html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1])), shown)

    const filtered = await page(`/dashboard/apps/${SLUG}/logs?level=warn&function=produce&from=2026-11-21T08:10:00.000Z&to=2026-11-21T08:30:59.999Z`)
    const lines = [...filtered.html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1]))
    const expected = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/logs?level=warn&function=produce&from=2026-11-21T08:10:00.000Z&to=2026-11-21T08:30:59.999Z`)).body.logs
    assert.deepEqual(lines, expected.map((l: { message: string }) => Number(l.message.slice(5))))
    assert.ok(lines.length > 0 && lines.every((n) => n >= 10 && n <= 30 && n % 2 === 0 && n % 4 === 2))
    const byRequest = await page(`/dashboard/apps/${SLUG}/logs?requestId=req-4`)
    assert.deepEqual([...byRequest.html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1])), [14, 13, 12])
    const utc = await page(`/dashboard/apps/${SLUG}/logs?fromLocal=2026-11-21T08:58&toLocal=2026-11-21T08:59`)
    assert.deepEqual([...utc.html.matchAll(/<div class="message">line (\d+)<\/div>/g)].map((m) => Number(m[1])), [59, 58], 'without the script: UTC, "to" inclusive of its minute')
  })

  test('background jobs: totals, rollups, policy, chart and history share one inclusive range; history pages in 10, 25, 50 or 100', async () => {
    const start = new Date('2026-11-20T00:00:00Z')
    const states = ['succeeded', 'succeeded', 'dead_lettered', 'queued', 'retry_wait', 'succeeded', 'running'] as const
    await seedJobs(h.t.db, SLUG, Array.from({ length: 37 }, (_, i) => ({
      queue: i % 3 === 0 ? 'wide' : 'work', state: states[i % states.length]!, createdAt: new Date(start.getTime() + i * 10 * 60_000),
      attempts: i % 5 === 0 ? 3 : 1, ...(states[i % states.length] === 'dead_lettered' ? { error: { code: 'BAD_THING', message: 'The payload names a bad thing' } } : {}),
    })))
    const from = '2026-11-20T00:30:00.000Z'
    const to = '2026-11-20T05:20:00.000Z'
    const api = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/jobs?from=${from}&to=${to}&limit=100`)).body
    const sum = (key: string) => api.totals.reduce((n: number, t: Record<string, number>) => n + t[key]!, 0)
    assert.equal(sum('created'), 30, 'jobs 3 to 32, both ends inclusive')

    const first = await page(`/dashboard/apps/${SLUG}/jobs?from=${from}&to=${to}&size=10`)
    assert.equal(first.status, 200)
    for (const name of ['created', 'retried', 'succeeded', 'failed']) assert.equal(statOf(first.html, name), sum(name), name)
    const signals = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/signals?from=${from}&to=${to}`)).body
    assert.equal(statOf(first.html, 'depth'), signals.signals['jobs.active'])
    const text = textOf(first.html)
    assert.match(text, /Totals in the range .*wide .*work/)
    assert.match(text, /Policy .*backoff consume 5 4 10 s doubling 20 s/)
    assert.equal((first.html.match(/<rect class="s-/g) ?? []).length > 0, true, 'the chart has bars')
    const timeline = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/jobs/timeline?from=${from}&to=${to}`)).body
    assert.equal(timeline.buckets.reduce((n: number, bucket: { counts: Record<string, number> }) =>
      n + Object.values(bucket.counts).reduce((a, c) => a + c, 0), 0), 30, 'the chart counts the same jobs')
    assert.ok(!first.html.includes(SECRET_PAYLOAD) && !first.html.includes(SECRET_KEY_PREFIX), 'no payload or key')

    const ids = (html: string) => [...html.matchAll(/<code title="([0-9a-f-]{36})">/g)].map((m) => m[1])
    const seen = [ids(first.html)]
    let current = first.html
    for (let i = 0; i < 2; i++) {
      current = (await page(hrefOf(current, 'next')!)).html
      seen.push(ids(current))
    }
    assert.deepEqual(seen.map((p) => p.length), [10, 10, 10])
    assert.equal(hrefOf(current, 'next'), null, 'the last page has no Next')
    assert.deepEqual(seen.flat(), api.jobs.map((job: { id: string }) => job.id), 'the pages are the history, newest first')
    const back = (await page(hrefOf(current, 'prev')!)).html
    assert.deepEqual(ids(back), seen[1])
    assert.deepEqual(ids((await page(hrefOf(back, 'prev')!)).html), seen[0])
    for (const size of [25, 50, 100]) {
      assert.equal(ids((await page(`/dashboard/apps/${SLUG}/jobs?from=${from}&to=${to}&size=${size}`)).html).length, Math.min(size, 30))
    }
    const failed = await page(`/dashboard/apps/${SLUG}/jobs?from=${from}&to=${to}&state=dead_lettered`)
    assert.equal(statOf(failed.html, 'created'), 30, 'state narrows the history, not the totals')
    assert.ok(ids(failed.html).length > 0 && /BAD_THING/.test(failed.html))
  })

  test('the Agent Feed shows the signals, the failure alert and failure events', async () => {
    await seedJobs(h.t.db, SLUG, [{ queue: 'work', state: 'dead_lettered', createdAt: new Date(h.clock.now().getTime() - 20 * 60_000), attempts: 3, error: { code: 'UPSTREAM_DOWN', message: 'The upstream is down' } }])
    const api = (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/signals`)).body
    const { html } = await page(`/dashboard/apps/${SLUG}/feed`)
    for (const name of ['jobs.created', 'jobs.retried', 'jobs.succeeded', 'jobs.failed', 'jobs.active']) assert.equal(statOf(html, name), api.signals[name], name)
    assert.equal(api.alerts[0].status, 'firing')
    assert.match(textOf(html), /Alert firing: background-job failures/)
    assert.match(textOf(html), /Job failed on work after 3 attempts UPSTREAM_DOWN The upstream is down/)
    const jobs = await page(`/dashboard/apps/${SLUG}/jobs`)
    assert.match(textOf(jobs.html), /1 background job failed in the last hour/)
  })

  test('integrations: slots and bindings, contracts, and connections with "Reconnect required" prominent, no secret shown', async () => {
    const connectionId = await createTestConnection(h, { userId: owner.userId, kind: 'personal', values: { SHOP_API_KEY: SECRET_VALUE }, label: 'Shop key' })
    assert.equal((await ownerApi(h, owner.token, 'PUT', `/v1/apps/${SLUG}/integrations/orders/binding`, { connectionId })).status, 200)
    let { html } = await page(`/dashboard/apps/${SLUG}/integrations`)
    assert.match(textOf(html), /Slots and bindings .*orders .*Bound/)
    assert.match(textOf(html), /Published integrations you may use .*Orders orders .*shop/)
    assert.ok(html.includes(`href="/connections/${connectionId}"`), 'its manager gets the connection page link')
    await markReconnectRequired(h.t.db, { connection: (await findConnection(h.t.db, connectionId))!, reason: 'the shop answered unauthorized', at: h.clock.now() })
    html = (await page(`/dashboard/apps/${SLUG}/integrations`)).html
    assert.match(textOf(html), /Reconnect required: Shop key .*Reconnect required/)
    assert.match(html, /class="notice bad" role="alert"><strong class="alert-big">Reconnect required/)
    assert.ok(!html.includes(SECRET_VALUE) && !html.includes('/v1/hooks/'), 'no credential, no webhook URL')
    const shop = (await page('/dashboard/apps/shop/integrations')).html
    assert.ok(shop.includes('href="/apps/shop/integration"'), 'the provider links its integration page')
  })

  test('integrations: an account: app slot is unbound and bound again with the forms, as the API does; a forged or foreign form changes nothing', async () => {
    const slots = async () => (await ownerApi(h, owner.token, 'GET', `/v1/apps/${SLUG}/integrations`)).body.slots as Array<{ slot: string; binding: { connectionId: string; state: string } | null }>
    const fresh = await createTestConnection(h, { userId: owner.userId, kind: 'personal', values: { SHOP_API_KEY: 'sk_fresh_dashboard_5e1d' }, label: 'Fresh shop key' })
    const path = `/dashboard/apps/${SLUG}/integrations`
    let html = (await page(path)).html
    assert.match(html, /<form class="inline" method="post" action="\/dashboard\/apps\/ledger\/integrations\/orders\/unbind"/)

    const forged = await b.post(`${AUTH}${path}/orders/unbind`, { csrf: 'forged' })
    assert.equal(forged.status, 403)
    assert.notEqual((await slots())[0]!.binding, null, 'a forged form unbinds nothing')

    const unbound = await submit(`${path}/orders/unbind`, {}, path)
    assert.equal(unbound.status, 303)
    assert.equal(unbound.headers.get('location'), `${path}?done=slot-unbound`)
    assert.equal((await slots())[0]!.binding, null)
    html = (await page(`${path}?done=slot-unbound`)).html
    assert.match(textOf(html), /Unbound\. The app's calls through the slot fail INTEGRATION_NOT_BOUND/)
    // The bind form offers the person's active connections to the slot's integration only (the first one needs reconnecting).
    const options = [...html.matchAll(/<option value="([^"]+)">([^<]*)<\/option>/g)].map((m) => [m[1], m[2]])
    assert.deepEqual(options, [[fresh, 'Fresh shop key (personal)']])

    const bound = await submit(`${path}/orders/bind`, { connection: fresh }, path)
    assert.equal(bound.status, 303)
    assert.equal(bound.headers.get('location'), `${path}?done=slot-bound`)
    assert.deepEqual((await slots())[0]!.binding && [(await slots())[0]!.binding!.connectionId, (await slots())[0]!.binding!.state], [fresh, 'active'])
    assert.match(textOf((await page(`${path}?done=slot-bound`)).html), /Bound\. The app's calls through the slot use that connection/)

    // Another person without Edit on the ledger cannot unbind it through the dashboard.
    const stranger = await signedInBrowser(h, 'other@acme.test')
    const strangerCsrf = field(await (await stranger.fetch(`${AUTH}/dashboard`)).text(), 'csrf')
    const refused = await stranger.post(`${AUTH}${path}/orders/unbind`, { csrf: strangerCsrf })
    assert.equal(refused.status, 404)
    assert.equal((await slots())[0]!.binding?.connectionId, fresh, 'still bound')
  })

  test('the organisation page shows members and invitations to administrators, and invites', async () => {
    const { html } = await page('/dashboard/organisation')
    assert.match(textOf(html), /Members .*owner@acme\.test Administrator .*other@acme\.test Member/)
    const api = (await ownerApi(h, owner.token, 'GET', '/v1/organisation/members')).body
    assert.deepEqual(api.members.map((m: { email: string }) => m.email), ['owner@acme.test', 'other@acme.test'])
    const sent = await submit('/dashboard/organisation/invitations', { email: 'new@acme.test' }, '/dashboard/organisation')
    assert.equal(sent.status, 303)
    assert.ok(await latestDevMailTo(h.t.db, 'new@acme.test'))
    const invitations = (await ownerApi(h, owner.token, 'GET', '/v1/organisation/invitations')).body.invitations
    assert.deepEqual(invitations.map((i: { email: string; invitedBy: string }) => [i.email, i.invitedBy]), [['new@acme.test', 'owner@acme.test']])
    assert.match(textOf((await page('/dashboard/organisation')).html), /Invitations .*new@acme\.test owner@acme\.test/)
    assert.equal((await ownerApi(h, other.token, 'GET', '/v1/organisation/members')).status, 403)
    const member = await signedInBrowser(h, 'other@acme.test')
    const memberPage = await (await member.fetch(`${AUTH}/dashboard/organisation`)).text()
    assert.match(textOf(memberPage), /You are a member of your company/)
    assert.doesNotMatch(memberPage, /owner@acme\.test Administrator/)
  })
})
