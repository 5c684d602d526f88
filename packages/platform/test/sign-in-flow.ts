/** Steps of the email-link sign-in, driven through CookieClient, shared by identity tests. */
import assert from 'node:assert/strict'
import { latestDevMailTo } from '../src/email/index.ts'
import { bundle, manifest, type Harness } from './harness.ts'
import { CookieClient, field } from './cookie-client.ts'

export const AUTH = 'http://auth.localhost:8787'
export const appUrl = (slug: string) => `http://${slug}.localhost:8787`

/** Submits the sign-in form; returns the request id and the emailed link. */
export async function requestLink(b: CookieClient, email: string, next = '/') {
  const html = await (await b.fetch(`${AUTH}/sign-in?continue=${encodeURIComponent(next)}`)).text()
  const res = await b.post(`${AUTH}/sign-in`, { csrf: field(html, 'csrf'), continue: field(html, 'continue'), email })
  assert.equal(res.status, 303)
  const requestId = new URL(res.headers.get('location')!, AUTH).searchParams.get('r')!
  const mail = await latestDevMailTo(b.h.t.db, email)
  const link = /http:\/\/auth\.localhost:8787\/confirm\?\S+/.exec(mail!.text)![0]
  return { requestId, link }
}

/** Opens the link's review page and presses Approve, as a person does. */
export async function approve(b: CookieClient, link: string): Promise<Response> {
  const review = await b.fetch(link)
  assert.equal(review.status, 200)
  const html = await review.text()
  return b.post(`${AUTH}/confirm`, { r: field(html, 'r'), t: field(html, 't') })
}

/** The initiating window's claim (what its polling script submits). */
export async function claim(b: CookieClient, requestId: string): Promise<Response> {
  const html = await (await b.fetch(`${AUTH}/sign-in/wait?r=${requestId}`)).text()
  return b.post(`${AUTH}/sign-in/claim`, { csrf: field(html, 'csrf'), r: requestId })
}

/** A fresh browser signed in at the auth host (a central session) as `email`, by email link. */
export async function signedInBrowser(h: Harness, email: string): Promise<CookieClient> {
  const b = new CookieClient(h)
  const { requestId, link } = await requestLink(b, email)
  assert.equal((await approve(b, link)).status, 200)
  assert.equal((await claim(b, requestId)).status, 303)
  return b
}

/** Signs a browser in with an email link and follows it into an app page. */
export async function signInTo(b: CookieClient, slug: string, email: string, path = '/') {
  let first = await b.visit(appUrl(slug) + path)
  // A public app does not redirect; its sign-in starts at the SDK's sign-in URL.
  if (!first.hops.at(-1)!.startsWith(`${AUTH}/sign-in`)) first = await b.visit(`${appUrl(slug)}/_service/auth/sign-in`)
  const signInPage = first.hops.at(-1)!
  const next = new URL(signInPage).searchParams.get('continue') ?? '/'
  const { requestId, link } = await requestLink(b, email, next)
  assert.equal((await approve(b, link)).status, 200)
  const claimed = await claim(b, requestId)
  assert.equal(claimed.status, 303)
  return b.visit(new URL(claimed.headers.get('location')!, AUTH).toString())
}

/** Creates and deploys a one-page app for an owner token. */
export async function deployPage(h: Harness, token: string, slug: string, visibility: 'public' | 'private', text = `page of ${slug}`) {
  assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility } })).status, 201)
  const res = await h.request(`/v1/apps/${slug}/deployments`, {
    token, json: bundle({ 'service.yaml': manifest(slug, '', visibility), 'public/index.html': text }),
  })
  assert.equal(res.status, 201)
}
