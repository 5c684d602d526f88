/**
 * The Functions host's side of provider-invocation.ts: runs a provider app's Function for
 * an integration as a `system` invocation of the app's ACTIVE production release, with
 * `ctx.integration` set and the invocation's secrets overlay (connection values, an OAuth
 * access token) readable through `ctx.secrets.get(NAME)` before the provider's own secrets
 * and redacted like them (host.ts). Its outcome becomes a ProviderResult: typed 4xx and 503
 * errors keep their status, code, message and details; a timeout is `timeout`; anything
 * else (an untyped throw, an invalid return, an import failure, a crash, an app that is not
 * active or lacks the Function) is `failed`, with a message for the platform's logs only.
 */
import type { Db } from '../db/db.ts'
import { findAppByIdOrSlug } from '../apps/apps.ts'
import type { InvokeProvider, ProviderResult } from './provider-invocation.ts'
import type { FunctionHost } from '../functions/host.ts'

/**
 * @example
 * const invokeProvider = createProviderInvoker({ db, host: () => functions })
 * const result = await invokeProvider({ providerAppId, functionName: 'listOrders', input, integration, secrets, mayEmit: false, timeoutMs: 25_000 })
 */
export function createProviderInvoker(deps: { db: Db; host: () => FunctionHost }): InvokeProvider {
  return async (invocation): Promise<ProviderResult> => {
    // The broker passes the provider app it read in its one statement; others are read here.
    const app = invocation.providerApp?.id === invocation.providerAppId ? invocation.providerApp : await findAppByIdOrSlug(deps.db, invocation.providerAppId)
    if (!app || app.status !== 'active') return { ok: false, kind: 'failed', message: 'the provider app is not active' }
    const host = deps.host()
    const fn = await host.resolve(app, invocation.functionName)
    if (!fn || fn.declaration.access !== 'system') {
      return { ok: false, kind: 'failed', message: `the provider's active release has no system Function ${invocation.functionName}` }
    }
    const result = await host.run(fn, {
      input: invocation.input,
      user: null,
      // The caller's limit (25 seconds for operations), or the Function's own when shorter; a fixed one (sync's 15 minutes) as it is.
      timeoutMs: invocation.fixedTimeout ? invocation.timeoutMs : Math.min(invocation.timeoutMs, fn.declaration.timeoutSeconds * 1000),
      integration: {
        context: invocation.integration, secrets: invocation.secrets, mayEmit: invocation.mayEmit,
        ...(invocation.redact === undefined ? {} : { redact: invocation.redact }),
      },
      ...(invocation.requestId === undefined ? {} : { requestId: invocation.requestId }),
    })
    if (result.ok) return { ok: true, value: result.value }
    const failure = result.error
    if (failure.kind === 'timeout') return { ok: false, kind: 'timeout' }
    if (failure.kind === 'service' && ((failure.status >= 400 && failure.status < 500) || failure.status === 503)) {
      return {
        ok: false,
        kind: 'typed',
        error: { status: failure.status, code: failure.code, message: failure.message, ...(failure.details === undefined ? {} : { details: failure.details }) },
      }
    }
    return { ok: false, kind: 'failed', message: failure.message }
  }
}
