/**
 * The development mailbox as one server-rendered HTML page. Every stored field is
 * untrusted (subjects and bodies may carry anything an app put in them), so all text is
 * HTML-escaped and only http(s) URLs become links. The HTML body of a message is never
 * rendered; the text body is what a developer needs to follow a sign-in link.
 */
import { escapeHtml } from '../lib/html.ts'
import type { DevMail } from './dev-mailbox.ts'

const URL_CANDIDATE = /https?:\/\/[^\s<>"'`]+/gi
/** Punctuation that ends a sentence rather than a URL ("see https://x.test/a."). */
const TRAILING_PUNCTUATION = /[.,;:!?'"]+$/

/**
 * Escapes `text` and turns each http(s) URL in it into a link. A closing parenthesis at the
 * end of a URL stays outside the link unless the URL opened one itself.
 */
export function linkify(text: string): string {
  let out = ''
  let last = 0
  for (const match of text.matchAll(URL_CANDIDATE)) {
    const start = match.index
    const url = trimUrl(match[0])
    if (!isHttpUrl(url)) continue
    out += escapeHtml(text.slice(last, start))
    const href = escapeHtml(url)
    out += `<a href="${href}" rel="noopener noreferrer">${href}</a>`
    last = start + url.length
  }
  return out + escapeHtml(text.slice(last))
}

function trimUrl(candidate: string): string {
  let url = candidate
  for (;;) {
    const trimmed = url.replace(TRAILING_PUNCTUATION, '')
    const unbalanced = trimmed.endsWith(')') && count(trimmed, '(') < count(trimmed, ')')
    const next = unbalanced ? trimmed.slice(0, -1) : trimmed
    if (next === url) return url
    url = next
  }
}

function count(text: string, char: string): number {
  return text.split(char).length - 1
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol, host } = new URL(text)
    return (protocol === 'http:' || protocol === 'https:') && host !== ''
  } catch {
    return false
  }
}

/** The whole page: newest message first, each with recipient, subject, time and text body. */
export function renderDevMailPage(messages: readonly DevMail[], options: { to: string | null; nonce: string }): string {
  const filter = options
  const heading = filter.to === null ? 'Development mailbox' : `Development mailbox: ${filter.to}`
  const items = messages.map(renderMessage).join('\n')
  const empty = '<p class="empty">No messages yet. Email the platform sends without an SMTP server appears here.</p>'
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(heading)}</title>
<style nonce="${escapeHtml(options.nonce)}">
  body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1.5rem; color: #1d2430; }
  h1 { font-size: 1.4rem; }
  .note { color: #5b6575; }
  article { border: 1px solid #d5dae1; border-radius: 8px; padding: 1rem 1.25rem; margin: 1rem 0; }
  article h2 { font-size: 1.1rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
  dl { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 .75rem; color: #3b4454; }
  dt { font-weight: 600; }
  dd { margin: 0; overflow-wrap: anywhere; }
  pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f5f7fa; padding: .75rem; border-radius: 6px; margin: 0; }
  .empty { color: #5b6575; font-style: italic; }
</style>
</head>
<body>
<h1>${escapeHtml(heading)}</h1>
<p class="note">Email kept instead of sent, because no SMTP server is configured. Newest first; ${messages.length} shown.</p>
${messages.length === 0 ? empty : items}
</body>
</html>
`
}

function renderMessage(mail: DevMail): string {
  const at = mail.createdAt.toISOString()
  return `<article>
<h2>${escapeHtml(mail.subject)}</h2>
<dl>
<dt>To</dt><dd>${escapeHtml(mail.to)}</dd>
<dt>From</dt><dd>${escapeHtml(mail.from)}</dd>
<dt>Time</dt><dd><time datetime="${escapeHtml(at)}">${escapeHtml(at)}</time></dd>
</dl>
<pre>${linkify(mail.text)}</pre>
</article>`
}
