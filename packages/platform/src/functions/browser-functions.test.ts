/**
 * Functions from a real browser (Chromium): the browser SDK's `functions.stream` reading a
 * Function's bytes, the clear failures of `stream` on a JSON Function and `call` on a
 * streaming one, errors before and after the first byte, a same-origin page POSTing to a
 * Function route with its cookie, and the same POST from another app of the platform (a
 * same-site sibling origin, so the Lax cookie goes along) refused before the Function runs.
 */
import assert from 'node:assert/strict'
import { after, afterEach, before, describe, test } from 'node:test'
import type { Response as PlaywrightResponse } from 'playwright-core'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest } from '../../test/harness.ts'
import { deployPage } from '../../test/sign-in-flow.ts'
import { browserSuite, signInAt, startBrowserHarness, type BrowserHarness } from '../../test/browser.ts'

/** The `service` global the SDK defines in app pages (used only inside `page.evaluate`). */
declare const service: {
  functions: {
    call(name: string, input?: unknown): Promise<unknown>
    stream(name: string, input?: unknown): Promise<ReadableStream<Uint8Array> & AsyncIterable<Uint8Array>>
  }
}

const OWNER = 'owner@acme.test'
const TEST = { timeout: 60_000 }

const PAGE = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Shop</title>
<script src="/_service/sdk.js"></script></head><body><h1>shop page</h1></body></html>`

const FUNCTIONS = `functions:
  - name: whoami
    entrypoint: functions/whoami.ts
    access: public
  - name: story
    entrypoint: functions/story.ts
    access: public
  - name: failsEarly
    entrypoint: functions/fails-early.ts
    access: public
  - name: failsLate
    entrypoint: functions/fails-late.ts
    access: public
  - name: endless
    entrypoint: functions/endless.ts
    access: public
  - name: cancelled
    entrypoint: functions/cancelled.ts
    access: public
  - name: addNote
    entrypoint: functions/add-note.ts
    access: user
    routes:
      - method: POST
        path: /api/notes
