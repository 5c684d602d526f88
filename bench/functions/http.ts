/**
 * Warm Function calls through the platform's real HTTP server and through the internal call
 * path (`FunctionHost.run`, the path jobs and cron take), beside their floors measured in
 * the same run:
 *
 * - platform: `createPlatform` on PGlite in memory, served by @hono/node-server on loopback
 *   as `main.ts` serves it; an app deployed like any other with a `public` Function `echo`
 *   (anonymous SDK call) and a `user` Function `echoUser` (called with an `svc_app_` token,
 *   acting as the owner, as a script would);
 * - HTTP floor: one Hono route on @hono/node-server that forwards the JSON body to a bare Deno
 *   echo loop over a pipe and answers its line: an HTTP hop plus a Deno round trip, nothing
 *   of the platform;
 * - internal floor: the same bare Deno echo round trip without HTTP (pool.ts measures it too).
 *
 * Requests are sequential over one keep-alive connection, so p50 is the cost of one call.
 */
import { randomBytes } from 'node:crypto'
import { Agent, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { migratePlatform } from '../../packages/platform/src/db/migrate.ts'
import { openPglite } from '../../packages/platform/src/db/pglite.ts'
import { createAppToken } from '../../packages/platform/src/identity/app-tokens/app-tokens.ts'
import { systemClock } from '../../packages/platform/src/lib/clock.ts'
import { newSecret } from '../../packages/platform/src/lib/crypto.ts'
import { silentLogger } from '../../packages/platform/src/lib/logger.ts'
import { createPlatform } from '../../packages/platform/src/platform.ts'
import { findAppBySlug } from '../../packages/platform/src/apps/apps.ts'
import { bundle, manifest } from '../../packages/platform/test/harness.ts'
import type { EchoChild } from './echo-child.ts'

const SLUG = 'fnbench'

const FILES = {
  'functions/echo.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ text: string() }), handler: ({ input }) => ({ text: input.text }) })`,
  'functions/echo-user.ts': `
    import { defineFunction, object, string } from '@service/server'
    export default defineFunction({ input: object({ text: string() }), handler: ({ input, user }) => ({ text: input.text, user: user?.id ?? null }) })`,
}

const MANIFEST_FUNCTIONS = `functions:
  - name: echo
    entrypoint: functions/echo.ts
    access: public
  - name: echoUser
    entrypoint: functions/echo-user.ts
    access: user
`

export interface HttpTarget {
  readonly port: number
  readonly host: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
}

/** One POST over a keep-alive agent; resolves with the status after reading the whole body. */
function post(agent: Agent, target: HttpTarget, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      agent, host: '127.0.0.1', port: target.port, method: 'POST', path: target.path,
      headers: { host: target.host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...target.headers },
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Sequential timed calls after a warm-up; throws on any answer other than 200. */
export async function timedCalls(call: () => Promise<void>, warmup: number, calls: number): Promise<number[]> {
  for (let index = 0; index < warmup; index += 1) await call()
  const samples: number[] = []
  for (let index = 0; index < calls; index += 1) {
    const started = performance.now()
    await call()
    samples.push(performance.now() - started)
  }
  return samples
}

function httpCall(agent: Agent, target: HttpTarget): () => Promise<void> {
  const body = JSON.stringify({ text: 'hi' })
  return async () => {
    const { status, text } = await post(agent, target, body)
    if (status !== 200) throw new Error(`POST ${target.host}${target.path}: ${status} ${text.slice(0, 300)}`)
  }
}

export interface PlatformUnderTest {
  readonly anonymous: () => Promise<void>
  readonly appToken: () => Promise<void>
  readonly internal: () => Promise<void>
  close(): Promise<void>
}

/** Starts the platform, deploys the bench app and returns one call of each kind. */
export async function startPlatform(): Promise<PlatformUnderTest> {
  const db = await openPglite()
  await migratePlatform(db)
  let handler: ((request: Request) => Promise<Response>) | undefined
  const { port, close: closeServer } = await listen((request) => handler ? handler(request) : Promise.resolve(new Response('starting', { status: 503 })))
  const operatorKey = newSecret('svc_operator_')
  const platform = createPlatform({
    config: { baseUrl: new URL(`http://localhost:${port}`), production: true, smtpUrl: null, mailFrom: 'Bench <no-reply@localhost>', registration: false },
    db, clock: systemClock, logger: silentLogger, operatorKey, masterKey: new Uint8Array(randomBytes(32)),
  })
  handler = platform.fetch
  const base = `localhost:${port}`
  const control = async (path: string, token: string, json: unknown): Promise<Record<string, unknown>> => {
    const res = await platform.fetch(new Request(`http://${base}${path}`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', host: base }, body: JSON.stringify(json),
    }))
    const text = await res.text()
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${text.slice(0, 500)}`)
    return JSON.parse(text) as Record<string, unknown>
  }
  const owner = await control('/v1/operator/users', operatorKey, { email: 'owner@fnbench.test', company: 'Bench' })
  const ownerToken = owner.token as string
  const ownerId = (owner.user as { id: string }).id
  await control('/v1/apps', ownerToken, { slug: SLUG, visibility: 'public' })
  await control(`/v1/apps/${SLUG}/deployments`, ownerToken, bundle({ 'service.yaml': manifest(SLUG, MANIFEST_FUNCTIONS), ...FILES }))
  const app = await findAppBySlug(db, SLUG)
  if (!app) throw new Error('the bench app was not created')
  const { secret } = await createAppToken(db, systemClock, { appId: app.id, name: 'bench', createdBy: ownerId })

  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const host = `${SLUG}.${base}`
  const fn = await platform.functions.resolve(app, 'echo')
  if (!fn) throw new Error('echo is not in the active release')
  return {
    anonymous: httpCall(agent, { port, host, path: '/_service/functions/echo', headers: { 'x-service-sdk': '1' } }),
    appToken: httpCall(agent, { port, host, path: '/_service/functions/echoUser', headers: { authorization: `Bearer ${secret}` } }),
    internal: async () => {
      const result = await platform.functions.run(fn, { input: { text: 'hi' }, user: null })
      if (!result.ok) throw new Error(`internal call failed: ${JSON.stringify(result.error)}`)
    },
    async close() {
      agent.destroy()
      await platform.close()
      await closeServer()
      await db.close()
    },
  }
}

/** The HTTP floor: a bare Hono route that forwards the body to the Deno echo child. */
export async function startFloor(echo: EchoChild): Promise<{ call: () => Promise<void>; close(): Promise<void> }> {
  const app = new Hono()
  app.post('/echo', async (c) => c.body(await echo.call(await c.req.json()), 200, { 'content-type': 'application/json' }))
  const { port, close } = await listen(app.fetch)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  return {
    call: httpCall(agent, { port, host: `127.0.0.1:${port}`, path: '/echo', headers: {} }),
    async close() {
      agent.destroy()
      await close()
    },
  }
}

function listen(fetch: (request: Request) => Promise<Response> | Response): Promise<{ port: number; close: () => Promise<void> }> {
  return new Promise((resolve) => {
    const server = serve({ fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => resolve({
      port: info.port,
      close: () => new Promise<void>((done) => server.close(() => done())),
    }))
  })
}
