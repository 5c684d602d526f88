/**
 * The example app (examples/tasks) as a person uses it in a real browser: its page adds a
 * task with a reminder time typed into the form, the task stores that instant and the
 * reminder is queued; a reminder further ahead than a job can wait is refused.
 */
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { after, afterEach, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { browserSuite, signInAt, startBrowserHarness, type BrowserHarness } from '../../test/browser.ts'
import { collectBundleDir } from './bundle-dir.ts'

const OWNER = 'owner@acme.test'
const TASKS_DIR = fileURLToPath(new URL('../../../../examples/tasks', import.meta.url))
/** Bound of a whole test: a sign-in takes a few seconds of real polling, a first Function call starts Deno. */
const TEST = { timeout: 60_000 }

describe(`examples/tasks in a real browser (Chromium, ${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  let token: string

  before(async () => {
    b = await startBrowserHarness()
    token = (await b.h.createOwner(OWNER)).token
    assert.equal((await b.h.request('/v1/apps', { token, json: { slug: 'tasks', visibility: 'private' } })).status, 201)
    const deployed = await b.h.request('/v1/apps/tasks/deployments', { token, json: collectBundleDir(TASKS_DIR) })
    assert.equal(deployed.status, 201, await deployed.text())
  })
  afterEach(() => b?.closeContexts())
  after(() => b?.close())

  test('the page adds a task with a reminder time: the task keeps the instant and its reminder job is queued', TEST, async () => {
    const page = await signInAt(b, await b.newContext(), `${b.appUrl('tasks')}/`, OWNER)
    await page.getByText(`Signed in as ${OWNER}`).waitFor()
    // A whole minute a day ahead, as the person would type it (the browser's local time), and the instant it means.
    const when = await page.evaluate<{ local: string; iso: string }>(`(() => {
      const at = new Date(Date.now() + 24 * 60 * 60 * 1000)
      at.setSeconds(0, 0)
      const local = new Date(at.getTime() - at.getTimezoneOffset() * 60000).toISOString().slice(0, 16)
      return { local, iso: at.toISOString() }
    })()`)
    await page.getByLabel('Task').fill('Water the plants')
    await page.getByLabel('Remind me').fill(when.local)
    await page.getByRole('button', { name: 'Add' }).click()
    await page.getByRole('listitem').filter({ hasText: 'Water the plants' }).getByText('reminder').waitFor()

    const tasks = await b.h.t.db.query<{ id: string; remind_at: Date }>('select id, remind_at from app_tasks.tasks')
    assert.equal(tasks.length, 1)
    assert.equal(tasks[0]!.remind_at.toISOString(), when.iso, 'the typed local time, as an instant')
    const jobs = await b.h.t.db.query<{ queue: string; state: string; task_id: string }>(
      `select queue, state, payload ->> 'taskId' as task_id from platform.jobs`)
    assert.deepEqual([...jobs], [{ queue: 'reminders', state: 'queued', task_id: tasks[0]!.id }])
  })

  test('a reminder more than seven days ahead is refused before the task is written', TEST, async () => {
    const page = await signInAt(b, await b.newContext(), `${b.appUrl('tasks')}/`, OWNER)
    await page.getByText(`Signed in as ${OWNER}`).waitFor()
    assert.ok(await page.getByLabel('Remind me').getAttribute('max'), 'the form bounds the reminder time')
    const before = await b.h.t.db.query<{ count: number }>('select count(*)::int as count from app_tasks.tasks')
    const code = await page.evaluate<string>(`service.functions.call('createTask', {
      title: 'Far away', remindAt: new Date(Date.now() + 8 * 24 * 60 * 60 * 1000).toISOString(),
    }).then(() => 'created', (error) => error.code)`)
    assert.equal(code, 'REMIND_AT_TOO_FAR')
    const after = await b.h.t.db.query<{ count: number }>('select count(*)::int as count from app_tasks.tasks')
    assert.equal(after[0]!.count, before[0]!.count)
  })
})
