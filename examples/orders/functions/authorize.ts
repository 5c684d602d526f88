// The demo authorization page (GET /oauth/authorize): what a person sees at the external
// system when they connect. "Approve" sends the browser back to the platform's callback with
// a signed code and the platform's state; "Deny" with error=access_denied.
import { defineFunction, errors, object } from '@service/server'
import { CLIENT_SECRET, issueCode } from './demo-oauth.ts'

const escape = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;')

export default defineFunction({
  input: object({}),
  async handler({ http, secrets }) {
    if (!http) throw errors.badRequest('AUTHORIZE_REQUEST_INVALID', 'Open this page in a browser: GET /oauth/authorize')
    const redirectUri = http.query.get('redirect_uri')
    const state = http.query.get('state')
    const challenge = http.query.get('code_challenge')
    if (!redirectUri || !state || !challenge || http.query.get('code_challenge_method') !== 'S256') {
      throw errors.badRequest('AUTHORIZE_REQUEST_INVALID', 'redirect_uri, state and an S256 code_challenge are required')
    }
    if (!/^https?:\/\//.test(redirectUri)) throw errors.badRequest('AUTHORIZE_REQUEST_INVALID', 'redirect_uri must be an http(s) URL')
    const code = await issueCode(await secrets.require(CLIENT_SECRET), { redirectUri, challenge })
    const approve = new URL(redirectUri)
    approve.searchParams.set('code', code)
    approve.searchParams.set('state', state)
    const deny = new URL(redirectUri)
    deny.searchParams.set('error', 'access_denied')
    deny.searchParams.set('state', state)
    const html = `<!doctype html>
<meta charset="utf-8">
<title>Demo shop: allow access?</title>
<h1>Demo shop</h1>
<p>An app of your platform asks to read and manage your orders (scope: ${escape(http.query.get('scope') ?? '')}).</p>
<p><a id="approve" href="${escape(approve.href)}">Approve</a> &nbsp; <a id="deny" href="${escape(deny.href)}">Deny</a></p>
`
    return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } })
  },
})
