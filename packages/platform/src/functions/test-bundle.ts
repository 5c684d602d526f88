/**
 * Test support for the Functions runtime (used by the *.test.ts files beside it and the
 * pool benchmark): writes Function fixtures into a temporary bundle directory and builds
 * a pool over it with a fresh Deno cache, a recording logger and a recording
 * `onContextCall`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../lib/logger.ts'
import { createFunctionPool, type ContextCall, type FunctionPool, type FunctionPoolOptions, type InvocationMeta } from './pool.ts'

/** The SDK entry the pool maps `@service/server` to. */
export const SDK_ENTRY = fileURLToPath(new URL('../../../server-sdk/src/index.ts', import.meta.url))

/** A temporary directory holding `files` (bundle-relative path to source text). */
export function writeBundle(files: Readonly<Record<string, string>>): string {
  const root = mkdtempSync(join(tmpdir(), 'service-functions-'))
  const bundleDir = join(root, 'bundle')
  for (const [path, text] of Object.entries(files)) {
    const full = join(bundleDir, path)
    mkdirSync(dirname(full), { recursive: true })
    writeFileSync(full, text)
  }
  mkdirSync(bundleDir, { recursive: true })
  return bundleDir
}

/** Removes a bundle made by `writeBundle` (and the Deno cache beside it). */
export function removeBundle(bundleDir: string): void {
  rmSync(dirname(bundleDir), { recursive: true, force: true })
}

export interface LogLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error'
  readonly message: string
  readonly fields: Record<string, unknown> | undefined
}

export function recordingLogger(): Logger & { readonly lines: LogLine[] } {
  const lines: LogLine[] = []
  const at = (level: LogLine['level']) => (message: string, fields?: Record<string, unknown>) => {
    lines.push({ level, message, fields })
  }
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

/** Invocation metadata for a signed-in user (or anonymous with `user: null`). */
export function metaFor(overrides: Partial<InvocationMeta> = {}): InvocationMeta {
  return {
    requestId: 'req-test',
    environment: 'development',
    user: { id: 'user-1' },
    job: null,
    http: null,
    integration: null,
    ...overrides,
  }
}

export interface TestPool extends FunctionPool {
  /** Every context call the pool passed to `onContextCall`, in order. */
  readonly calls: ContextCall[]
  readonly logger: Logger & { readonly lines: LogLine[] }
}

/**
 * A pool over `bundleDir` with its Deno cache beside the bundle. Context calls are
 * recorded and answered by `answer` (default: null).
 */
export function testPool(
  bundleDir: string,
  options: Partial<Omit<FunctionPoolOptions, 'onContextCall' | 'logger'>> & { answer?: (call: ContextCall) => unknown } = {},
): TestPool {
  const calls: ContextCall[] = []
  const logger = recordingLogger()
  const { answer, ...rest } = options
  const pool = createFunctionPool({
    bundleDir,
    sdkEntry: SDK_ENTRY,
    size: 1,
    denoDir: join(dirname(bundleDir), 'deno-cache'),
    timeoutMs: 10_000,
    ...rest,
    logger,
    async onContextCall(call) {
      calls.push(call)
      return answer ? await answer(call) : null
    },
  })
  return { ...pool, calls, logger }
}
