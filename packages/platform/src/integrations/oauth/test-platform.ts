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
