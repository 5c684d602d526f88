/** Request-body reading shared by the HTTP routes: JSON only, size-limited, typed errors. */
import type { Context } from 'hono'
import { ServiceError } from '../lib/errors.ts'

/** Reads the body as JSON, refusing bodies over `maxBytes` before parsing them. */
export async function readJson(c: Context, maxBytes = 1024 * 1024): Promise<unknown> {
  const declared = Number(c.req.header('content-length') ?? '0')
  if (declared > maxBytes) throw tooLarge(maxBytes)
  const text = await c.req.text()
  if (Buffer.byteLength(text) > maxBytes) throw tooLarge(maxBytes)
  if (text.length === 0) return {}
  try {
    return JSON.parse(text)
  } catch {
    throw new ServiceError('BAD_REQUEST', 'the request body must be JSON')
  }
}

function tooLarge(maxBytes: number) {
  return new ServiceError('BODY_TOO_LARGE', `the request body may be at most ${maxBytes} bytes`)
}

/** A JSON object body, or BAD_REQUEST. */
export async function readObject(c: Context, maxBytes?: number): Promise<Record<string, unknown>> {
  const body = await readJson(c, maxBytes)
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ServiceError('BAD_REQUEST', 'the request body must be a JSON object')
  }
  return body as Record<string, unknown>
}
