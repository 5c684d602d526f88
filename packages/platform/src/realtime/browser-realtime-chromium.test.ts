/**
 * The browser SDK's `service.realtime` in a real browser (Chromium), two people in two
 * separate browsers on one app: each sees only the row changes row-level security lets them
 * read, written by the pages through the data API; broadcast and presence between them; a
 * dropped socket reconnects with backoff and loses no change; signing out closes the
 * channel with AUTH_REQUIRED.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import type { BrowserContext, Page } from 'playwright-core'
import { backend } from '../../test/test-db.ts'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, type BrowserHarness } from '../../test/browser.ts'
import { bundle, manifest } from '../../test/harness.ts'

const TEST = { timeout: 120_000 }
const SLUG = 'board'
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Board</title>
<script src="/_service/sdk.js"></script></head><body><h1>board</h1></body></html>`
const SQL = `
create table notes (
  id serial primary key,
  owner_id uuid not null default auth.uid(),
  list int not null default 1,
  body text not null
);
alter table notes enable row level security;
create policy notes_read on notes for select using (owner_id = auth.uid() or list = 0);
create policy notes_insert on notes for insert with check (owner_id = auth.uid());
`

/**
 * Before the SDK loads: WebSockets the page opens are kept in `__sockets`, and while
 * `__offline` is set they go to a closed port (the platform unreachable).
 */
const SOCKET_PROBE = `(() => {
  const Native = window.WebSocket
  window.__sockets = []
  window.__offline = false
  window.WebSocket = function (url, protocols) {
    const socket = new Native(window.__offline ? 'ws://127.0.0.1:9/' : url, protocols)
    window.__sockets.push(socket)
    return socket
  }
  window.WebSocket.prototype = Native.prototype
})()`

/** Subscribes the page to the notes table and the `board` channel; events land in `window.seen`. */
const SUBSCRIBE = `(async () => {
  window.seen = { changes: [], broadcasts: [], presence: [], statuses: [], gaps: [] }
  window.board = service.realtime.channel('board')
    .on('insert', { table: 'notes' }, (change) => seen.changes.push(change))
    .on('broadcast', { event: 'wave' }, (message) => seen.broadcasts.push(message))
    .on('presence', (event) => seen.presence.push(event))
    .on('gap', (gap) => seen.gaps.push(gap))
  await board.subscribe((status, error) => seen.statuses.push(error ? status + ':' + error.code : status))
  return 'subscribed'
})()`

const insert = (body: string, list: number) => `fetch('/rest/v1/notes', {
  method: 'POST', credentials: 'same-origin',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({ body: ${JSON.stringify(body)}, list: ${list} }),
}).then((res) => res.status)`

async function signedIn(b: BrowserHarness, email: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await b.newContext()
  await context.addInitScript(SOCKET_PROBE)
  const page = await context.newPage()
  await page.goto(`${b.appUrl(SLUG)}/`)
  await page.evaluate(`location.href = service.auth.signInUrl()`)
  await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
  await submitEmail(page, email)
  await approveIn(await b.newContext(), await emailedLink(b, email))
  await page.waitForURL((url) => url.toString() === `${b.appUrl(SLUG)}/`)
  return { context, page }
}

async function bodies(page: Page): Promise<string[]> {
  return page.evaluate('seen.changes.map((change) => change.record.body)') as Promise<string[]>
}

