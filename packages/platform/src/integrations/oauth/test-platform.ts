/**
 * Test support for OAuth: a platform built like test/harness.ts but with a given
 * `invokeProvider` (or the real one, with loopback opened to Functions by `allowNet`), master key and clock (two platforms over one database share them, as two
 * processes of one deployment do), and a second platform process over the same PostgreSQL database.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createPlatform } from '../../platform.ts'
import type { ManualClock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { openPostgres } from '../../db/postgres.ts'
import type { TestDb } from '../../../test/test-db.ts'
import { BASE, type Harness } from '../../../test/harness.ts'
import type { InvokeProvider } from '../provider-invocation.ts'

/** A platform over `t` with the fake provider, as harness.ts builds one (it takes no invoker). */
export async function startPlatform(
  t: TestDb,
  input: { invokeProvider?: InvokeProvider; allowNet?: readonly string[]; baseUrl?: string; masterKey: Uint8Array; clock: ManualClock; operatorKey: string; logger: Logger },
): Promise<Harness> {
  const bundlesDir = mkdtempSync(join(tmpdir(), 'service-bundles-'))
  const platform = createPlatform({
    bundlesDir,
    config: { baseUrl: new URL(input.baseUrl ?? BASE), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: true },
    masterKey: input.masterKey, db: t.db, clock: input.clock, logger: input.logger, operatorKey: input.operatorKey,
    ...(input.invokeProvider ? { invokeProvider: input.invokeProvider } : {}),
    ...(input.allowNet ? { functionsAllowNet: input.allowNet } : {}),
  })
  const request: Harness['request'] = (path, init = {}) => {
    const { host, token, json, ...rest } = init
    const url = new URL(path, input.baseUrl ?? BASE)
    if (host) url.host = `${host}.${url.host}`
    const headers = new Headers(rest.headers)
    if (token) headers.set('authorization', `Bearer ${token}`)
    if (json !== undefined) headers.set('content-type', 'application/json')
    return platform.fetch(new Request(url, { ...rest, headers, ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}) }))
  }
  return {
    t, platform, clock: input.clock, operatorKey: input.operatorKey, masterKey: input.masterKey, request,
    async createOwner(email, company = 'Acme') {
      const res = await request('/v1/operator/users', { token: input.operatorKey, json: { email, company } })
      if (res.status !== 201) throw new Error(`create owner failed: ${res.status} ${await res.text()}`)
      const body = (await res.json()) as { token: string; user: { id: string } }
      return { token: body.token, userId: body.user.id }
    },
    async close() {
      await platform.close()
      rmSync(bundlesDir, { recursive: true, force: true })
      await t.cleanup()
    },
  }
}


/**
 * Another platform process of `h`'s deployment: its own pool on `h`'s PostgreSQL database, the
 * same master key, operator key and clock, as two processes behind one load balancer have.
 * Closing it closes only its pool. Null on PGlite, whose database one process owns.
 *
 * @example
 * const other = await startSecondProcess(h, { masterKey, logger, allowNet: ['127.0.0.1'] })
 */
export async function startSecondProcess(
  h: Harness,
  input: { masterKey: Uint8Array; logger: Logger; invokeProvider?: InvokeProvider; allowNet?: readonly string[]; baseUrl?: string },
): Promise<Harness | null> {
  if (!h.t.url) return null
  const pool = openPostgres({ url: h.t.url, maxConnections: 4 })
  return startPlatform({ db: pool, cleanup: () => pool.close() }, { ...input, clock: h.clock, operatorKey: h.operatorKey })
}

/** The client the oidc-provider tests register, and their provider apps declare. */
export const OIDC_CLIENT_ID = 'crm-client'

/**
 * The provider app's Functions for the oidc-provider tests, as a provider writes them (bundle
 * files): `functions/swap.ts` and `functions/renew.ts` call the server's token endpoint with
 * the client secret (`CRM_CLIENT_SECRET`); `functions/account.ts`, an operation, calls its
 * `/me` with the access token under the default name.
 */
export function oidcProviderFunctions(issuer: string): Record<string, string> {
  return {
    'functions/token.ts': `import { errors } from '@service/server'
export async function token(params: Record<string, string>, secret: string | null) {
  const res = await fetch('${issuer}/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...params, client_id: '${OIDC_CLIENT_ID}', client_secret: secret ?? '' }),
  })
  const body = await res.json()
  if (res.status !== 200) {
    if (body.error === 'invalid_grant') throw errors.unauthorized('INVALID_GRANT', 'the server refused the grant')
    throw errors.badRequest('TOKEN_REFUSED', 'the server refused: ' + body.error)
  }
  return { accessToken: body.access_token, refreshToken: body.refresh_token, expiresIn: body.expires_in }
}
`,
    'functions/swap.ts': `import { defineFunction, object, optional, string } from '@service/server'
import { token } from './token.ts'
export default defineFunction({
  input: object({ code: string(), redirectUri: string(), codeVerifier: optional(string()) }),
  async handler({ input, secrets, log }) {
    // A careless provider: what it was handed must still reach no log line in plaintext.
    log.info('exchanging code ' + input.code + ' with verifier ' + input.codeVerifier)
    return token({ grant_type: 'authorization_code', code: input.code, redirect_uri: input.redirectUri, code_verifier: input.codeVerifier ?? '' },
      await secrets.get('CRM_CLIENT_SECRET'))
  },
})
`,
    'functions/renew.ts': `import { defineFunction, object, string } from '@service/server'
import { token } from './token.ts'
export default defineFunction({
  input: object({ refreshToken: string() }),
  async handler({ input, secrets, log }) {
    log.info('refreshing with ' + input.refreshToken)
    return token({ grant_type: 'refresh_token', refresh_token: input.refreshToken }, await secrets.get('CRM_CLIENT_SECRET'))
  },
})
`,
    'functions/account.ts': `import { defineFunction, errors, object } from '@service/server'
export default defineFunction({
  input: object({}),
  async handler({ secrets }) {
    const res = await fetch('${issuer}/me', { headers: { authorization: 'Bearer ' + await secrets.get('OAUTH_ACCESS_TOKEN') } })
    if (res.status === 401) throw errors.unauthorized('TOKEN_REJECTED', 'the server rejected the token')
    const body = await res.json()
    return { sub: body.sub }
  },
})
`,
  }
}
