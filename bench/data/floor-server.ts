/**
 * The floor any Node HTTP API over this driver can reach on this machine: @hono/node-server
 * and Hono, one route, one prepared primary-key select through the `postgres` driver, the
 * rows as JSON. No app lookup, no authentication, no wrapper. Started by run.ts over IPC:
 * `{ databaseUrl, table }` in, `{ port }` out.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import postgres from 'postgres'

process.once('message', (message: { databaseUrl: string; table: string; connections: number }) => {
  const sql = postgres(message.databaseUrl, { max: message.connections, onnotice: () => {} })
  const text = `select id, category, name, price, created_by, created_at from ${message.table} where id = $1`
  const app = new Hono()
  app.get('/rest/v1/items', async (c) => {
    const id = Number((c.req.query('id') ?? '').replace(/^eq\./, ''))
    return c.json(await sql.unsafe(text, [id], { prepare: true }))
  })
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => process.send?.({ port: info.port }))
  const stop = () => {
    server.close()
    void sql.end({ timeout: 1 }).then(() => process.exit(0))
  }
  process.on('disconnect', stop)
  process.on('message', stop)
})
