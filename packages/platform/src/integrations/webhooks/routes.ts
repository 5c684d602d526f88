/**
 * `POST {base_url}/v1/hooks/{token}` (spec 4.1, 6.2): a connection's secret webhook URL
 * (connections/pages.ts `webhookUrl`). Everything under `/v1/hooks` is answered here, so no
 * other handler (the not-found renderer, the error renderer) ever sees or logs the token:
 * - another method: 405 `METHOD_NOT_ALLOWED` with `Allow: POST`, before anything is read;
 * - a body over 256 KiB: 413 `BODY_TOO_LARGE`, before any lookup (body.ts);
 * - then the receiver (webhooks.ts); an unexpected failure is a 503 the sender retries,
 *   logged without the path.
 * Answers are JSON with `cache-control: no-store`.
 */
import { Hono } from 'hono'
import { coerceError } from '../../lib/errors.ts'
import { requestIdOf } from '../../http/request-id.ts'
import { METHOD_NOT_ALLOWED, TOO_LARGE, UNAVAILABLE, type SenderAnswer } from './answers.ts'
import { MAX_WEBHOOK_BODY_BYTES, readBoundedBody } from './body.ts'
import { createWebhookReceiver, type WebhookDeps } from './webhooks.ts'

/** Where the routes are mounted (platform.ts) and the token starts. */
export const WEBHOOK_PATH_PREFIX = '/v1/hooks'

function respond(answer: SenderAnswer, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...headers },
  })
}

/**
 * @example
 * base.route(WEBHOOK_PATH_PREFIX, webhookRoutes({ db, clock, logger, keyring, invokeProvider, accessToken }))
 */
export function webhookRoutes(deps: WebhookDeps): Hono {
  const receiver = createWebhookReceiver(deps)
  const app = new Hono()
  app.all('*', async (c) => {
    const receivedAt = deps.clock.now()
    if (c.req.method !== 'POST') return respond(METHOD_NOT_ALLOWED, { allow: 'POST' })
    const requestId = requestIdOf(c.req.raw)
    try {
      const body = await readBoundedBody(c.req.raw, MAX_WEBHOOK_BODY_BYTES)
      if (body === 'too_large') return respond(TOO_LARGE)
      const path = new URL(c.req.url).pathname
      const token = path.startsWith(`${WEBHOOK_PATH_PREFIX}/`) ? path.slice(WEBHOOK_PATH_PREFIX.length + 1) : ''
      return respond(await receiver.receive({
        token, method: c.req.method, headers: c.req.raw.headers, body, receivedAt, ...(requestId === undefined ? {} : { requestId }),
      }))
    } catch (error) {
      deps.logger.warn('webhook: the request failed', { requestId, error: coerceError(error).message.slice(0, 500) })
      return respond(UNAVAILABLE)
    }
  })
  return app
}
