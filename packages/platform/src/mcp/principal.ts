/**
 * Who calls the MCP server: nobody (only the onboarding tools), or a person through an owner
 * API token (`svc_owner_…`, the full surface) or an MCP OAuth access token the person
 * approved in the browser (the full surface, or one app on the focused builder surface).
 * The person is read fresh on every request, as the owner API reads them.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { bearerToken, verifyMcpAccessToken, verifyOwnerToken, type User } from '../identity/index.ts'

/** The whole account, or one app (an exact-app owner agent). */
export type McpScope = { readonly kind: 'person' } | { readonly kind: 'app'; readonly appId: string }

export type Principal =
  | { readonly kind: 'anonymous' }
  | { readonly kind: 'person'; readonly user: User; readonly scope: McpScope }

/** The tools a principal sees: everything, the focused builder surface, or onboarding alone. */
export type Surface = 'full' | 'focused' | 'anonymous'

export function surfaceOf(principal: Principal): Surface {
  if (principal.kind === 'anonymous') return 'anonymous'
  return principal.scope.kind === 'app' ? 'focused' : 'full'
}

/**
 * The principal of an `Authorization` header: anonymous without one, or null when a token
 * was sent that is not valid (the caller answers 401 invalid_token).
 *
 * @example
 * const principal = await resolvePrincipal(deps, c.req.header('authorization'))
 */
export async function resolvePrincipal(
  deps: { db: Db; clock: Clock }, header: string | undefined,
): Promise<Principal | null> {
  if (header === undefined || header.trim() === '') return { kind: 'anonymous' }
  const token = bearerToken(header)
  if (token === null) return null
  const owner = await verifyOwnerToken(deps.db, deps.clock, token)
  if (owner !== null) return { kind: 'person', user: owner.user, scope: { kind: 'person' } }
  const oauth = await verifyMcpAccessToken(deps.db, deps.clock, token)
  if (oauth === null) return null
  return { kind: 'person', user: oauth.user, scope: oauth.appId === null ? { kind: 'person' } : { kind: 'app', appId: oauth.appId } }
}
