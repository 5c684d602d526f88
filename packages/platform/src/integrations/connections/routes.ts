/**
 * The owner API of connections: metadata only, never a value or the webhook URL.
 * - `GET /v1/connections?limit=&nextCursor=`: the caller's personal connections and their
 *   organisation's connections, newest first;
 * - `GET /v1/connections/:id`: one of them;
 * - `DELETE /v1/connections/:id`: removal, by someone who manages it.
 * Creating a connection and replacing its credentials are page-only (pages.ts): entering
 * credential values is always a person's action in a browser.
 */
import { Hono } from 'hono'
import type { Db } from '../../db/db.ts'
import type { Clock } from '../../lib/clock.ts'
import type { Logger } from '../../lib/logger.ts'
import { ServiceError } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { HostUrls } from '../../http/hosts.ts'
import { requireOwner, type OwnerEnv } from '../../identity/index.ts'
import { findConnection, listConnections, removeConnection, seesConnection, type Connection } from './connections.ts'
import { STATUS_TEXT, connectionPageUrl } from './pages.ts'

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 100

/** What the owner API shows of a connection. */
export function connectionView(connection: Connection, urls: HostUrls) {
  return {
    id: connection.id,
    integration: connection.integration,
    providerApp: { id: connection.providerAppId, slug: connection.providerAppSlug },
    kind: connection.kind,
    label: connection.label,
    status: connection.status,
    statusText: STATUS_TEXT[connection.status],
    statusReason: connection.statusReason,
    statusChangedAt: connection.statusChangedAt.toISOString(),
    createdAt: connection.createdAt.toISOString(),
    updatedAt: connection.updatedAt.toISOString(),
    /** The page where the people who manage it see its webhook URL and replace its credentials. */
    manageUrl: connectionPageUrl(urls, connection.id),
  }
}

function encodeCursor(connection: Connection): string {
  return Buffer.from(JSON.stringify([connection.createdAt.toISOString(), connection.id])).toString('base64url')
}

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[]
    const at = new Date(String(createdAt))
    if (typeof createdAt === 'string' && typeof id === 'string' && !Number.isNaN(at.getTime()) && isUuid(id)) return { createdAt: at, id }
  } catch { /* reported below */ }
  throw new ServiceError('VALIDATION_FAILED', 'nextCursor is not a cursor this API returned', { details: { field: 'nextCursor' } })
}

function readLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT
  const limit = Number(raw)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw new ServiceError('VALIDATION_FAILED', `limit is a whole number from 1 to ${MAX_LIMIT}`, { details: { field: 'limit' } })
  }
  return limit
}

export function connectionRoutes(deps: { db: Db; clock: Clock; logger: Logger; urls: HostUrls }) {
  const routes = new Hono<OwnerEnv>()
  routes.use('*', requireOwner({ db: deps.db, clock: deps.clock }))

  routes.get('/', async (c) => {
    const limit = readLimit(c.req.query('limit'))
    const cursor = c.req.query('nextCursor')
    const rows = await listConnections(deps.db, { actor: c.get('user'), limit: limit + 1, after: cursor ? decodeCursor(cursor) : null })
    const page = rows.slice(0, limit)
    return c.json({
      connections: page.map((connection) => connectionView(connection, deps.urls)),
      nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!) : null,
    })
  })

  routes.get('/:id', async (c) => {
    const connection = await findConnection(deps.db, c.req.param('id'))
    if (!connection || !seesConnection(c.get('user'), connection)) {
      throw new ServiceError('CONNECTION_NOT_FOUND', 'there is no connection you can see with this id')
    }
    return c.json({ connection: connectionView(connection, deps.urls) })
  })

  routes.delete('/:id', async (c) => {
    const id = c.req.param('id')
    await removeConnection(deps.db, { actor: c.get('user'), id })
    deps.logger.info('connection removed', { connectionId: id })
    return c.body(null, 204)
  })

  return routes
}