describe(`service.realtime in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness

  before(async () => {
    b = await startBrowserHarness()
    await b.h.platform.realtime.start()
    const owner = await b.h.createOwner('owner@board.test')
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: SLUG, visibility: 'public' } })).status, 201)
    const res = await b.h.request(`/v1/apps/${SLUG}/deployments`, {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest(SLUG), 'public/index.html': PAGE, 'database/migrations/0001_notes.sql': SQL }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test('two people each see only the changes they may read, and broadcast and presence pass between them', TEST, async () => {
    const ann = await signedIn(b, 'ann@board.test')
    const bob = await signedIn(b, 'bob@board.test')
    for (const person of [ann, bob]) assert.equal(await person.page.evaluate(SUBSCRIBE), 'subscribed')

    assert.equal(await ann.page.evaluate(insert('ann private', 1)), 201)
    assert.equal(await bob.page.evaluate(insert('bob for all', 0)), 201)
    await ann.page.waitForFunction('seen.changes.length >= 2')
    await bob.page.waitForFunction('seen.changes.length >= 1')
    assert.deepEqual(await bodies(ann.page), ['ann private', 'bob for all'])
    await bob.page.waitForTimeout(300)
    assert.deepEqual(await bodies(bob.page), ['bob for all'])
    const change = await ann.page.evaluate('seen.changes[0]') as { event: string; table: string; key: { id: number }; record: { owner_id: string } }
    assert.equal(change.event, 'insert')
    assert.equal(change.table, 'notes')
    assert.equal(typeof change.key.id, 'number')

    await ann.page.evaluate(`board.track({ name: 'Ann' })`)
    await bob.page.waitForFunction(`seen.presence.some((event) => event.event === 'join' && event.state.name === 'Ann')`)
    assert.deepEqual(await bob.page.evaluate(`Object.values(board.presenceState()).flat().map((meta) => meta.state.name)`), ['Ann'])
    await ann.page.evaluate(`board.send({ event: 'wave', payload: { from: 'Ann' } })`)
    await bob.page.waitForFunction('seen.broadcasts.length === 1')
    assert.deepEqual(await bob.page.evaluate('seen.broadcasts[0]'), { event: 'wave', payload: { from: 'Ann' } })
    assert.deepEqual(await ann.page.evaluate('seen.broadcasts'), [])
  })

  test('a dropped socket reconnects with backoff and no change written meanwhile is lost', TEST, async () => {
    const ann = await signedIn(b, 'ann@board.test')
    const bob = await signedIn(b, 'bob@board.test')
    assert.equal(await ann.page.evaluate(SUBSCRIBE), 'subscribed')
    // Ann's browser loses the platform for a while.
    await ann.page.evaluate('window.__offline = true; window.__sockets.at(-1).close()')
    await ann.page.waitForFunction(`seen.statuses.includes('RECONNECTING')`)
    for (const body of ['while away 1', 'while away 2', 'while away 3']) assert.equal(await bob.page.evaluate(insert(body, 0)), 201)
    await ann.page.waitForTimeout(1200)
    assert.deepEqual(await bodies(ann.page), [])
    await ann.page.evaluate('window.__offline = false')
    await ann.page.waitForFunction('seen.changes.length >= 3', undefined, { timeout: 20_000 })
    assert.deepEqual(await bodies(ann.page), ['while away 1', 'while away 2', 'while away 3'])
    assert.deepEqual(await ann.page.evaluate('seen.gaps'), [])
    const statuses = await ann.page.evaluate('seen.statuses') as string[]
    assert.equal(statuses[0], 'SUBSCRIBED')
    assert.equal(statuses.at(-1), 'SUBSCRIBED')
    assert.ok((await ann.page.evaluate('window.__sockets.length') as number) >= 3, 'at least one attempt failed while offline')
    // And live again afterwards.
    assert.equal(await bob.page.evaluate(insert('after', 0)), 201)
    await ann.page.waitForFunction('seen.changes.length === 4')
  })

  test('signing out closes the channel with AUTH_REQUIRED (4401), not to be reopened as someone else', TEST, async () => {
    const ann = await signedIn(b, 'ann@board.test')
    assert.equal(await ann.page.evaluate(SUBSCRIBE), 'subscribed')
    await ann.page.evaluate('service.auth.signOut()')
    await b.h.platform.realtime.recheck()
    await ann.page.waitForFunction(`seen.statuses.includes('CHANNEL_ERROR:AUTH_REQUIRED')`)
    assert.equal(await ann.page.evaluate('window.__sockets.at(-1).readyState'), 3)
  })
})
