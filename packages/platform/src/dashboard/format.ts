/**
 * Small pieces every dashboard section renders with: times (UTC on the server, the browser's
 * local time once the script runs), sizes, badges, tables and notices. Each escapes what it
 * is given.
 */
import { escapeHtml } from '../lib/html.ts'

/** A `<time>` element: UTC text the script turns into the browser's local time. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '<span class="muted">—</span>'
  const at = new Date(iso)
  if (Number.isNaN(at.getTime())) return escapeHtml(iso)
  const text = `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`
  return `<time datetime="${escapeHtml(at.toISOString())}">${escapeHtml(text)}</time>`
}

/** Bytes as a person reads them: 812 B, 14.2 KB, 3.1 MB. */
export function bytes(size: number): string {
  if (size < 1024) return `${size} B`
  const units = ['KB', 'MB', 'GB']
  let value = size / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`
}

export type Tone = 'ok' | 'warn' | 'bad' | 'info' | 'muted'

export function badge(text: string, tone: Tone = 'muted'): string {
  return `<span class="badge ${tone}">${escapeHtml(text)}</span>`
}

/** A table whose cells the caller rendered (escaped); `empty` shown instead when there are no rows. */
export function table(input: { caption?: string; head: Array<string | { text: string; num?: boolean }>; rows: string[][]; empty: string }): string {
  if (input.rows.length === 0) return `<p class="empty">${escapeHtml(input.empty)}</p>`
  const head = input.head.map((h) => typeof h === 'string'
    ? `<th scope="col">${escapeHtml(h)}</th>`
    : `<th scope="col"${h.num ? ' class="num"' : ''}>${escapeHtml(h.text)}</th>`).join('')
  const numeric = input.head.map((h) => typeof h !== 'string' && h.num === true)
  const rows = input.rows.map((cells) =>
    `<tr>${cells.map((cell, i) => `<td${numeric[i] ? ' class="num"' : ''}>${cell}</td>`).join('')}</tr>`).join('')
  return `<div class="table-wrap"><table>${input.caption ? `<caption class="sr-only">${escapeHtml(input.caption)}</caption>` : ''}
    <thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div>`
}

export function notice(tone: Exclude<Tone, 'muted'>, html: string): string {
  return `<div class="notice ${tone}" role="${tone === 'bad' ? 'alert' : 'status'}">${html}</div>`
}

export function card(input: { title: string; id?: string; actions?: string; body: string }): string {
  return `<section class="card"${input.id ? ` id="${escapeHtml(input.id)}"` : ''} aria-labelledby="${escapeHtml(input.id ?? slugOf(input.title))}-title">
    <div class="card-head"><h2 id="${escapeHtml(input.id ?? slugOf(input.title))}-title">${escapeHtml(input.title)}</h2>${input.actions ?? ''}</div>${input.body}</section>`
}

function slugOf(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')
}

export function pageHead(input: { title: string; lede?: string; actions?: string }): string {
  return `<div class="page-head"><div><h1>${escapeHtml(input.title)}</h1>${input.lede ? `<p class="lede">${input.lede}</p>` : ''}</div>${input.actions ?? ''}</div>`
}

/** A big number with its label; `mono` keeps the label as written (a signal's name). */
export function stat(input: { label: string; value: number | string; hint?: string; id?: string; mono?: boolean }): string {
  return `<div class="stat"${input.id ? ` data-stat="${escapeHtml(input.id)}"` : ''}><div class="label${input.mono ? ' mono' : ''}">${escapeHtml(input.label)}</div>
    <div class="value">${escapeHtml(String(input.value))}</div>${input.hint ? `<div class="hint">${escapeHtml(input.hint)}</div>` : ''}</div>`
}
