/**
 * What a principal may reach before the domain's own rules apply: a person for every tool but
 * onboarding, and for an app-scoped token its one app. The domain functions then apply
 * exactly the owner API's authority (identity's appForRole and the rest) to that person.
 */
import { ServiceError } from '../lib/errors.ts'
import { findAppByIdOrSlug } from '../apps/apps.ts'
import type { User } from '../identity/index.ts'
import type { ToolContext } from './tool.ts'

/** The person calling; UNAUTHENTICATED without one. */
export function personOf(context: ToolContext): User {
  if (context.principal.kind !== 'person') throw new ServiceError('UNAUTHENTICATED', 'this tool needs an access token: connect with OAuth or an owner API token')
  return context.principal.user
}

/**
 * The person calling, after checking that an app-scoped token names its own app: any other
 * app (existing or not, so nothing leaks) fails TOKEN_SCOPE_MISMATCH.
 *
 * @example
 * const user = await personOnApp(context, input.appId)
 * const app = await appForRole(db, user, input.appId, 'edit')
 */
export async function personOnApp(context: ToolContext, appId: string): Promise<User> {
  const user = personOf(context)
  const scope = context.principal.kind === 'person' ? context.principal.scope : null
  if (scope?.kind === 'app') {
    const app = await findAppByIdOrSlug(context.deps.db, appId)
    if (app === null || app.id !== scope.appId) {
      throw new ServiceError('TOKEN_SCOPE_MISMATCH', 'this access token is for one app only, and not this one', { details: { appId: appId.slice(0, 64) } })
    }
  }
  return user
}

/** The app an app-scoped principal is confined to, or null for the whole account. */
export function scopedAppId(context: ToolContext): string | null {
  return context.principal.kind === 'person' && context.principal.scope.kind === 'app' ? context.principal.scope.appId : null
}
