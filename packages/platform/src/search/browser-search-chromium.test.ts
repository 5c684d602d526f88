/**
 * The browser SDK's `service.data.search` in a real browser (Chromium): under the person's
 * own access, a row only its owner may read is a hit for that person and never for a
 * signed-out browser; evidence as from a Function; the search's errors arrive as
 * ServiceError with their codes; a cross-origin request without the SDK header is refused.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import type { Page } from 'playwright-core'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, type BrowserHarness } from '../../test/browser.ts'
import { bundle, manifest } from '../../test/harness.ts'

const TEST = { timeout: 90_000 }
const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Finder</title>
<script src="/_service/sdk.js"></script></head><body><h1>finder</h1></body></html>`

const SQL = `create table notes (
  id integer primary key,
  title text not null,
  owner_email text,
  embedding real[]
);
alter table notes enable row level security;
create policy notes_read on notes for select
  using (owner_email is null or owner_email = current_setting('request.jwt.claims', true)::jsonb ->> 'email');
insert into notes values
  (1, 'green tea', null, '{1,0,0}'),
  (2, 'black tea', null, '{0.8,0.2,0}'),
  (3, 'ann''s private tea', 'ann@finder.test', '{1,0.1,0}'),
  (4, 'coffee', null, '{0,1,0}');
`

const SEARCHES = `data:
  search:
    - name: notes
      table: notes
      select: [id, title]
      fullText:
        language: english
        columns: [title]
      vector:
        column: embedding
        dimensions: 3
        model: tiny
`

const outcome = (expression: string) => `(async () => {
  try { return { value: await ${expression} } } catch (error) { return { error: { isServiceError: error instanceof service.ServiceError, code: error.code } } }
})()`

async function signedIn(b: BrowserHarness, email: string): Promise<Page> {
  const page = await (await b.newContext()).newPage()
  await page.goto(`${b.appUrl('finder')}/`)
  await page.evaluate(`location.href = service.auth.signInUrl()`)
  await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
  await submitEmail(page, email)
  await approveIn(await b.newContext(), await emailedLink(b, email))
  await page.waitForURL((url) => url.toString() === `${b.appUrl('finder')}/`)
  return page
}

describe(`service.data.search in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness

  before(async () => {
    b = await startBrowserHarness()
    const owner = await b.h.createOwner('owner@finder.test')
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: 'finder', visibility: 'public' } })).status, 201)
    const res = await b.h.request('/v1/apps/finder/deployments', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('finder', SEARCHES), 'public/index.html': PAGE, 'database/migrations/0001_notes.sql': SQL }),
    })
    assert.equal(res.status, 201, await res.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test('a signed-in person finds their own row; a signed-out browser never does', TEST, async () => {
    const ann = await signedIn(b, 'ann@finder.test')
    const mine = await ann.evaluate(outcome(`service.data.search('notes', { mode: 'hybrid', query: 'tea', vector: [1, 0.1, 0], model: 'tiny' })`)) as any
    assert.deepEqual(mine.value.hits.map((hit: any) => hit.record.id).sort(), [1, 2, 3, 4], JSON.stringify(mine))
    const closest = await ann.evaluate(outcome(`service.data.search('notes', { mode: 'vector', vector: [1, 0.1, 0], model: 'tiny' })`)) as any
    assert.equal(closest.value.hits[0].record.id, 3, JSON.stringify(closest))
    assert.deepEqual(Object.keys(mine.value.hits[0]).sort(),
      ['fullTextRank', 'fullTextScore', 'fusionScore', 'record', 'vectorDistance', 'vectorRank', 'vectorSimilarity'])
    assert.equal(closest.value.hits[0].vectorRank, 1)
    assert.ok(Math.abs(closest.value.hits[0].vectorDistance) < 1e-6)

    const anonymous = await (await b.newContext()).newPage()
    await anonymous.goto(`${b.appUrl('finder')}/`)
    const theirs = await anonymous.evaluate(outcome(`service.data.search('notes', { mode: 'vector', vector: [1, 0.1, 0], model: 'tiny' })`)) as any
    assert.deepEqual(theirs.value.hits.map((hit: any) => hit.record.id), [1, 2, 4])
    assert.equal(theirs.value.hits[0].vectorRank, 1)
  })

  test('errors arrive as ServiceError with the search codes', TEST, async () => {
    const page = await (await b.newContext()).newPage()
    await page.goto(`${b.appUrl('finder')}/`)
    for (const [expression, code] of [
      [`service.data.search('nothing', { mode: 'fullText', query: 'tea' })`, 'SEARCH_NOT_DECLARED'],
      [`service.data.search('notes', { mode: 'fullText', query: '' })`, 'SEARCH_INPUT_INVALID'],
      [`service.data.search('notes', { mode: 'vector', vector: [1, 0], model: 'tiny' })`, 'SEARCH_DIMENSION_MISMATCH'],
      [`service.data.search('notes', { mode: 'vector', vector: [1, 0, 0], model: 'huge' })`, 'SEARCH_MODEL_MISMATCH'],
      [`service.data.search('notes')`, 'SEARCH_INPUT_INVALID'],
    ] as const) {
      assert.deepEqual(await page.evaluate(outcome(expression)), { error: { isServiceError: true, code } }, expression)
    }
  })

  test('a request without the SDK header, or from another origin, is refused', TEST, async () => {
    const body = JSON.stringify({ mode: 'fullText', query: 'tea' })
    const bare = await b.h.request('/_service/search/notes', { host: 'finder', method: 'POST', body, headers: { 'content-type': 'application/json' } })
    assert.equal(bare.status, 403)
    const foreign = await b.h.request('/_service/search/notes', {
      host: 'finder', method: 'POST', body, headers: { 'content-type': 'application/json', 'x-service-sdk': '1', origin: 'http://evil.test' },
    })
    assert.equal(foreign.status, 403)
  })
})
