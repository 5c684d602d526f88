/**
 * The namespace a section reads: production, or one of the app's development namespaces
 * (`?dev=<name>`), chosen with a small GET form. The list comes from `appDevNamespaces`, the
 * owner API's `GET …/dev`.
 */
import { escapeHtml } from '../lib/html.ts'
import type { User } from '../identity/index.ts'
import { checkDevName } from '../namespaces/dev-names.ts'
import { appDevNamespaces } from '../deploy/app-releases.ts'
import type { DashboardDeps } from './context.ts'

/** The `dev` query parameter as the domain functions take it: undefined for production. */
export function devOf(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : checkDevName(value)
}

/** `?dev=…` (or nothing for production), to keep the namespace across links and redirects. */
export function devQuery(dev: string | undefined, prefix: '?' | '&' = '?'): string {
  return dev === undefined ? '' : `${prefix}dev=${encodeURIComponent(dev)}`
}

/** The picker, or nothing when the app has no development namespaces. */
export async function namespacePicker(deps: DashboardDeps, input: { person: User; appId: string; action: string; dev: string | undefined }): Promise<string> {
  const namespaces = await appDevNamespaces(deps.db, { user: input.person, appId: input.appId })
  if (namespaces.length === 0) return ''
  const options = [`<option value=""${input.dev === undefined ? ' selected' : ''}>Production</option>`,
    ...namespaces.map((namespace) => `<option value="${escapeHtml(namespace.name)}"${namespace.name === input.dev ? ' selected' : ''}>Development: ${escapeHtml(namespace.name)}</option>`)]
  return `<form class="row" method="get" action="${escapeHtml(input.action)}" aria-label="Namespace">
    <div class="field small"><label for="namespace">Namespace</label><select id="namespace" name="dev">${options.join('')}</select></div>
    <button class="secondary">Show</button></form>`
}
