/**
 * Server-rendered HTML of the platform's own pages (central sign-in, app edge, development
 * mailbox): the one escaping helper for HTML text and attributes, the one for values placed
 * in a script, and the page shell. Every page carries a Content-Security-Policy whose only
 * allowed script and style are the ones it rendered itself, marked with a nonce made for
 * that response: a value that slipped through escaping still cannot run (no
 * `'unsafe-inline'` anywhere).
 */
import { randomBytes } from 'node:crypto'
import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for HTML content and for quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!)
}

const SCRIPT_ESCAPES: Record<string, string> = {
  '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029',
}

/**
 * A value as a JavaScript expression that is safe inside a `<script>` element: JSON with
 * `<`, `>`, `&`, U+2028 and U+2029 escaped, so no value can close the element, open a
 * comment or end a line.
 *
 * @example
 *   script: `var id = ${scriptJson(id)};`
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => SCRIPT_ESCAPES[c]!)
}

/** A fresh nonce for one response's script and style elements. */
export function newNonce(): string {
  return randomBytes(18).toString('base64')
}

/**
 * The pages' Content-Security-Policy. `formAction` lists where a form may submit and where
 * the redirects after a submission may lead (browsers apply form-action to both): the
 * central sign-in's forms end on app origins, so it passes those.
 */
export function contentSecurityPolicy(options: { nonce: string; formAction?: string }): string {
  const nonce = `'nonce-${options.nonce}'`
  return `default-src 'none'; style-src ${nonce}; script-src ${nonce}; connect-src 'self'; img-src 'self'; ` +
    `form-action ${options.formAction ?? "'self'"}; frame-ancestors 'none'; base-uri 'none'`
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2330;margin:0}
main{max-width:26rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:.75rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.35rem;margin-top:0}label{display:block;margin:.75rem 0 .25rem}
input{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #c8ccd4;border-radius:.375rem;font:inherit}
button{margin-top:1rem;padding:.55rem 1.1rem;border:0;border-radius:.375rem;background:#2f5bea;color:#fff;font:inherit;cursor:pointer}
.muted{color:#5b6475;font-size:.9rem}.error{color:#b42318}details{margin-top:1rem}
.code{font:600 1.6rem/1.2 ui-monospace,monospace;letter-spacing:.1em}`

/** The headers every platform page is sent with; `nonce` is the one its elements carry. */
export function pageHeaders(options: { nonce: string; formAction?: string }): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: with no-referrer browsers send "Origin: null" on form
    // posts, which the Origin check must refuse. Nothing leaves for another origin.
    'referrer-policy': 'same-origin',
    'content-security-policy': contentSecurityPolicy(options),
  }
}

/**
 * Renders a page through the request context, so cookies the handler set are sent with it.
 * `body` is HTML the caller escaped (`escapeHtml`); `script`, when given, is code the caller
 * wrote, with every value in it passed through `scriptJson`.
 *
 * @example
 *   return page(c, 'Signed in', `<h1>Signed in as ${escapeHtml(user.email)}</h1>`)
 */
export function page(
  c: Context,
  title: string,
  body: string,
  options: { status?: number; script?: string; headers?: Record<string, string>; formAction?: string } = {},
): Response {
  const nonce = newNonce()
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title><style nonce="${nonce}">${STYLE}</style></head><body><main>${body}</main>${
    options.script ? `<script nonce="${nonce}">${options.script}</script>` : ''}</body></html>`
  return c.body(html, (options.status ?? 200) as ContentfulStatusCode, {
    ...pageHeaders({ nonce, ...(options.formAction ? { formAction: options.formAction } : {}) }),
    ...options.headers,
  })
}

export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}
