/**
 * The dashboard's home and each app's overview. Home: every app the person holds a role on
 * (apps/ `appsOf`, as `GET /v1/apps`), grouped as theirs, editable and usable. Overview: status
 * (a paused app says why, with the resend-verification action where that is the reason), URL,
 * visibility, releases newest first (SDK version, size, activation time) and development
 * namespaces, read through `appReleases` and `appDevNamespaces` as `GET …/releases` and
 * `GET …/dev` do (the owner and Edit holders; a Use holder sees status and URL only).
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { appsOf, type App } from '../apps/apps.ts'
import { roleFrom, VERIFICATION_REQUIRED, type AppRole } from '../identity/index.ts'
import { appDevNamespaces, appReleases } from '../deploy/app-releases.ts'
import { appOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, bytes, card, notice, pageHead, table, time, type Tone } from './format.ts'
import { mayOpen, sectionPath, shell } from './layout.ts'

const ROLE_TEXT: Record<AppRole, string> = { use: 'Use', edit: 'Edit', administer: 'Administer' }

export function statusBadge(status: App['status']): string {
  const tones: Record<App['status'], Tone> = { active: 'ok', paused: 'warn', suspended: 'bad', archived: 'muted' }
  return badge(status[0]!.toUpperCase() + status.slice(1), tones[status])
}

function visibilityBadge(visibility: App['visibility']): string {
  return badge(visibility === 'public' ? 'Public' : 'Private', visibility === 'public' ? 'info' : 'muted')
}

type ListedApp = Awaited<ReturnType<typeof appsOf>>[number]

function appCard(app: ListedApp): string {
  return `<a class="app-card" href="${escapeHtml(sectionPath(app.slug, 'overview'))}">
    <div class="title">${escapeHtml(app.name)}</div><div class="slug">${escapeHtml(app.slug)}</div>
    <div class="badges">${statusBadge(app.status)}${visibilityBadge(app.visibility)}${app.owned ? badge('Owner', 'info') : badge(ROLE_TEXT[app.role])}</div></a>`
}

/** What a paused or suspended app's owner and builders should know, with the action that fixes it. */
function statusNotice(app: App, csrf: string): string {
  if (app.status === 'paused') {
    if (app.pausedReason === VERIFICATION_REQUIRED) {
      return notice('warn', `<strong>Paused: the owner's email address is not confirmed</strong>
        <p>Accounts registered with a password must confirm their email within 24 hours. Until the owner opens the
        confirmation link, visitors see a paused page. Confirming resumes the app at once.</p>
        <form method="post" action="/verification/resend">${hidden('csrf', csrf)}${hidden('app', app.slug)}
        <button class="secondary">Resend the confirmation email</button></form>`)
    }
    return notice('warn', `<strong>Paused</strong><p>Reason: <code>${escapeHtml(app.pausedReason ?? 'not given')}</code>.</p>`)
  }
  if (app.status === 'suspended') return notice('bad', '<strong>Suspended</strong><p>An operator suspended this app; it serves nothing until they lift it.</p>')
  if (app.status === 'archived') return notice('info', '<strong>Archived</strong><p>This app is archived and serves nothing.</p>')
  return ''
}

export function registerApps(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  routes.get('/dashboard', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const apps = await appsOf({ db: deps.db, urls: deps.urls, access: { roleFrom } }, person)
    const groups = [
      { title: 'Your apps', apps: apps.filter((app) => app.owned), empty: 'You own no apps yet. Create one with service init and service deploy.' },
      { title: 'Apps you may edit', apps: apps.filter((app) => !app.owned && app.role !== 'use'), empty: '' },
      { title: 'Apps you may use', apps: apps.filter((app) => !app.owned && app.role === 'use'), empty: '' },
    ]
    const sections = groups.filter((group) => group.apps.length > 0 || group.empty !== '').map((group) =>
      `<h2 class="section-title">${escapeHtml(group.title)}</h2>${group.apps.length === 0
        ? `<p class="empty">${escapeHtml(group.empty)}</p>`
        : `<div class="apps">${group.apps.map(appCard).join('')}</div>`}`).join('')
    const unconfirmed = person.emailConfirmedAt === null ? notice('warn', `<strong>Confirm your email address</strong>
      <p>Until you do, you can build your own apps but not share them, create access tokens or approve requests.</p>
      <form method="post" action="/verification/resend">${hidden('csrf', csrf)}<button class="secondary">Send the confirmation email again</button></form>`) : ''
    return shell(c, {
      title: 'Apps', person, csrf, top: 'apps',
      body: `${pageHead({ title: 'Apps', lede: 'Every app you own or hold a role on.' })}${unconfirmed}${sections}`,
    })
  })

  routes.get('/dashboard/apps/:app', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const url = deps.urls.app(app.slug)
    const facts = `<dl class="facts">
      <dt>Status</dt><dd>${statusBadge(app.status)}</dd>
      <dt>URL</dt><dd><a href="${escapeHtml(url)}" rel="noopener">${escapeHtml(url)}</a></dd>
      <dt>Visibility</dt><dd>${visibilityBadge(app.visibility)} <span class="muted small-text">${app.visibility === 'public'
        ? 'anyone may open it' : 'only people with a role, signed in'}</span></dd>
      <dt>Your role</dt><dd>${app.ownerId === person.id ? 'Owner' : escapeHtml(ROLE_TEXT[role])}</dd>
      <dt>Created</dt><dd>${time(app.createdAt.toISOString())}</dd></dl>`
    let builders = ''
    if (mayOpen(role, 'secrets')) {
      const [releases, namespaces] = await Promise.all([
        appReleases(deps.db, { user: person, appId: app.id }),
        appDevNamespaces(deps.db, { user: person, appId: app.id }),
      ])
      builders = card({
        title: 'Releases', id: 'releases',
        body: table({
          caption: 'Releases, newest first',
          head: ['Version', 'Status', { text: 'SDK' }, { text: 'Size', num: true }, 'Activated'],
          rows: releases.map((release) => [
            `<strong>v${release.version}</strong>`,
            release.status === 'active' ? badge('Active', 'ok') : badge('Superseded'),
            `<code>${escapeHtml(release.sdkVersion)}</code>`,
            escapeHtml(bytes(release.bundleSize)),
            time(release.activatedAt),
          ]),
          empty: 'No release yet: deploy with service deploy <dir>.',
        }),
      }) + card({
        title: 'Development namespaces', id: 'namespaces',
        body: table({
          caption: 'Development namespaces',
          head: ['Name', 'Active release', 'SDK', 'Created'],
          rows: namespaces.map((namespace) => [
            `<code>${escapeHtml(namespace.name)}</code>`,
            namespace.activeRelease === null ? '<span class="muted">none</span>' : `v${namespace.activeRelease.version} ${time(namespace.activeRelease.activatedAt)}`,
            namespace.activeRelease === null ? '' : `<code>${escapeHtml(namespace.activeRelease.sdkVersion)}</code>`,
            time(namespace.createdAt),
          ]),
          empty: 'None. service deploy <dir> --dev <name> makes one, with its own schema, secrets and logs.',
        }),
      })
    } else {
      builders = notice('info', '<p>You may use this app. Its builders see its releases, secrets, logs and jobs here.</p>')
    }
    return shell(c, {
      title: 'Overview', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'overview' },
      body: `${pageHead({ title: app.name, lede: `<code>${escapeHtml(app.slug)}</code>` })}${statusNotice(app, csrf)}
        ${card({ title: 'About this app', id: 'about', body: facts })}${builders}`,
    })
  })
}
