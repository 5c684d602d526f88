/**
 * The Background jobs section (spec 6.3): retained created, retried, succeeded and failed
 * totals, current depth, per-queue policy and rollups, jobs over time by state, and the
 * history's safe execution metadata (never a payload, idempotency key or enqueuing user),
 * newest first. Inclusive Created from / Created to selectors in the browser's local time
 * apply to the totals, rollups, chart and history together (one range, passed to each);
 * history pages with Previous/Next in pages of 10, 25, 50 or 100. Every read is the jobs
 * API's own function (`appJobScope`, `jobHistory`, `jobTimeline`, `queuePolicies`,
 * `jobSignals`): the owner and Edit holders.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { appJobScope, jobHistory, jobSignals, jobTimeline, queuePolicies, type JobView } from '../jobs/index.ts'
import { appOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, card, notice, pageHead, stat, table, time, type Tone } from './format.ts'
import { sectionPath, shell } from './layout.ts'
import { devOf, namespacePicker } from './namespace-picker.ts'
import { jobsChart } from './jobs-chart.ts'
import { pager, pagerQueries, rangeInputs, readPaging, readTimeRange } from './time-range.ts'

export const PAGE_SIZE_CHOICES = [10, 25, 50, 100] as const
const DEFAULT_PAGE_SIZE = 25

const STATE_TEXT: Record<JobView['state'], { text: string; tone: Tone }> = {
  queued: { text: 'Queued', tone: 'muted' },
  running: { text: 'Running', tone: 'info' },
  retry_wait: { text: 'Waiting to retry', tone: 'warn' },
  succeeded: { text: 'Succeeded', tone: 'ok' },
  dead_lettered: { text: 'Failed', tone: 'bad' },
}

function pageSizeOf(value: string | undefined): number {
  const size = Number(value)
  return (PAGE_SIZE_CHOICES as readonly number[]).includes(size) ? size : DEFAULT_PAGE_SIZE
}

function seconds(value: number): string {
  if (value % 3600 === 0 && value > 0) return `${value / 3600} h`
  if (value % 60 === 0 && value > 0) return `${value / 60} min`
  return `${value} s`
}

export function registerJobs(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard/apps/:app/jobs', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const query = (name: string) => c.req.query(name)
    const dev = devOf(query('dev'))
    const range = readTimeRange(query)
    const size = pageSizeOf(query('size'))
    const paging = readPaging(query)
    const queue = query('queue') || undefined
    const state = query('state') || undefined

    const scope = await appJobScope(deps.db, { user: person, appId: app.id, devName: dev })
    const span = { from: range.from, to: range.to }
    const [history, timeline, policies, signals] = await Promise.all([
      jobHistory(deps.db, deps.clock, scope, { ...span, limit: String(size), nextCursor: paging.cursor, queue, state }),
      jobTimeline(deps.db, deps.clock, scope, span),
      queuePolicies(deps.db, scope),
      jobSignals(deps.db, deps.clock, scope, span),
    ])
    const sum = (pick: (row: (typeof history.totals)[number]) => number) => history.totals.reduce((n, row) => n + pick(row), 0)

    const base = sectionPath(app.slug, 'jobs')
    const params = new URLSearchParams()
    if (dev !== undefined) params.set('dev', dev)
    params.set('from', history.from)
    params.set('to', history.to)
    params.set('size', String(size))
    if (queue !== undefined) params.set('queue', queue)
    if (state !== undefined) params.set('state', state)

    const queueNames = [...new Set([...policies.map((p) => p.name), ...history.totals.map((t) => t.queue)])].sort()
    const filterForm = `<form class="row" method="get" action="${escapeHtml(base)}" data-local-range aria-label="Jobs filter">
      ${dev === undefined ? '' : hidden('dev', dev)}
      ${rangeInputs({ labels: ['Created from', 'Created to'], from: history.from, to: history.to })}
      <div class="field small"><label for="queue">Queue</label><select id="queue" name="queue"><option value="">All queues</option>${queueNames.map((name) =>
        `<option value="${escapeHtml(name)}"${name === queue ? ' selected' : ''}>${escapeHtml(name)}</option>`).join('')}</select></div>
      <div class="field small"><label for="state">State</label><select id="state" name="state"><option value="">All states</option>${Object.entries(STATE_TEXT).map(([key, value]) =>
        `<option value="${key}"${key === state ? ' selected' : ''}>${escapeHtml(value.text)}</option>`).join('')}</select></div>
      <div class="field small"><label for="size">Page size</label><select id="size" name="size">${PAGE_SIZE_CHOICES.map((choice) =>
        `<option value="${choice}"${choice === size ? ' selected' : ''}>${choice}</option>`).join('')}</select></div>
      <div class="actions"><button>Apply</button><a class="button secondary" href="${escapeHtml(base + (dev === undefined ? '' : `?dev=${encodeURIComponent(dev)}`))}">Last 14 days</a></div>
    </form>
    <p class="zone" data-zone>${range.utc ? 'Times in UTC (the page script did not run)' : 'Times in UTC'}</p>`

    const totals = `<div class="grid" aria-label="Totals">
      ${stat({ id: 'created', label: 'Created', value: sum((t) => t.created), hint: 'in the range' })}
      ${stat({ id: 'retried', label: 'Retried', value: sum((t) => t.retried), hint: 'retry attempts' })}
      ${stat({ id: 'succeeded', label: 'Succeeded', value: sum((t) => t.succeeded) })}
      ${stat({ id: 'failed', label: 'Failed', value: sum((t) => t.failed), hint: 'dead-lettered' })}
      ${stat({ id: 'depth', label: 'Current depth', value: signals.signals['jobs.active'], hint: 'waiting or running now' })}</div>`

    const rollups = card({
      title: 'Per queue', id: 'queues',
      body: `<h3>Totals in the range</h3>${table({
        caption: 'Per-queue totals in the range',
        head: ['Queue', { text: 'Created', num: true }, { text: 'Retried', num: true }, { text: 'Succeeded', num: true }, { text: 'Failed', num: true },
          { text: 'Waiting', num: true }, { text: 'Running', num: true }],
        rows: history.totals.map((t) => [`<code>${escapeHtml(t.queue)}</code>`, String(t.created), String(t.retried), String(t.succeeded), String(t.failed), String(t.waiting), String(t.running)]),
        empty: 'No job was created in this range.',
      })}<h3>Policy</h3>${table({
        caption: 'Per-queue policy of the active release',
        head: ['Queue', 'Function', { text: 'Concurrency', num: true }, { text: 'Attempts', num: true }, 'Retry delay', { text: 'Timeout', num: true }],
        rows: policies.map((p) => [`<code>${escapeHtml(p.name)}</code>`, `<code>${escapeHtml(p.function)}</code>`, String(p.concurrency), String(p.maxAttempts),
          `${escapeHtml(seconds(p.retryDelaySeconds))}${p.retryBackoff ? ' <span class="muted small-text">doubling</span>' : ''}`, escapeHtml(seconds(p.timeoutSeconds))]),
        empty: 'The active release declares no queues.',
      })}`,
    })

    const rows = history.jobs.map((job) => [
      `<code title="${escapeHtml(job.id)}">${escapeHtml(job.id.slice(0, 8))}</code>`,
      `<code>${escapeHtml(job.queue)}</code>`,
      badge(STATE_TEXT[job.state].text, STATE_TEXT[job.state].tone),
      `${job.attempts}/${job.maxAttempts}`,
      time(job.createdAt),
      time(job.finishedAt ?? job.startedAt ?? job.runAt),
      job.lastError === null ? '' : `<code>${escapeHtml(job.lastError.code)}</code> <span class="small-text">${escapeHtml(job.lastError.message)}</span>`,
    ])
    const queries = pagerQueries(params, { paging, nextCursor: history.nextCursor })
    const page = paging.back.length + 1
    const historyCard = card({
      title: 'History', id: 'history',
      body: `${table({
        caption: 'Jobs, newest first',
        head: ['Job', 'Queue', 'State', { text: 'Attempts', num: true }, 'Created', 'Last activity', 'Last error'],
        rows, empty: 'No job matches.',
      })}${pager({ base, queries, label: `Page ${page}, ${history.jobs.length} job${history.jobs.length === 1 ? '' : 's'}, newest first` })}`,
    })

    return shell(c, {
      title: 'Background jobs', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'jobs' },
      body: `${pageHead({
        title: 'Background jobs',
        lede: `Jobs kept for 14 days after they end.${dev === undefined ? '' : ` Development namespace <code>${escapeHtml(dev)}</code>.`}`,
        actions: await namespacePicker(deps, { person, appId: app.id, action: base, dev }),
      })}
      ${signals.alerts.some((alert) => alert.status === 'firing') ? notice('bad', `<strong>${escapeHtml(signals.alerts[0]!.message)}</strong>
        <p><a href="${escapeHtml(sectionPath(app.slug, 'feed'))}">See the Agent Feed</a></p>`) : ''}
      ${card({ title: 'Range', id: 'range', body: filterForm })}${totals}
      ${card({ title: 'Jobs over time', id: 'chart', body: jobsChart(timeline) })}${rollups}${historyCard}`,
    })
  })
}
