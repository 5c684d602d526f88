/**
 * Who may call a Function over HTTP (`POST {app_url}/_service/functions/<name>`, or a
 * schema-3 Function route), from its manifest `access` and the caller the edge identified:
 * - `public`: anyone; a signed-in caller's identity is passed on.
 * - `user`: a signed-in caller (app session cookie, bearer JWT, or an `svc_app_` token,
 *   which acts as the app's owner); anonymous callers get 401 AUTH_REQUIRED.
 * - `system`: never over HTTP. It answers 404 FUNCTION_NOT_FOUND exactly like an unknown
 *   name, so the names of an app's system Functions are not revealed to its users.
 * Callers without a bearer token (cookie or nothing) must look like the same-origin SDK:
 * `x-service-sdk: 1` and, when sent, an `Origin` equal to the app's (as sign-out checks);
 * a custom header cannot be sent cross-site without CORS, so a form on another site cannot
 * run a Function with the person's cookie.
 *
 * Routes are for plain HTTP clients too (links, forms, webhooks), so they do not ask for the
 * SDK header. GET and HEAD are safe methods and pass. A state-changing route request
 * (POST, PUT, PATCH, DELETE) that carries the app session cookie must show it comes from
 * the app's own origin: `Sec-Fetch-Site`, when sent, is `same-origin`; `Origin`, when sent,
 * is the app's; and at least one of them (or `x-service-sdk: 1`) is sent. Other apps of the
 * platform are same-site sibling origins, so the Lax cookie alone would not stop them.
 * Anonymous requests carry no authority to borrow and pass, so a third party's webhook works.
 */
import type { FunctionAccess } from '../manifest/index.ts'

export type CallerVia = 'anonymous' | 'session' | 'access_token' | 'app_token'

export interface AccessInput {
  readonly access: FunctionAccess
  readonly signedIn: boolean
  readonly via: CallerVia
  /** The request's `Origin` and `x-service-sdk` headers, and the app's origin. */
  readonly origin: string | undefined
  readonly sdkHeader: string | undefined
  readonly appOrigin: string
  /** For a route invocation: the request method and its `Sec-Fetch-Site` header. */
  readonly route?: { readonly method: string; readonly fetchSite: string | undefined }
}

const SAFE_METHODS = new Set(['GET', 'HEAD'])

export type AccessVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly status: 401 | 403 | 404; readonly code: 'AUTH_REQUIRED' | 'FORBIDDEN' | 'FUNCTION_NOT_FOUND'; readonly message: string }

/**
 * @example
 * const verdict = functionAccess({ access: 'user', signedIn: false, via: 'anonymous', origin, sdkHeader: '1', appOrigin })
 * // { allowed: false, status: 401, code: 'AUTH_REQUIRED', ... }
 */
export function functionAccess(input: AccessInput, name: string): AccessVerdict {
  if (input.access === 'system') return notFound(name)
  const bearer = input.via === 'access_token' || input.via === 'app_token'
  if (input.route !== undefined) {
    if (input.via === 'session' && !SAFE_METHODS.has(input.route.method) && !fromAppOrigin(input, input.route.fetchSite)) {
      return { allowed: false, status: 403, code: 'FORBIDDEN', message: `a signed-in ${input.route.method} to this route must come from the app's own pages (or use a bearer token)` }
    }
  } else if (!bearer && ((input.origin !== undefined && input.origin !== input.appOrigin) || input.sdkHeader !== '1')) {
    return { allowed: false, status: 403, code: 'FORBIDDEN', message: 'Functions answer same-origin SDK calls (x-service-sdk: 1) or bearer tokens only' }
  }
  if (input.access === 'user' && !input.signedIn) {
    return { allowed: false, status: 401, code: 'AUTH_REQUIRED', message: `Sign in to call ${name}` }
  }
  return { allowed: true }
}

/** A browser request sent by the app's own pages: no foreign evidence, and some evidence. */
function fromAppOrigin(input: AccessInput, fetchSite: string | undefined): boolean {
  if (fetchSite !== undefined && fetchSite !== 'same-origin') return false
  if (input.origin !== undefined && input.origin !== input.appOrigin) return false
  return fetchSite !== undefined || input.origin !== undefined || input.sdkHeader === '1'
}

/** The answer for a name the app does not expose over HTTP. */
export function notFound(name: string): AccessVerdict & { allowed: false } {
  return { allowed: false, status: 404, code: 'FUNCTION_NOT_FOUND', message: `This app has no Function named ${name}` }
}
