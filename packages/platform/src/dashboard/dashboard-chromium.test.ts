/**
 * The owner dashboard in a real browser (Chromium, time zone Europe/Berlin): a person signs
 * in, opens an app, creates an app token and reveals it once, sets a secret, filters the
 * background jobs by a Created from / Created to range typed in local time across the end of
 * summer time (25 October 2026, 03:00 CEST -> 02:00 CET) and finds the totals the jobs API
 * gives for the instants the page sent, pages through the history, and revokes the token.
 * Each section is saved as a screenshot under packages/platform/.artifacts/dashboard/ (at
 * 1280x800, on a phone, and in dark mode), which is ignored by git.
 */
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { backend } from '../../test/test-db.ts'
import { approveIn, browserSuite, emailedLink, startBrowserHarness, submitEmail, type BrowserHarness } from '../../test/browser.ts'
import { ownerApi } from '../../test/harness.ts'
import { queuesBundle } from '../jobs/test-app.ts'
import { SECRET_PAYLOAD, seedJobs, seedLogs } from './test-fixtures.ts'

const TEST = { timeout: 240_000 }
const ARTIFACTS = new URL('../../.artifacts/dashboard/', import.meta.url).pathname
const SLUG = 'ledger'
const SECRET_VALUE = 'sk_live_typed-in-the-browser-5678'
/** Berlin: 01:30 is still CEST (+02:00), 03:30 is CET (+01:00) again; the hour 02:00-03:00 happens twice. */
const LOCAL_FROM = '2026-10-25T01:30'
const LOCAL_TO = '2026-10-25T03:30'
const FROM_INSTANT = '2026-10-24T23:30:00.000Z'
const TO_INSTANT = '2026-10-25T02:30:59.999Z'

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })
}

async function openSection(page: Page, name: string): Promise<void> {
  await page.getByRole('navigation', { name: 'App sections' }).getByRole('link', { name, exact: true }).click()
  await page.getByRole('heading', { level: 1, name }).waitFor()
}

async function historyIds(page: Page): Promise<string[]> {
  return page.locator('#history tbody code[title]').evaluateAll((codes) => codes.map((code) => code.getAttribute('title') ?? ''))
}

async function statValue(page: Page, name: string): Promise<number> {
  return Number(await page.locator(`[data-stat="${name}"] .value`).textContent())
}

