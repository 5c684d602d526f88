/**
 * The Access screen (spec 2.3): who holds which role on the app, its app access tokens and the
 * agents' pending requests for one. Members: the owner and Administer holders, through
 * `appMembers`/`setAppMember`/`removeAppMember` (the `…/members` routes). Tokens: listed and
 * revoked by the owner and Administer holders (`appTokensOf`, `revokeAppTokenOf`), created by
 * the owner only (`createOwnerAppToken`), whose browser then goes straight to the token's
 * one-time reveal page on this host: the value is shown there once, never here and never in
 * a URL. Pending requests: the owner approves on the request's own page and may refuse here.
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import {
  appMembers, appTokensOf, createOwnerAppToken, pendingTokenRequests, refuseTokenRequest, removeAppMember, revokeAppTokenOf, setAppMember,
  type AppRole,
} from '../identity/index.ts'
import { appOf, attempt, doneRedirect, formOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, card, notice, pageHead, table, time } from './format.ts'
import { sectionPath, shell } from './layout.ts'

const DONE: Record<string, string> = {
  'member-saved': 'Role saved.',
  'member-removed': 'Removed from the app.',
  'token-revoked': 'Token revoked. Requests that send it are refused from now on.',
  'request-refused': 'Request refused. The agent learns it expired and gets no token.',
}

const ROLES: ReadonlyArray<{ role: AppRole; text: string; hint: string }> = [
  { role: 'use', text: 'Use', hint: 'opens the app' },
  { role: 'edit', text: 'Edit', hint: 'deploys, secrets, logs, jobs' },
  { role: 'administer', text: 'Administer', hint: 'also access and tokens' },
]

function roleSelect(name: string, id: string, selected: AppRole): string {
  return `<select name="${escapeHtml(name)}" id="${escapeHtml(id)}">${ROLES.map((r) =>
    `<option value="${r.role}"${r.role === selected ? ' selected' : ''}>${r.text} (${r.hint})</option>`).join('')}</select>`
}

export function registerAccess(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  const path = (slug: string) => sectionPath(slug, 'access')

  routes.get('/dashboard/apps/:app/access', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const owner = app.ownerId === person.id
    const action = (suffix: string) => escapeHtml(`${path(app.slug)}${suffix}`)

    const members = await appMembers(deps.db, { user: person, appId: app.id })
    const memberRows = [
      [escapeHtml(members.owner.email ?? 'unknown'), badge('Owner', 'info'), '<span class="muted small-text">holds every role</span>'],
      ...members.members.map((member, i) => [
        escapeHtml(member.email),
        `<form class="row" method="post" action="${action('/members')}">${hidden('csrf', csrf)}${hidden('member', member.userId)}
          <label class="sr-only" for="role-${i}">Role of ${escapeHtml(member.email)}</label>${roleSelect('role', `role-${i}`, member.role)}
          <button class="secondary small">Save</button></form>`,
        `<form class="inline" method="post" action="${action('/members/remove')}" data-confirm="Remove ${escapeHtml(member.email)} from ${escapeHtml(app.slug)}?">
          ${hidden('csrf', csrf)}${hidden('member', member.userId)}<button class="danger small">Remove</button></form>`,
      ]),
    ]
    const membersCard = card({
      title: 'People and roles', id: 'members',
      body: `${table({ caption: 'People and their roles', head: ['Person', 'Role', ''], rows: memberRows, empty: '' })}
        <h3>Give someone a role</h3>
        <form class="row" method="post" action="${action('/members')}">${hidden('csrf', csrf)}
          <div class="field"><label for="member-email">Email address</label><input id="member-email" name="member" type="email" required autocomplete="off" placeholder="ana@example.com"></div>
          <div class="field"><label for="member-role">Role</label>${roleSelect('role', 'member-role', 'use')}</div>
          <button>Save role</button></form>
        <p class="muted small-text">They need an account (signing in once makes one). Edit and Administer are for confirmed members of the app's organisation.</p>`,
    })

    const tokens = await attempt(() => appTokensOf(deps.db, { user: person, appId: app.id }))
    const tokenBody = !tokens.ok ? notice('warn', `<p>${escapeHtml(tokens.error.message)}</p>`) : `${table({
      caption: 'Active app access tokens',
      head: ['Name', 'Created', 'Last used', ''],
      rows: tokens.value.map((token) => [
        escapeHtml(token.name),
        time(token.createdAt),
        token.lastUsedAt === null ? '<span class="muted">never</span>' : time(token.lastUsedAt),
        `<form class="inline" method="post" action="${action(`/tokens/${encodeURIComponent(token.id)}/revoke`)}"
          data-confirm="Revoke the token ${escapeHtml(token.name)}? Programs using it stop working at once.">${hidden('csrf', csrf)}
          <button class="danger small" aria-label="Revoke ${escapeHtml(token.name)}">Revoke</button></form>`,
      ]),
      empty: 'No active tokens.',
    })}${owner ? `<h3>Create a token</h3>
      <form class="row" method="post" action="${action('/tokens')}">${hidden('csrf', csrf)}
        <div class="field"><label for="token-name">Name</label><input id="token-name" name="name" maxlength="80" required placeholder="nightly export" autocomplete="off"></div>
        <button>Create token</button></form>
      <p class="muted small-text">A token (<code>svc_app_…</code>) acts as you on this app's data, Functions and files, never on its settings.
      The next page shows it once; keep it in a secret manager.</p>` : '<p class="muted small-text">Only the app\'s owner creates tokens: a token acts as the owner.</p>'}`

    let requestsCard = ''
    if (owner) {
      const requests = await attempt(() => pendingTokenRequests(deps.db, deps.clock, { user: person, appId: app.id }))
      requestsCard = card({
        title: 'Pending token requests', id: 'requests',
        body: !requests.ok ? notice('warn', `<p>${escapeHtml(requests.error.message)}</p>`) : table({
          caption: 'Token requests waiting for you',
          head: ['Name', 'Requested', 'Expires', ''],
          rows: requests.value.map((request) => [
            escapeHtml(request.name), time(request.requestedAt), time(request.expiresAt),
            `<div class="actions"><a class="button small" href="/app-tokens/requests/${escapeHtml(encodeURIComponent(request.id))}">Review and approve</a>
              <form class="inline" method="post" action="${action(`/requests/${encodeURIComponent(request.id)}/refuse`)}">${hidden('csrf', csrf)}
              <button class="danger small">Refuse</button></form></div>`,
          ]),
          empty: 'No agent is waiting for a token.',
        }),
      })
    }
    const done = DONE[c.req.query('done') ?? '']
    return shell(c, {
      title: 'Access', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'access' },
      body: `${pageHead({ title: 'Access', lede: 'Who may open, build and administer this app, and the tokens programs use.' })}
        ${done ? notice('ok', `<p>${escapeHtml(done)}</p>`) : ''}${membersCard}
        ${card({ title: 'App access tokens', id: 'tokens', body: tokenBody })}${requestsCard}`,
    })
  })

  routes.post('/dashboard/apps/:app/access/members', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    await setAppMember(deps.db, { user: person, appId: c.req.param('app'), member: form.member ?? '', body: { role: form.role } })
    return doneRedirect(c, path(c.req.param('app')), 'member-saved')
  })

  routes.post('/dashboard/apps/:app/access/members/remove', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    await removeAppMember(deps.db, { user: person, appId: c.req.param('app'), member: form.member ?? '' })
    return doneRedirect(c, path(c.req.param('app')), 'member-removed')
  })

  routes.post('/dashboard/apps/:app/access/tokens', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    const created = await createOwnerAppToken(deps, { user: person, appId: c.req.param('app'), name: form.name })
    // The one-time reveal page is on this host: the value is shown there, after a button press.
    return c.redirect(created.revealUrl, 303)
  })

  routes.post('/dashboard/apps/:app/access/tokens/:tokenId/revoke', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    await formOf(c, deps)
    await revokeAppTokenOf(deps.db, deps.clock, { user: person, appId: c.req.param('app'), tokenId: c.req.param('tokenId') })
    return doneRedirect(c, path(c.req.param('app')), 'token-revoked')
  })

  routes.post('/dashboard/apps/:app/access/requests/:requestId/refuse', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    await formOf(c, deps)
    await refuseTokenRequest(deps.db, deps.clock, { user: person, appId: c.req.param('app'), requestId: c.req.param('requestId') })
    return doneRedirect(c, path(c.req.param('app')), 'request-refused')
  })
}
