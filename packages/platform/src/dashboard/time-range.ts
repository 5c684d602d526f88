/**
 * The inclusive date-time range of the jobs and logs sections, and their Previous/Next paging.
 *
 * Range: the browser's script sends ISO instants (`from`, `to`) made from the local
 * `datetime-local` inputs (browser-script.ts); without the script the inputs themselves
 * (`fromLocal`, `toLocal`) arrive and are read as UTC, whole minutes, "to" inclusive of its
 * minute. Either way the domain functions get ISO instants, as the API's clients send them.
 *
 * Paging: the APIs page forward with an opaque `nextCursor`. Previous is the cursor of the
 * page before, kept in the link as a stack (`back`, the cursors of the pages before this one,
 * `0` standing for the first); it holds the last MAX_BACK pages, past which Previous leads to
 * the newest page.
 */
import { escapeHtml } from '../lib/html.ts'

const LOCAL_MINUTE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/
const MAX_BACK = 30
const FIRST = '0'

export interface TimeRange {
  /** ISO instants for the API, or undefined for its default. */
  from: string | undefined
  to: string | undefined
  /** Whether the range came from the script-less inputs, read as UTC. */
  utc: boolean
}

export function readTimeRange(query: (name: string) => string | undefined): TimeRange {
  const pick = (iso: string | undefined, local: string | undefined, end: boolean): { value: string | undefined; utc: boolean } => {
    if (iso !== undefined && iso !== '') return { value: iso, utc: false }
    if (local !== undefined && LOCAL_MINUTE.test(local)) return { value: `${local}:${end ? '59.999' : '00.000'}Z`, utc: true }
    return { value: undefined, utc: false }
  }
  const from = pick(query('from'), query('fromLocal'), false)
  const to = pick(query('to'), query('toLocal'), true)
  return { from: from.value, to: to.value, utc: from.utc || to.utc }
}

/** An instant as a `datetime-local` value in UTC (what a browser without the script shows). */
function utcInputValue(iso: string | undefined): string {
  if (iso === undefined) return ''
  const at = new Date(iso)
  return Number.isNaN(at.getTime()) ? '' : at.toISOString().slice(0, 16)
}

/**
 * The range inputs of a GET form marked `data-local-range` (the caller wraps them, adding its
 * other fields); `from`/`to` here are the range in effect (the API's answer), so the inputs
 * show what was applied.
 */
export function rangeInputs(input: { labels: [string, string]; from: string | undefined; to: string | undefined }): string {
  const field = (which: 'from' | 'to', label: string, iso: string | undefined) =>
    `<div class="field"><label for="${which}-local">${escapeHtml(label)}</label>
      <input id="${which}-local" type="datetime-local" name="${which}Local" data-local="${which}"
        value="${escapeHtml(utcInputValue(iso))}"${iso ? ` data-instant="${escapeHtml(iso)}"` : ''}></div>`
  return `<input type="hidden" name="from" value=""><input type="hidden" name="to" value="">
    ${field('from', input.labels[0], input.from)}${field('to', input.labels[1], input.to)}`
}

export interface Paging {
  cursor: string | undefined
  back: string[]
}

export function readPaging(query: (name: string) => string | undefined): Paging {
  const cursor = query('cursor')
  const back = (query('back') ?? '').split('.').filter((part) => part !== '').slice(-MAX_BACK)
  return { cursor: cursor === '' ? undefined : cursor, back }
}

/** The Previous and Next links' query strings over `params` (the page's other parameters), or null where there is none. */
export function pagerQueries(params: URLSearchParams, input: { paging: Paging; nextCursor: string | null }): { previous: string | null; next: string | null } {
  const { paging, nextCursor } = input
  const withPage = (cursor: string | undefined, back: string[]) => {
    const query = new URLSearchParams(params)
    query.delete('cursor')
    query.delete('back')
    if (cursor !== undefined) query.set('cursor', cursor)
    if (back.length > 0) query.set('back', back.join('.'))
    return `?${query.toString()}`
  }
  let previous: string | null = null
  if (paging.cursor !== undefined) {
    const before = paging.back.at(-1)
    previous = before === undefined || before === FIRST ? withPage(undefined, []) : withPage(before, paging.back.slice(0, -1))
  }
  const next = nextCursor === null ? null : withPage(nextCursor, [...paging.back, paging.cursor ?? FIRST].slice(-MAX_BACK))
  return { previous, next }
}

/** Previous/Next as links (a missing one is shown disabled), with what the page shows. */
export function pager(input: { base: string; queries: { previous: string | null; next: string | null }; label: string }): string {
  const link = (query: string | null, text: string, rel: string) => query === null
    ? `<span class="button secondary small" aria-disabled="true">${text}</span>`
    : `<a class="button secondary small" rel="${rel}" href="${escapeHtml(input.base + query)}">${text}</a>`
  return `<nav class="pager" aria-label="Pages"><span class="muted">${escapeHtml(input.label)}</span>
    <span class="actions">${link(input.queries.previous, '&larr; Previous', 'prev')}${link(input.queries.next, 'Next &rarr;', 'next')}</span></nav>`
}