describe(`the owner dashboard in Chromium (${backend})`, browserSuite(), () => {
  let b: BrowserHarness
  let token: string

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    b = await startBrowserHarness()
    token = (await b.h.createOwner('owner@acme.test')).token
    assert.equal((await b.h.request('/v1/apps', { token, json: { slug: SLUG, name: 'Ledger', visibility: 'private' } })).status, 201)
    assert.equal((await b.h.request(`/v1/apps/${SLUG}/deployments`, { token, json: queuesBundle(SLUG) })).status, 201)
    assert.equal((await b.h.request(`/v1/apps/${SLUG}/dev/alice/deployments`, { token, json: queuesBundle(SLUG) })).status, 201)
    // A job every 15 minutes from 20:00 UTC on 24 October to 06:00 UTC on 25 October, across Berlin's change of time.
    const states = ['succeeded', 'succeeded', 'dead_lettered', 'succeeded', 'retry_wait', 'queued'] as const
    await seedJobs(b.h.t.db, SLUG, Array.from({ length: 41 }, (_, i) => {
      const state = states[i % states.length]!
      return {
        queue: i % 4 === 0 ? 'wide' : 'work', state, createdAt: new Date(Date.UTC(2026, 9, 24, 20, 0) + i * 15 * 60_000),
        attempts: state === 'retry_wait' || state === 'dead_lettered' ? 2 : 1,
        ...(state === 'dead_lettered' ? { error: { code: 'BAD_THING', message: 'The payload names a bad thing' } } : {}),
      }
    }))
    await seedJobs(b.h.t.db, SLUG, [{ queue: 'work', state: 'dead_lettered', createdAt: new Date(b.h.clock.now().getTime() - 30 * 60_000), attempts: 3, error: { code: 'UPSTREAM_DOWN', message: 'The upstream is down' } }])
    await seedLogs(b.h.t.db, SLUG, Array.from({ length: 12 }, (_, i) => ({
      level: (['info', 'info', 'warn', 'error'] as const)[i % 4]!, fn: i % 2 === 0 ? 'produce' : 'consume', requestId: `req-${i}`,
      message: i % 4 === 3 ? `charge failed for order ${1000 + i}` : `handled order ${1000 + i}`, at: new Date(b.h.clock.now().getTime() - (12 - i) * 60_000),
    })))
  })

  after(async () => {
    await b?.close()
  })

  test('sign in, open an app, reveal a new token once, set a secret, filter jobs across a DST change, page the history, revoke the token', TEST, async () => {
    const context = await b.newContext({ timezoneId: 'Europe/Berlin', viewport: { width: 1280, height: 800 }, locale: 'en-GB' })
    const page = await context.newPage()
    const errors: string[] = []
    // Script errors and CSP refusals; a 404 (favicon) or 410 (a used reveal link) is not one.
    page.on('console', (message) => { if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) errors.push(message.text()) })
    page.on('pageerror', (error) => errors.push(error.message))

    // {base_url}/ leads to the dashboard on the auth host, through sign-in.
    await page.goto(`${b.baseUrl}/`)
    await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/sign-in')
    await submitEmail(page, 'owner@acme.test')
    await approveIn(await b.newContext(), await emailedLink(b, 'owner@acme.test'))
    await page.waitForURL((url) => url.origin === b.authUrl && url.pathname === '/dashboard')
    await page.getByRole('heading', { level: 1, name: 'Apps' }).waitFor()
    await shot(page, '01-apps')

    // Keyboard: the first Tab reaches "Skip to content", which moves focus to the content.
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content')
    await page.keyboard.press('Enter')
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'content')

    await page.getByRole('link', { name: /Ledger/ }).click()
    await page.getByRole('heading', { level: 1, name: 'Ledger' }).waitFor()
    assert.match(await page.locator('#releases').innerText(), /v1\s+Active\s+2\.6\.0/)
    assert.match(await page.locator('#namespaces').innerText(), /alice/)
    await shot(page, '02-overview')

    // Access: create a token; the browser lands on its one-time reveal page on the auth host.
    await openSection(page, 'Access')
    await page.getByLabel('Name', { exact: true }).fill('nightly export')
    await page.getByRole('button', { name: 'Create token' }).click()
    await page.waitForURL((url) => url.pathname === '/app-tokens/reveal')
    await page.getByRole('button', { name: 'Show the token' }).click()
    const value = await page.locator('#token').inputValue()
    assert.match(value, /^svc_app_/)
    assert.equal((await b.h.request('/rest/v1/runs', { host: SLUG, token: value })).status, 200, 'the revealed token works')
    await page.goto(`${b.authUrl}/dashboard/apps/${SLUG}/access`)
    assert.match(await page.locator('#tokens').innerText(), /nightly export/)
    assert.ok(!(await page.content()).includes(value), 'the Access screen never shows the value')
    await shot(page, '03-access')

    // Secrets: the value goes in through a password field and never comes back.
    await openSection(page, 'Secrets')
    await page.getByLabel('Name', { exact: true }).fill('STRIPE_KEY')
    await page.getByLabel('Value', { exact: true }).fill(SECRET_VALUE)
    await page.getByRole('button', { name: 'Save secret' }).click()
    await page.getByText('Secret saved.').waitFor()
    assert.ok(!page.url().includes('sk_live') && !(await page.content()).includes(SECRET_VALUE))
    assert.deepEqual((await ownerApi(b.h, token, 'GET', `/v1/apps/${SLUG}/secrets`)).body.secrets.map((s: { name: string; set: boolean }) => [s.name, s.set]), [['STRIPE_KEY', true]])
    await shot(page, '04-secrets')

    await openSection(page, 'Logs')
    await page.getByLabel('Level').selectOption('warn')
    await page.getByRole('button', { name: 'Filter' }).click()
    await page.waitForURL((url) => url.searchParams.get('level') === 'warn')
    assert.equal(await page.locator('#lines tbody tr').count(), 6)
    await shot(page, '05-logs')

    // Background jobs: a local range across the change of time, sent as the instants it means.
    await openSection(page, 'Background jobs')
    await page.getByLabel('Created from').fill(LOCAL_FROM)
    await page.getByLabel('Created to').fill(LOCAL_TO)
    await page.getByLabel('Page size').selectOption('10')
    await page.getByRole('button', { name: 'Apply' }).click()
    await page.waitForURL((url) => url.searchParams.get('size') === '10')
    const sent = new URL(page.url()).searchParams
    assert.equal(sent.get('from'), FROM_INSTANT, '01:30 in Berlin on 25 October is 23:30 UTC the day before (summer time)')
    assert.equal(sent.get('to'), TO_INSTANT, '03:30 in Berlin is 02:30 UTC (winter time), inclusive of the minute')
    const api = (await ownerApi(b.h, token, 'GET', `/v1/apps/${SLUG}/jobs?from=${FROM_INSTANT}&to=${TO_INSTANT}&limit=100`)).body
    const sum = (key: string) => api.totals.reduce((n: number, t: Record<string, number>) => n + t[key]!, 0)
    assert.equal(sum('created'), 13, 'three hours of jobs every 15 minutes, both ends included (a fixed offset would find 9)')
    for (const name of ['created', 'retried', 'succeeded', 'failed']) assert.equal(await statValue(page, name), sum(name), name)
    assert.equal(await page.getByLabel('Created from').inputValue(), LOCAL_FROM, 'the range shows back in local time')
    assert.equal(await page.getByLabel('Created to').inputValue(), LOCAL_TO)
    assert.match((await page.locator('[data-zone]').textContent()) ?? '', /Europe\/Berlin/)
    assert.ok(await page.locator('#chart svg rect').count() > 0)
    assert.ok(!(await page.content()).includes(SECRET_PAYLOAD))
    await shot(page, '06-jobs')

    // History: 10 + 3 jobs, newest first, Next and Previous.
    const first = await historyIds(page)
    assert.equal(first.length, 10)
    await page.getByRole('link', { name: /Next/ }).click()
    await page.waitForURL((url) => url.searchParams.has('cursor'))
    const second = await historyIds(page)
    assert.equal(second.length, 3)
    assert.deepEqual([...first, ...second], api.jobs.map((job: { id: string }) => job.id))
    assert.equal(await page.getByRole('link', { name: /Next/ }).count(), 0, 'no Next on the last page')
    await page.getByRole('link', { name: /Previous/ }).click()
    await page.waitForURL((url) => !url.searchParams.has('cursor'))
    assert.deepEqual(await historyIds(page), first)

    await openSection(page, 'Agent Feed')
    await page.getByText('Alert firing: background-job failures').waitFor()
    await shot(page, '07-feed')
    await openSection(page, 'Integrations')
    await shot(page, '08-integrations')
    await page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Organisation' }).click()
    await page.getByRole('heading', { level: 2, name: 'Members' }).waitFor()
    await shot(page, '09-organisation')

    // On a phone, and in dark mode.
    await page.goto(`${b.authUrl}/dashboard/apps/${SLUG}/jobs?from=${FROM_INSTANT}&to=${TO_INSTANT}&size=10`)
    await page.setViewportSize({ width: 390, height: 844 })
    await shot(page, '10-jobs-phone')
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1), 'no sideways scrolling of the page on a phone')
    await page.emulateMedia({ colorScheme: 'dark' })
    await shot(page, '11-jobs-phone-dark')
    await page.setViewportSize({ width: 1280, height: 800 })
    await page.goto(`${b.authUrl}/dashboard/apps/${SLUG}`)
    await shot(page, '12-overview-dark')
    await page.emulateMedia({ colorScheme: 'light' })

    // Revoke the token (after the confirmation the page asks for); the runtime refuses it at once.
    await page.goto(`${b.authUrl}/dashboard/apps/${SLUG}/access`)
    page.once('dialog', (dialog) => { void dialog.accept() })
    await page.getByRole('button', { name: 'Revoke nightly export' }).click()
    await page.getByText('Token revoked.').waitFor()
    assert.match(await page.locator('#tokens').innerText(), /No active tokens/)
    assert.equal((await b.h.request('/rest/v1/runs', { host: SLUG, token: value })).status, 401)
    assert.deepEqual((await ownerApi(b.h, token, 'GET', `/v1/apps/${SLUG}/access-tokens`)).body.tokens, [])
    assert.deepEqual(errors, [], 'no script or CSP errors in the console')
  })
})
