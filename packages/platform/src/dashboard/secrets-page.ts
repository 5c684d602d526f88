/**
 * Secrets of an app namespace: names only, whether each is declared by the active release,
 * required, and set (with when). Values go in through a form's body (a password input that is
 * never filled back) and never come out: not in the page, not in a URL, not in a redirect.
 * Through `listAppSecrets`, `setAppSecret` and `unsetAppSecret`, as `…{ns}/secrets` does (the
 * owner and Edit holders).
 */
import type { Hono } from 'hono'
import { escapeHtml, hidden } from '../lib/html.ts'
import { listAppSecrets, setAppSecret, unsetAppSecret } from '../secrets/index.ts'
import { appOf, doneRedirect, formOf, pageCsrf, signedIn, type DashboardDeps, type DashboardEnv } from './context.ts'
import { badge, card, notice, pageHead, table, time } from './format.ts'
import { sectionPath, shell } from './layout.ts'
import { devOf, devQuery, namespacePicker } from './namespace-picker.ts'

const DONE: Record<string, string> = {
  'secret-set': 'Secret saved. Functions read the new value from their next invocation.',
  'secret-unset': 'Secret removed.',
}

function valueInput(id: string): string {
  return `<input id="${escapeHtml(id)}" name="value" type="password" required autocomplete="new-password" spellcheck="false" autocapitalize="off">`
}

export function registerSecrets(routes: Hono<DashboardEnv>, deps: DashboardDeps): void {
  const store = { db: deps.db, store: deps.secrets }

  routes.get('/dashboard/apps/:app/secrets', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const csrf = pageCsrf(c, deps)
    const { app, role } = await appOf(deps, { person, app: c.req.param('app') })
    const dev = devOf(c.req.query('dev'))
    const secrets = await listAppSecrets(store, { user: person, appId: app.id, devName: dev })
    const action = escapeHtml(sectionPath(app.slug, 'secrets'))
    const keep = `${hidden('csrf', csrf)}${dev === undefined ? '' : hidden('dev', dev)}`
    const rows = secrets.map((secret, i) => [
      `<code>${escapeHtml(secret.name)}</code>`,
      secret.declared ? (secret.required ? badge('Required', 'info') : badge('Optional')) : badge('Not declared', 'warn'),
      secret.set ? `${badge('Set', 'ok')} <span class="muted small-text">${time(secret.updatedAt)}</span>` : (secret.required ? badge('Missing', 'bad') : badge('Not set')),
      `<details class="disclose"><summary>${secret.set ? 'Replace' : 'Set'} value</summary>
        <form class="row" method="post" action="${action}">${keep}${hidden('name', secret.name)}
          <div class="field"><label for="value-${i}">New value of ${escapeHtml(secret.name)}</label>${valueInput(`value-${i}`)}</div>
          <button class="small">Save</button></form></details>
        ${secret.set ? `<form class="inline" method="post" action="${action}/unset" data-confirm="Remove the value of ${escapeHtml(secret.name)}?">${keep}${hidden('name', secret.name)}
          <button class="danger small">Unset</button></form>` : ''}`,
    ])
    const done = DONE[c.req.query('done') ?? '']
    const missing = secrets.filter((secret) => secret.required && !secret.set)
    return shell(c, {
      title: 'Secrets', person, csrf, app: { slug: app.slug, name: app.name, role, section: 'secrets' },
      body: `${pageHead({
        title: 'Secrets',
        lede: `Values go in and never come out. Functions read them with <code>ctx.secrets.get(NAME)</code>.${dev === undefined ? '' : ` Development namespace <code>${escapeHtml(dev)}</code>.`}`,
        actions: await namespacePicker(deps, { person, appId: app.id, action: sectionPath(app.slug, 'secrets'), dev }),
      })}
        ${done ? notice('ok', `<p>${escapeHtml(done)}</p>`) : ''}
        ${missing.length > 0 ? notice('warn', `<strong>${missing.length} required secret${missing.length === 1 ? ' is' : 's are'} not set</strong><p>${missing.map((s) => `<code>${escapeHtml(s.name)}</code>`).join(', ')}</p>`) : ''}
        ${card({ title: 'Secrets', id: 'secrets', body: table({ caption: 'Secrets by name', head: ['Name', 'Declared', 'Value', ''], rows, empty: 'No secret is declared or set.' }) })}
        ${card({
          title: 'Set a secret', id: 'set-secret',
          body: `<form class="row" method="post" action="${action}">${keep}
            <div class="field"><label for="secret-name">Name</label><input id="secret-name" name="name" required pattern="[A-Z][A-Z0-9_]*" maxlength="128" autocomplete="off" spellcheck="false" placeholder="STRIPE_KEY"></div>
            <div class="field"><label for="secret-value">Value</label>${valueInput('secret-value')}</div>
            <button>Save secret</button></form>
            <p class="muted small-text">Names are upper-case letters, digits and underscores, as declared under <code>secrets:</code> in service.yaml.</p>`,
        })}`,
    })
  })

  routes.post('/dashboard/apps/:app/secrets', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    const dev = devOf(form.dev)
    await setAppSecret(store, { user: person, appId: c.req.param('app'), devName: dev, name: form.name, value: form.value })
    return doneRedirect(c, `${sectionPath(c.req.param('app'), 'secrets')}${devQuery(dev)}`, 'secret-set')
  })

  routes.post('/dashboard/apps/:app/secrets/unset', async (c) => {
    const person = await signedIn(c, deps)
    if (person instanceof Response) return person
    const form = await formOf(c, deps)
    const dev = devOf(form.dev)
    await unsetAppSecret(store, { user: person, appId: c.req.param('app'), devName: dev, name: form.name })
    return doneRedirect(c, `${sectionPath(c.req.param('app'), 'secrets')}${devQuery(dev)}`, 'secret-unset')
  })
}
