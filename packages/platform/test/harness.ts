/**
 * An in-process platform for integration tests: a test database, a manual clock, the real
 * HTTP application called through `fetch(Request)`, and shortcuts for the operator and
 * owner API calls most tests start with.
 */
import { createPlatform, type Platform } from '../src/platform.ts'
import { ManualClock } from '../src/lib/clock.ts'
import { createLogger, silentLogger, type Logger, type LogLevel } from '../src/lib/logger.ts'
import { newSecret } from '../src/lib/crypto.ts'
import { randomBytes } from 'node:crypto'
import type { PlatformDeps } from '../src/platform.ts'
import type { AiSettings } from '../src/config.ts'
import { createTestDb, type TestDb } from './test-db.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const BASE = 'http://localhost:8787'

export interface Harness {
  t: TestDb
  platform: Platform
  clock: ManualClock
  operatorKey: string
  /** The platform's master key: another process over the same database must use it too, as production's processes do. */
  masterKey: Uint8Array
  /** Sends a request to a host of the platform: base (default), auth, or an app slug. */
  request(path: string, init?: RequestInit & { host?: string; token?: string; json?: unknown }): Promise<Response>
  /** Creates a confirmed user in a company and returns its owner token. */
  createOwner(email: string, company?: string): Promise<{ token: string; userId: string }>
  close(): Promise<void>
}

/** `TEST_LOG=debug|info|warn|error`: the test platforms log at that level on stderr; else nothing. */
function testLogger(): Logger {
  const level = process.env.TEST_LOG
  if (!level) return silentLogger
  if (!LEVELS.includes(level as LogLevel)) throw new Error(`TEST_LOG: one of ${LEVELS.join(', ')}, not ${level}`)
  return createLogger({ level: level as LogLevel })
}
const LEVELS: LogLevel[] = ['debug', 'info', 'warn', 'error']

export async function startHarness(existing?: TestDb, overrides: Partial<Pick<PlatformDeps, 'mailer' | 'sessions' | 'logger' | 'files' | 'push' | 'email' | 'realtime'>> & { registration?: boolean; baseUrl?: string; ai?: AiSettings; masterKey?: Uint8Array } = {}): Promise<Harness> {
  const t = existing ?? (await createTestDb())
  const clock = new ManualClock('2026-11-21T12:00:00Z')
  const operatorKey = newSecret('svc_operator_')
  const masterKey = overrides.masterKey ?? new Uint8Array(randomBytes(32))
  const bundlesDir = mkdtempSync(join(tmpdir(), 'service-bundles-'))
  const platform = createPlatform({
    bundlesDir,
    config: { baseUrl: new URL(overrides.baseUrl ?? BASE), production: false, smtpUrl: null, mailFrom: 'Service <no-reply@localhost>', registration: overrides.registration ?? true, ...(overrides.ai ? { ai: overrides.ai } : {}) },
    masterKey,
    ...(overrides.mailer ? { mailer: overrides.mailer } : {}),
    ...(overrides.sessions ? { sessions: overrides.sessions } : {}),
    ...(overrides.files ? { files: overrides.files } : {}),
    ...(overrides.push ? { push: overrides.push } : {}),
    ...(overrides.email ? { email: overrides.email } : {}),
    ...(overrides.realtime ? { realtime: overrides.realtime } : {}),
    db: t.db,
    clock,
    logger: overrides.logger ?? testLogger(),
    operatorKey,
  })
  const base = new URL(overrides.baseUrl ?? BASE)
  const request: Harness['request'] = (path, init = {}) => {
    const { host, token, json, ...rest } = init
    const url = new URL(path, base)
    if (host) url.host = `${host}.${base.host}`
    const headers = new Headers(rest.headers)
    if (token) headers.set('authorization', `Bearer ${token}`)
    if (json !== undefined) headers.set('content-type', 'application/json')
    return platform.fetch(new Request(url, {
      ...rest,
      headers,
      ...(json !== undefined ? { body: JSON.stringify(json), method: rest.method ?? 'POST' } : {}),
    }))
  }
  return {
    t,
    platform,
    clock,
    operatorKey,
    masterKey,
    request,
    async createOwner(email, company = 'Acme') {
      const res = await request('/v1/operator/users', { token: operatorKey, json: { email, company } })
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
 * One owner API call as `token`: the status, the raw text and the parsed JSON body (null
 * when empty).
 */
export async function ownerApi(h: Harness, token: string, method: string, path: string, json?: unknown): Promise<{ status: number; text: string; body: any }> {
  const res = await h.request(path, { method, token, ...(json === undefined ? {} : { json }) })
  const text = await res.text()
  return { status: res.status, text, body: text ? JSON.parse(text) : null }
}

/** A bundle upload body from a map of path -> text content. */
export function bundle(files: Record<string, string>): { files: { path: string; content: string }[] } {
  return { files: Object.entries(files).map(([path, text]) => ({ path, content: Buffer.from(text).toString('base64') })) }
}

export function manifest(slug: string, extra = '', visibility: 'public' | 'private' = 'public'): string {
  return `schemaVersion: 3
app:
  id: ${slug}
  visibility: ${visibility}
runtime:
  sdk:
    version: 2.6.0
${extra}`
}
