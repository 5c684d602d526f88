/**
 * The dashboard's page shell: the top bar (product, the signed-in person, Organisation,
 * Preferences, Sign out), the app's section navigation when a page is about one app, and the
 * content. One stylesheet and one script, both under the response's nonce (lib/html.ts's
 * headers: no 'unsafe-inline', no framing, no caching). Everything interpolated here is
 * escaped; section bodies are HTML their renderers escaped.
 */
import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { escapeHtml, hidden, newNonce, pageHeaders } from '../lib/html.ts'
import type { AppRole } from '../identity/index.ts'
import { DASHBOARD_STYLE } from './style.ts'
import { DASHBOARD_SCRIPT } from './browser-script.ts'

/** The sections of one app, in navigation order, with the least role each needs. */
export const APP_SECTIONS = [
  { key: 'overview', path: '', label: 'Overview', role: 'use' },
  { key: 'access', path: '/access', label: 'Access', role: 'administer' },
  { key: 'secrets', path: '/secrets', label: 'Secrets', role: 'edit' },
  { key: 'logs', path: '/logs', label: 'Logs', role: 'edit' },
  { key: 'jobs', path: '/jobs', label: 'Background jobs', role: 'edit' },
  { key: 'feed', path: '/feed', label: 'Agent Feed', role: 'edit' },
  { key: 'integrations', path: '/integrations', label: 'Integrations', role: 'edit' },
] as const satisfies ReadonlyArray<{ key: string; path: string; label: string; role: AppRole }>

export type AppSection = (typeof APP_SECTIONS)[number]['key']

const RANK: Record<AppRole, number> = { use: 1, edit: 2, administer: 3 }

export function mayOpen(role: AppRole, section: AppSection): boolean {
  const needed = APP_SECTIONS.find((s) => s.key === section)!.role
  return RANK[role] >= RANK[needed]
}

/** The path of an app's section on the dashboard. */
export function sectionPath(slug: string, section: AppSection): string {
  return `/dashboard/apps/${encodeURIComponent(slug)}${APP_SECTIONS.find((s) => s.key === section)!.path}`
}

export interface Person {
  readonly email: string
  readonly organisationId: string | null
}

export interface ShellInput {
  title: string
  /** Null on pages shown before anyone is known (errors of a signed-out browser). */
  person: Person | null
  /** The CSRF token of this page's forms (the sign-out form needs one). */
  csrf: string | null
  /** The app a page is about, with the person's role on it, and the section shown. */
  app?: { slug: string; name: string; role: AppRole; section: AppSection }
  /** Which top-bar item is current. */
  top?: 'apps' | 'organisation'
  body: string
  status?: number
}

function topBar(input: ShellInput): string {
  const current = (item: 'apps' | 'organisation') => input.top === item ? ' aria-current="page"' : ''
  const account = input.person === null ? '' : `
    <a href="/dashboard"${current('apps')}>Apps</a>
    <a href="/dashboard/organisation"${current('organisation')}>Organisation</a>
    <a href="/preferences">Preferences</a>
    <span class="who" title="${escapeHtml(input.person.email)}">${escapeHtml(input.person.email)}</span>
    ${input.csrf === null ? '' : `<form class="inline" method="post" action="/sign-out">${hidden('csrf', input.csrf)}<button class="secondary small">Sign out</button></form>`}`
  return `<header class="top"><a class="brand" href="/dashboard"><span class="brand-mark" aria-hidden="true">S</span>Service</a>
    <nav aria-label="Account">${account}</nav></header>`
}

function sideNav(app: NonNullable<ShellInput['app']>): string {
  const items = APP_SECTIONS.filter((section) => mayOpen(app.role, section.key)).map((section) => {
    const current = section.key === app.section ? ' aria-current="page"' : ''
    return `<li><a href="${escapeHtml(sectionPath(app.slug, section.key))}"${current}>${escapeHtml(section.label)}</a></li>`
  }).join('')
  return `<nav class="side" aria-label="App sections"><div class="back"><a href="/dashboard">&larr; All apps</a></div>
    <div class="app-name">${escapeHtml(app.name)}</div><div class="app-slug">${escapeHtml(app.slug)}</div><ul>${items}</ul></nav>`
}

/**
 * A whole dashboard page.
 *
 * @example
 *   return shell(c, { title: 'Secrets', person, csrf, app: { slug, name, role, section: 'secrets' }, body })
 */
export function shell(c: Context, input: ShellInput): Response {
  const nonce = newNonce()
  const title = input.app ? `${input.title} · ${input.app.name}` : input.title
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin">
<meta name="color-scheme" content="light dark">
<title>${escapeHtml(title)} · Service</title><style nonce="${nonce}">${DASHBOARD_STYLE}</style></head>
<body><a class="skip" href="#content">Skip to content</a>${topBar(input)}
<div class="frame${input.app ? '' : ' wide'}">${input.app ? sideNav(input.app) : ''}<main id="content" tabindex="-1">${input.body}</main></div>
<script nonce="${nonce}">${DASHBOARD_SCRIPT}</script></body></html>`
  return c.body(html, (input.status ?? 200) as ContentfulStatusCode, pageHeaders({ nonce }))
}
