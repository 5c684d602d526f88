/**
 * The Node adapter of realtime: the `upgrade` listener for the platform's HTTP server, with
 * `ws` in noServer mode. A handshake is first run through the platform's own HTTP
 * application as a GET of `/_service/realtime`, so the app edge finds the app, identifies
 * the caller and admits it exactly as it admits any request (the app session cookie, a
 * session JWT or an `svc_app_` token; anonymous on a public app; a private app's admission);
 * a refused handshake is answered with the edge's own status and body (401, 403, 404, …)
 * and never upgraded. The adapter also pings every socket and drops the ones that stop
 * answering (a peer gone without closing).
 */
import type { IncomingMessage } from 'node:http'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import type { RealtimeSocket } from './connection.ts'

export const REALTIME_PATH = '/_service/realtime'

export interface SocketEvents {
  message(text: string): void
  closed(code: number): void
}

export interface NodeUpgradeDeps {
  /** The scheme of handshake URLs (the base URL's). */
  protocol: string
  /** The largest frame a client may send (REALTIME_MAX_MESSAGE_BYTES); `ws` closes the socket with 1009 beyond it. */
  maxPayload: number
  /** Keep-alive pings; a socket that missed one is dropped. Default 30 s; 0: none. */
  pingMs?: number
  /**
   * Runs the handshake request through admission: what to open the socket with, or the
   * response that refuses it.
   */
  admit(request: Request, env: unknown): Promise<{ accept(socket: RealtimeSocket): SocketEvents } | Response>
}

export interface NodeUpgrade {
  /** The HTTP server's `upgrade` listener. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void
  /** Starts the keep-alive pings. */
  start(): void
  close(): void
}

function handshakeHeaders(req: IncomingMessage): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    headers.set(name, Array.isArray(value) ? value.join(', ') : value)
  }
  return headers
}

/** Answers a refused handshake with the response as it is, then closes the connection. */
async function refuse(socket: Duplex, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer())
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? 'Error'}`]
  response.headers.forEach((value, name) => {
    if (name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection') lines.push(`${name}: ${value}`)
  })
  for (const cookie of response.headers.getSetCookie()) lines.push(`set-cookie: ${cookie}`)
  lines.push(`content-length: ${body.length}`, 'connection: close', '', '')
  if (socket.writable) socket.end(Buffer.concat([Buffer.from(lines.join('\r\n')), body]))
  else socket.destroy()
}

function socketOf(ws: WebSocket): RealtimeSocket {
  return {
    send: (text) => ws.send(text),
    close: (code, reason) => ws.close(code, reason.slice(0, 120)),
    terminate: () => ws.terminate(),
    get bufferedAmount() {
      return ws.bufferedAmount
    },
  }
}

/**
 * @example
 * const upgrade = createNodeUpgrade({ protocol: 'http:', maxPayload: 8192, admit })
 * server.on('upgrade', upgrade.upgrade)
 */
export function createNodeUpgrade(deps: NodeUpgradeDeps): NodeUpgrade {
  const wss = new WebSocketServer({ noServer: true, maxPayload: deps.maxPayload, perMessageDeflate: false, clientTracking: true })
  const alive = new WeakSet<WebSocket>()
  const pingMs = deps.pingMs ?? 30_000
  let pinger: ReturnType<typeof setInterval> | null = null

  async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy())
    const path = new URL(req.url ?? '/', 'http://upgrade').pathname
    const notFound = (message: string) =>
      Response.json({ error: { code: 'NOT_FOUND', message } }, { status: 404 })
    if (path !== REALTIME_PATH) return refuse(socket, notFound(`no WebSocket endpoint at ${path}; realtime is at ${REALTIME_PATH}`))
    let request: Request
    try {
      request = new Request(`${deps.protocol}//${req.headers.host ?? ''}${req.url ?? '/'}`, { method: 'GET', headers: handshakeHeaders(req) })
    } catch {
      return refuse(socket, Response.json({ error: { code: 'BAD_REQUEST', message: 'the handshake has no valid Host' } }, { status: 400 }))
    }
    const admitted = await deps.admit(request, { incoming: req })
    if (admitted instanceof Response) return refuse(socket, admitted)
    if (socket.destroyed) return
    wss.handleUpgrade(req, socket, head, (ws) => {
      alive.add(ws)
      ws.on('pong', () => alive.add(ws))
      const events = admitted.accept(socketOf(ws))
      ws.on('message', (data, isBinary) => {
        alive.add(ws)
        if (isBinary) return events.message('')
        events.message(Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.from(data).toString('utf8'))
      })
      ws.on('close', (code) => events.closed(code))
      ws.on('error', () => ws.terminate())
    })
  }

  return {
    upgrade(req, socket, head) {
      upgrade(req, socket, head).catch(() => socket.destroy())
    },
    start() {
      if (pinger || pingMs <= 0) return
      pinger = setInterval(() => {
        for (const ws of wss.clients) {
          if (!alive.has(ws)) {
            ws.terminate()
            continue
          }
          alive.delete(ws)
          ws.ping()
        }
      }, pingMs)
      pinger.unref()
    },
    close() {
      if (pinger) clearInterval(pinger)
      for (const ws of wss.clients) ws.terminate()
      wss.close()
    },
  }
}
