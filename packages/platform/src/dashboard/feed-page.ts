/**
 * The Agent Feed (spec 6.3) as a feed: the signals `jobs.created`, `jobs.retried`,
 * `jobs.succeeded`, `jobs.failed` and `jobs.active`, the built-in background-job failure
 * alert, and the job failure events, newest first, over the same inclusive range selectors as
 * the jobs section. Read through `jobSignals`, as `GET …{ns}/signals` answers agents.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { appJobScope, jobSignals } from '../jobs/index.ts'
import { appOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { card, pageHead, stat, time } from './format.ts'
import { sectionPath, shell } from './layout.ts'
import { devOf, namespacePicker } from './namespace-picker.ts'
import { rangeInputs, readTimeRange } from './time-range.ts'

export function registerFeed(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard/apps/:app/feed', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const query = (name: string) => c.req.query(name)
    const dev = devOf(query('dev'))
    const range = readTimeRange(query)
    const scope = await appJobScope(deps.db, { user: person, appId: app.id, devName: dev })
    const feed = await jobSignals(deps.db, deps.clock, scope, { from: range.from, to: range.to })
    const base = sectionPath(app.slug, 'feed')
    const jobsLink = (jobId: string) => escapeHtml(`${sectionPath(app.slug, 'jobs')}?${new URLSearchParams({
      ...(dev === undefined ? {} : { dev }), from: feed.from, to: feed.to, state: 'dead_lettered',
    }).toString()}#history`)

    const items = [
      ...feed.alerts.map((alert) => `<li><span class="dot ${alert.status === 'firing' ? 'bad' : 'ok'}" aria-hidden="true"></span>
        <div><strong>${alert.status === 'firing' ? 'Alert firing' : 'Alert clear'}: background-job failures</strong>
          <div class="${alert.status === 'firing' ? 'alert-big' : 'muted'}">${escapeHtml(alert.message)}</div>
          <div class="muted small-text"><code>${escapeHtml(alert.name)}</code>, window ${escapeHtml(alert.window)}, ${alert.failed} failed</div></div>
        <span class="when">now</span></li>`),
      ...feed.events.map((event) => `<li><span class="dot bad" aria-hidden="true"></span>
        <div><strong>Job failed</strong> on <code>${escapeHtml(event.job.queue)}</code> after ${event.job.attempts} attempt${event.job.attempts === 1 ? '' : 's'}
          ${event.job.lastError === null ? '' : `<div><code>${escapeHtml(event.job.lastError.code)}</code> ${escapeHtml(event.job.lastError.message)}</div>`}
          <div class="muted small-text"><code>${escapeHtml(event.type)}</code> · job <a href="${jobsLink(event.job.id)}"><code>${escapeHtml(event.job.id.slice(0, 8))}</code></a></div></div>
        <span class="when">${time(event.at)}</span></li>`),
    ]
    const signals = Object.entries(feed.signals).map(([name, value]) =>
      stat({ id: name, label: name, mono: true, value, hint: name === 'jobs.active' ? 'pending now' : 'created in the range' })).join('')
    return shell(c, {
      title: 'Agent Feed', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'feed' },
      body: `${pageHead({
        title: 'Agent Feed',
        lede: 'What agents watching this app read: job signals, failure events and the built-in failure alert.',
        actions: await namespacePicker(deps, { person, appId: app.id, action: base, dev }),
      })}
      ${card({
        title: 'Range', id: 'range',
        body: `<form class="row" method="get" action="${escapeHtml(base)}" data-local-range aria-label="Feed range">${dev === undefined ? '' : hidden('dev', dev)}
          ${rangeInputs({ labels: ['Created from', 'Created to'], from: feed.from, to: feed.to })}
          <div class="actions"><button>Apply</button></div></form>
          <p class="zone" data-zone>${range.utc ? 'Times in UTC (the page script did not run)' : 'Times in UTC'}</p>`,
      })}
      <div class="grid" aria-label="Signals">${signals}</div>
      ${card({ title: 'Feed', id: 'feed', body: `<ol class="feed">${items.join('')}</ol>${feed.events.length === 0 ? '<p class="empty">No job failed in this range.</p>' : ''}` })}`,
    })
  })
}
