/** Custom domains in tests: a platform administrator's token, and sign-in on a custom domain through CookieClient. */
import assert from 'node:assert/strict'
import type { Harness } from './harness.ts'
import type { CookieClient } from './cookie-client.ts'
import { AUTH, approve, claim, requestLink } from './sign-in-flow.ts'

/** `http://<domain>:8787`: a custom domain's origin under the harness's base URL. */
export const customOrigin = (domain: string) => `http://${domain}:8787`

/** Creates a confirmed platform administrator and returns its owner token. */
export async function createPlatformAdmin(h: Harness, email = 'ops@platform.test'): Promise<string> {
  const res = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email, company: 'Platform', platformAdmin: true } })
  assert.equal(res.status, 201, await res.clone().text())
  return ((await res.json()) as { token: string }).token
}

/** The callback URL a custom-domain handoff page goes on to (its Refresh header). */
export function handoffTarget(response: Response): string {
  const refresh = response.headers.get('refresh') ?? ''
  const target = /^0;url=(.+)$/.exec(refresh)?.[1]
  assert.ok(target, `a handoff page with a Refresh header, not ${response.status} "${refresh}"`)
  return target
}

/**
 * Signs a browser in by email link from a page of a private app on a custom domain (which
 * redirects to the central sign-in) and follows the handoff back; returns the landing.
 */
export async function signInOnDomain(b: CookieClient, pageUrl: string, email: string) {
  const start = await b.visit(pageUrl)
  const signInPage = start.hops.at(-1)!
  assert.ok(signInPage.startsWith(`${AUTH}/sign-in`), `redirected to sign-in, not ${signInPage}`)
  const { requestId, link } = await requestLink(b, email, new URL(signInPage).searchParams.get('continue')!)
  assert.equal((await approve(b, link)).status, 200)
  const claimed = await claim(b, requestId)
  assert.equal(claimed.status, 303)
  const handoff = await b.visit(new URL(claimed.headers.get('location')!, AUTH).toString())
  return { start, handoff, landed: await b.visit(handoffTarget(handoff.response)) }
}
