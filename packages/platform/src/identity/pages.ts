/**
 * Server-rendered pages of the central sign-in and the app edge: plain HTML, every
 * interpolated value escaped, no third-party assets. Each page is a function of its data.
 */

import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2330;margin:0}
main{max-width:26rem;margin:4rem auto;background:#fff;padding:2rem;border-radius:.75rem;box-shadow:0 1px 3px #0002}
h1{font-size:1.35rem;margin-top:0}label{display:block;margin:.75rem 0 .25rem}
input{width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #c8ccd4;border-radius:.375rem;font:inherit}
button{margin-top:1rem;padding:.55rem 1.1rem;border:0;border-radius:.375rem;background:#2f5bea;color:#fff;font:inherit;cursor:pointer}
.muted{color:#5b6475;font-size:.9rem}.error{color:#b42318}details{margin-top:1rem}`

/**
 * Renders a page through the request context, so cookies the handler set are sent with it.
 */
/**
 * The pages' Content-Security-Policy. `formAction` lists where a form may submit and where
 * the redirects after a submission may lead (browsers apply form-action to both): the
 * central sign-in's forms end on app origins, so it passes those.
 */
export function contentSecurityPolicy(formAction = "'self'"): string {
  return "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; " +
    `form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`
}

export function page(
  c: Context,
  title: string,
  body: string,
  options: { status?: number; script?: string; headers?: Record<string, string> } = {},
): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="same-origin">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main>${
    options.script ? `<script>${options.script}</script>` : ''}</body></html>`
  return c.body(html, (options.status ?? 200) as ContentfulStatusCode, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    // same-origin, not no-referrer: with no-referrer browsers send "Origin: null" on form
    // posts, which the Origin check must refuse. Nothing leaves for another origin.
    'referrer-policy': 'same-origin',
    'content-security-policy': contentSecurityPolicy(),
    ...options.headers,
  })
}

export function hidden(name: string, value: string): string {
  return `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
}