`

const FILES = {
  'functions/whoami.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: ({ user }) => ({ user }) })`,
  'functions/story.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ hero: string() }),
      handler({ input }) {
        const words = ['once ', 'upon ', 'a ', 'time, ', input.hero]
        return new ReadableStream({
          async pull(controller) {
            // The hero comes long after the rest, so a busy machine cannot merge every word into one piece.
            await new Promise((resolve) => setTimeout(resolve, words.length === 1 ? 400 : 5))
            const word = words.shift()
            if (word === undefined) controller.close()
            else controller.enqueue(word)
          },
        })
      },
    })`,
  'functions/fails-early.ts': `
    import { defineFunction, errors, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler: () => new ReadableStream({ pull() { throw errors.conflict('NOTHING_YET', 'no story to tell') } }),
    })`,
  'functions/fails-late.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        let sent = false
        return new ReadableStream({
          async pull(controller) {
            if (!sent) { sent = true; controller.enqueue('first'); return }
            // Give the first piece time to reach the browser before the stream breaks.
            await new Promise((resolve) => setTimeout(resolve, 200))
            throw new Error('broke')
          },
        })
      },
    })`,
  'functions/endless.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      handler() {
        return new ReadableStream({
          pull(controller) { controller.enqueue(new Uint8Array(1024)) },
          cancel() { globalThis.cancelledStreams = (globalThis.cancelledStreams ?? 0) + 1 },
        }, { highWaterMark: 0 })
      },
    })`,
  'functions/cancelled.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({ input: object({}), handler: () => globalThis.cancelledStreams ?? 0 })`,
  'functions/add-note.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({
      input: object({ title: string() }),
      async handler({ input, data }) { return await data.table('notes').create({ title: input.title }) },
    })`,
}

const SQL = `
create table notes (id serial primary key, owner_id uuid default auth.uid(), title text not null);
alter table notes enable row level security;
create policy notes_all on notes for all using (owner_id = auth.uid()) with check (owner_id = auth.uid());
`

describe(`Functions in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness

  before(async () => {
    // Under a registrable domain (example.com is one; *.localhost and unknown TLDs are not) the
    // apps are same-site siblings, as in production, so the Lax cookie crosses between them.
    b = await startBrowserHarness({ baseDomain: 'apps.example.com' })
    const owner = await b.h.createOwner(OWNER)
    assert.equal((await b.h.request('/v1/apps', { token: owner.token, json: { slug: 'shop', visibility: 'private' } })).status, 201)
    const res = await b.h.request('/v1/apps/shop/deployments', {
      token: owner.token,
      json: bundle({ 'service.yaml': manifest('shop', FUNCTIONS, 'private'), 'public/index.html': PAGE, 'database/migrations/0001_notes.sql': SQL, ...FILES }),
    })
    assert.equal(res.status, 201, await res.text())
    await deployPage(b.h, owner.token, 'evil', 'public', '<!doctype html><title>evil</title><h1>another app</h1>')
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test('functions.stream reads a streaming Function\'s bytes as they come; call and stream refuse the other kind clearly', TEST, async () => {
    const context = await b.newContext()
    const page = await signInAt(b, context, `${b.appUrl('shop')}/`, OWNER)
    // Plain JavaScript source: the test runner's transform would add helpers the page does not have.
    const outcome = await page.evaluate(`(async () => {
      const errorOf = (promise) => promise.then(() => null, (error) => ({ name: error.name, code: error.code }))
      const stream = await service.functions.stream('story', { hero: 'Ada' })
      const decoder = new TextDecoder()
      const chunks = []
      for await (const chunk of stream) chunks.push(decoder.decode(chunk, { stream: true }))
      const late = await service.functions.stream('failsLate', {})
      const reader = late.getReader()
      const first = decoder.decode((await reader.read()).value)
      const broke = await errorOf(reader.read())
      return {
        text: chunks.join(''),
        pieces: chunks.length,
        callOnStream: await errorOf(service.functions.call('story', { hero: 'Ada' })),
        streamOnJson: await errorOf(service.functions.stream('whoami', {})),
        failsEarly: await errorOf(service.functions.stream('failsEarly', {})),
        invalidInput: await errorOf(service.functions.stream('story', {})),
        late: { first, broke },
      }
    })()`) as any
    assert.equal(outcome.text, 'once upon a time, Ada')
    assert.ok(outcome.pieces > 1, `the words arrive as separate pieces (${outcome.pieces})`)
    assert.deepEqual(outcome.callOnStream, { name: 'ServiceError', code: 'FUNCTION_RESULT_IS_STREAM' })
    assert.deepEqual(outcome.streamOnJson, { name: 'ServiceError', code: 'FUNCTION_RESULT_NOT_STREAM' })
    assert.deepEqual(outcome.failsEarly, { name: 'ServiceError', code: 'NOTHING_YET' })
    assert.deepEqual(outcome.invalidInput, { name: 'ServiceError', code: 'INPUT_INVALID' })
    assert.deepEqual(outcome.late, { first: 'first', broke: { name: 'ServiceError', code: 'STREAM_INTERRUPTED' } })
  })

  test('where the browser lacks async iteration of streams, leaving a for await loop early cancels the Function\'s stream', TEST, async () => {
    const context = await b.newContext()
    const page = await signInAt(b, context, `${b.appUrl('shop')}/`, OWNER)
    const cancelled = await page.evaluate(`(async () => {
      delete ReadableStream.prototype[Symbol.asyncIterator] // as in Safari: the SDK's own iterator is used
      const stream = await service.functions.stream('endless', {})
      if (!Object.prototype.hasOwnProperty.call(stream, Symbol.asyncIterator)) return 'the SDK did not add its iterator'
      for await (const chunk of stream) break
      for (let attempt = 0; attempt < 100; attempt += 1) {
        const count = await service.functions.call('cancelled', {})
        if (count > 0) return count
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      return 0
    })()`)
    assert.equal(cancelled, 1, 'the Function saw its stream cancelled')
  })

  test('the app\'s page POSTs to a Function route with its cookie; another app\'s page cannot, though the browser sends the cookie', TEST, async () => {
    const context = await b.newContext()
    const page = await signInAt(b, context, `${b.appUrl('shop')}/`, OWNER)
    const own = await page.evaluate(async () => {
      const res = await fetch('/api/notes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: 'from the page' }) })
      return { status: res.status, body: await res.json() }
    })
    assert.equal(own.status, 200, JSON.stringify(own.body))
    assert.equal(own.body.title, 'from the page')

    const attacker = await context.newPage()
    await attacker.goto(`${b.appUrl('evil')}/`)
    const target = `${b.appUrl('shop')}/api/notes`
    // The app is private: without the cookie admission would answer 401 (AUTH_REQUIRED). A 403
    // shows the browser sent the session cookie and the route's same-origin check refused it.
    const refused = async (waiting: Promise<PlaywrightResponse>) => {
      const response = await waiting
      assert.deepEqual({ method: response.request().method(), status: response.status() }, { method: 'POST', status: 403 })
    }
    const attacked = () => attacker.waitForResponse((response) => response.url() === target)
    let waiting = attacked()
    await attacker.evaluate(`(async () => {
      // A no-cors POST with a JSON-looking text body, as a cross-site request forgery sends it.
      await fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ title: 'csrf' }) })
    })()`)
    await refused(waiting)
    waiting = attacked()
    await attacker.evaluate(`(() => {
      const form = document.createElement('form')
      form.method = 'POST'
      form.action = ${JSON.stringify(target)}
      form.enctype = 'text/plain'
      const field = document.createElement('input')
      field.name = '{"title":"csrf","x":"'
      field.value = '"}'
      form.append(field)
      document.body.append(form)
      form.submit()
    })()`)
    await refused(waiting)
    const rows = await b.h.t.db.query(`select title from app_shop.notes order by id`)
    assert.deepEqual(rows.map((row: any) => row.title), ['from the page'])
  })
})
