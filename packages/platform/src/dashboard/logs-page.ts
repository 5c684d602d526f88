/**
 * Function logs of an app namespace, newest first, a bounded page at a time, with the owner
 * API's filters: level (that level and above), Function, a time range in the browser's local
 * time and a request id. Read through `readAppLogs`, as `GET …{ns}/logs` does (the owner and
 * Edit holders); secret values are redacted before lines are stored.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { readAppLogs } from '../functions/index.ts'
import { appOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { card, pageHead, table, time } from './format.ts'
import { sectionPath, shell } from './layout.ts'
import { devOf, namespacePicker } from './namespace-picker.ts'
import { pager, pagerQueries, rangeInputs, readPaging, readTimeRange } from './time-range.ts'

const LEVELS = ['debug', 'info', 'warn', 'error'] as const
const PAGE_SIZE = 50

function fieldsText(fields: unknown): string {
  if (fields === null || fields === undefined) return ''
  if (typeof fields === 'object' && Object.keys(fields).length === 0) return ''
  const text = JSON.stringify(fields)
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text
}

export function registerLogs(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard/apps/:app/logs', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const query = (name: string) => c.req.query(name)
    const dev = devOf(query('dev'))
    const range = readTimeRange(query)
    const paging = readPaging(query)
    const level = LEVELS.find((l) => l === query('level'))
    const fn = query('function') || undefined
    const requestId = query('requestId')?.trim() || undefined
    const filters = {
      ...(fn === undefined ? {} : { function: fn }),
      ...(level === undefined ? {} : { level }),
      ...(range.from === undefined ? {} : { from: range.from }),
      ...(range.to === undefined ? {} : { to: range.to }),
      ...(requestId === undefined ? {} : { requestId }),
      ...(paging.cursor === undefined ? {} : { cursor: paging.cursor }),
      limit: String(PAGE_SIZE),
    }
    const page = await readAppLogs(deps.db, { user: person, appId: app.id, devName: dev, filters })
    const base = sectionPath(app.slug, 'logs')
    const params = new URLSearchParams()
    if (dev !== undefined) params.set('dev', dev)
    for (const [name, value] of Object.entries(filters)) if (name !== 'cursor' && name !== 'limit') params.set(name, value)

    const form = `<form class="row" method="get" action="${escapeHtml(base)}" data-local-range aria-label="Log filters">
      ${dev === undefined ? '' : hidden('dev', dev)}
      <div class="field small"><label for="level">Level</label><select id="level" name="level"><option value="">All levels</option>${LEVELS.map((l) =>
        `<option value="${l}"${l === level ? ' selected' : ''}>${l} and above</option>`).join('')}</select></div>
      <div class="field"><label for="function">Function</label><input id="function" name="function" maxlength="64" value="${escapeHtml(fn ?? '')}" placeholder="any" autocomplete="off"></div>
      ${rangeInputs({ labels: ['From', 'To'], from: range.from, to: range.to })}
      <div class="field"><label for="request-id">Request id</label><input id="request-id" name="requestId" maxlength="128" value="${escapeHtml(requestId ?? '')}" placeholder="any" autocomplete="off" spellcheck="false"></div>
      <div class="actions"><button>Filter</button><a class="button secondary" href="${escapeHtml(base + (dev === undefined ? '' : `?dev=${encodeURIComponent(dev)}`))}">Clear</a></div>
    </form><p class="zone" data-zone>${range.utc ? 'Times in UTC (the page script did not run)' : 'Times in UTC'}</p>`

    const rows = page.logs.map((line) => [
      `<span class="nowrap">${time(line.time)}</span>`,
      `<span class="level ${escapeHtml(line.level)}">${escapeHtml(line.level)}</span>`,
      `<code>${escapeHtml(line.function)}</code>`,
      `<a class="mono small-text" href="${escapeHtml(`${base}?${new URLSearchParams({ ...(dev === undefined ? {} : { dev }), requestId: line.requestId }).toString()}`)}"
        title="Only this request's lines">${escapeHtml(line.requestId.slice(0, 12))}</a>`,
      `<div class="message">${escapeHtml(line.message)}</div>${fieldsText(line.fields) ? `<div class="message muted">${escapeHtml(fieldsText(line.fields))}</div>` : ''}`,
    ])
    const queries = pagerQueries(params, { paging, nextCursor: page.nextCursor })
    return shell(c, {
      title: 'Logs', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'logs' },
      body: `${pageHead({
        title: 'Logs',
        lede: `Function log lines, newest first, kept 14 days.${dev === undefined ? '' : ` Development namespace <code>${escapeHtml(dev)}</code>.`}`,
        actions: await namespacePicker(deps, { person, appId: app.id, action: base, dev }),
      })}${card({ title: 'Filters', id: 'filters', body: form })}
      ${card({
        title: 'Log lines', id: 'lines',
        body: `${table({ caption: 'Log lines, newest first', head: ['Time', 'Level', 'Function', 'Request', 'Message'], rows, empty: 'No log line matches.' })}
          ${pager({ base, queries, label: `Page ${paging.back.length + 1}, ${page.logs.length} line${page.logs.length === 1 ? '' : 's'}` })}`,
      })}`,
    })
  })
}
