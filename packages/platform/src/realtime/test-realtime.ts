/**
 * Realtime tests' shared setup: the harness platform served over real HTTP on a loopback
 * port with its `upgrade` listener (as main.ts does), and `ws` clients that connect to it
 * naming an app origin in the Host header (`<slug>.localhost:8787`, what the harness's base
 * URL makes app origins), with a session cookie, a bearer token or nothing.
 */
import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import WebSocket from 'ws'
import type { Harness } from '../../test/harness.ts'
import type { CookieClient } from '../../test/cookie-client.ts'

export interface Served {
  port: number
  close(): Promise<void>
}

/** Serves the harness's platform on a free loopback port, upgrades included, and starts realtime. */
export async function serveRealtime(h: Harness): Promise<Served> {
  const server = serve({ fetch: (request, env) => h.platform.fetch(request, env), port: 0, hostname: '127.0.0.1' }) as Server
  server.on('upgrade', h.platform.realtime.upgrade)
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
  await h.platform.realtime.start()
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }),
  }
}

/** A loopback port that was free a moment ago (for a child platform process to serve on). */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise<void>((resolve) => probe.close(() => resolve()))
  return port
}

/** The `Cookie` header the browser would send to the app origin. */
export function cookieHeader(browser: CookieClient, slug: string): string {
  return [...browser.cookies(`${slug}.localhost:8787`)].map(([name, cookie]) => `${name}=${cookie.value}`).join('; ')
}

export interface Frame {
  type: string
  [field: string]: any
}

export interface TestClient {
  ws: WebSocket
  frames: Frame[]
  /** The next frame (from the start of the buffer) matching `match`, waiting up to `timeoutMs`. */
  next(match: (frame: Frame) => boolean, timeoutMs?: number): Promise<Frame>
  /** Asserts that no frame matching `match` arrives within `ms`. */
  none(match: (frame: Frame) => boolean, ms?: number): Promise<void>
  send(message: unknown): void
  /** Sends a join and waits for its answer (joined, or an error frame with the same ref). */
  join(channel: string, config?: unknown, resume?: number | null): Promise<Frame>
  /** Resolves with the close code once the socket has closed. */
  closed: Promise<number>
  close(): void
}

let refs = 0

/**
 * Opens a realtime socket to the app; rejects with `{ status, body }` when the handshake is refused.
 *
 * @example
 * const alice = await connect(served, 'notes', { cookie: cookieHeader(browser, 'notes'), origin: appUrl('notes') })
 */
export function connect(
  served: Served,
  slug: string,
  options: { cookie?: string; token?: string; origin?: string; path?: string } = {},
): Promise<TestClient> {
  const headers: Record<string, string> = { host: `${slug}.localhost:8787` }
  if (options.cookie) headers['cookie'] = options.cookie
  if (options.token) headers['authorization'] = `Bearer ${options.token}`
  if (options.origin) headers['origin'] = options.origin
  const ws = new WebSocket(`ws://127.0.0.1:${served.port}${options.path ?? '/_service/realtime'}`, { headers })
  const frames: Frame[] = []
  const waiters = new Set<() => void>()
  ws.on('message', (data) => {
    frames.push(JSON.parse(String(data)) as Frame)
    for (const wake of [...waiters]) wake()
  })
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)))
  const client: TestClient = {
    ws,
    frames,
    next(match, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const at = frames.findIndex(match)
          if (at === -1) return false
          const [frame] = frames.splice(at, 1)
          waiters.delete(look)
          clearTimeout(timer)
          resolve(frame!)
          return true
        }
        const timer = setTimeout(() => {
          waiters.delete(look)
          reject(new Error(`no matching frame within ${timeoutMs} ms; frames: ${JSON.stringify(frames).slice(0, 2000)}`))
        }, timeoutMs)
        if (!look()) waiters.add(look)
      })
    },
    async none(match, ms = 300) {
      await new Promise((resolve) => setTimeout(resolve, ms))
      const found = frames.find(match)
      assert.equal(found, undefined, `unexpected frame: ${JSON.stringify(found)}`)
    },
    send(message) {
      ws.send(JSON.stringify(message))
    },
    async join(channel, config, resume) {
      const ref = String(++refs)
      client.send({ type: 'join', ref, channel, ...(config === undefined ? {} : { config }), ...(resume === undefined || resume === null ? {} : { resume }) })
      return client.next((frame) => frame.ref === ref && (frame.type === 'joined' || frame.type === 'error'))
    },
    closed,
    close() {
      ws.close()
    },
  }
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client))
    ws.once('unexpected-response', (_request, response) => {
      let body = ''
      response.on('data', (chunk: Buffer) => (body += chunk.toString()))
      response.on('end', () => reject(Object.assign(new Error(`handshake refused: ${response.statusCode}`), { status: response.statusCode, body })))
    })
    ws.once('error', (error) => reject(error))
  })
}

/** A refused handshake's status and parsed body. */
export async function refused(attempt: Promise<TestClient>): Promise<{ status: number; body: any }> {
  try {
    const client = await attempt
    client.close()
  } catch (error) {
    const { status, body } = error as { status?: number; body?: string }
    if (status === undefined) throw error
    return { status, body: body ? JSON.parse(body) : null }
  }
  assert.fail('the handshake was accepted')
}
