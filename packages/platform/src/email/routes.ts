/**
 * The development mailbox over HTTP, mounted at `{base_url}/_dev/mail`: `GET /` lists
 * stored messages as JSON, `GET /view` renders them as an HTML page. Both take `?to=` and
 * `?limit=`. In production mode neither exists: every path answers 404 NOT_FOUND, so a
 * production platform never exposes mail (which carries sign-in links) on the web.
 */
import { Hono, type Context } from 'hono'
import type { Db } from '../db/db.ts'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import { newNonce, pageHeaders } from '../lib/html.ts'
import { renderDevMailPage } from './dev-mail-page.ts'
import { DEV_MAIL_MAX_LIMIT, listDevMail, type DevMail } from './dev-mailbox.ts'

/**
 * @example
 * base.route('/_dev/mail', devMailRoutes({ db, production: config.production }))
 */
export function devMailRoutes(deps: { db: Db; production: boolean }): Hono {
  const routes = new Hono()
  if (deps.production) {
    routes.all('*', (c) => {
      const { status, body } = toErrorBody(
        new ServiceError('NOT_FOUND', `no route for ${c.req.method} ${new URL(c.req.url).pathname}`),
      )
      return c.json(body, status as 404)
    })
    return routes
  }

  routes.get('/', async (c) => {
    const messages = await listDevMail(deps.db, mailboxQuery(c))
    c.header('cache-control', 'no-store')
    return c.json({ messages: messages.map(devMailView) })
  })

  routes.get('/view', async (c) => {
    const query = mailboxQuery(c)
    const messages = await listDevMail(deps.db, query)
    // No scripts and no forms: the page's one style element carries the response's nonce.
    const nonce = newNonce()
    const headers = { ...pageHeaders({ nonce, formAction: "'none'" }), 'referrer-policy': 'no-referrer' }
    return c.body(renderDevMailPage(messages, { to: query.to ?? null, nonce }), 200, headers)
  })

  return routes
}

/** The JSON shape of one stored message. */
export function devMailView(mail: DevMail) {
  return {
    id: mail.id,
    to: mail.to,
    from: mail.from,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    createdAt: mail.createdAt.toISOString(),
  }
}

function mailboxQuery(c: Context): { to?: string; limit?: number } {
  const query: { to?: string; limit?: number } = {}
  const to = c.req.query('to')?.trim()
  if (to) query.to = to
  const limit = c.req.query('limit')
  if (limit !== undefined && limit !== '') {
    if (!/^\d+$/.test(limit) || Number(limit) < 1) {
      throw new ServiceError('BAD_REQUEST', `limit must be a whole number from 1 to ${DEV_MAIL_MAX_LIMIT}`, {
        details: { field: 'limit' },
      })
    }
    // Larger values are clamped to the maximum rather than refused.
    query.limit = Number(limit)
  }
  return query
}
