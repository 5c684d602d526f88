/**
 * One client's socket as the realtime hub sees it: who opened it (the edge's admission), the
 * channels it joined, a bounded send buffer (a client that stops reading is closed, never
 * waited for, so it cannot stall the others or grow the platform's memory) and its message
 * rate limit.
 */
import { randomUUID } from 'node:crypto'
import type { ChangeSubscriber } from './change-feed.ts'
import { CLOSE } from './protocol.ts'

/** The socket itself, as the Node adapter (node-upgrade.ts) hands it over. */
export interface RealtimeSocket {
  send(text: string): void
  close(code: number, reason: string): void
  /** Drops the connection without a closing handshake. */
  terminate(): void
  /** Bytes accepted by `send` and not yet written to the network. */
  readonly bufferedAmount: number
}

/** Who opened the socket, as the edge admitted them. */
export interface Admission {
  app: { id: string; slug: string; ownerId: string; visibility: string }
  /** The app's origin on this request (`<slug>.<base domain>` or a custom domain). */
  origin: string
  user: { id: string; email: string } | null
  via: 'anonymous' | 'session' | 'access_token' | 'app_token'
}

/** What re-checking the socket's authority replays: the handshake's credentials. */
export interface Credential {
  url: string
  headers: Record<string, string>
  /** A bearer access token's expiry (epoch ms), when it was opened with one. */
  expiresAt: number | null
}

export interface JoinedChannel {
  name: string
  topic: string
  private: boolean
  broadcastSelf: boolean
  subscribers: ChangeSubscriber[]
  /** This socket's presence in the channel, once it tracked some state. */
  presenceRef: string | null
  /** Presence events held back until the join's state sync is sent (so none is lost or undone by it). */
  presencePending: string[] | null
}

export interface ConnectionLimits {
  maxBufferedBytes: number
  /** How long the send buffer may stay over `maxBufferedBytes` before the socket is closed. */
  slowGraceMs: number
  messagesPerSecond: number
  maxChannels: number
}

export interface Connection {
  readonly id: string
  readonly admission: Admission
  readonly credential: Credential
  readonly channels: Map<string, JoinedChannel>
  readonly closed: boolean
  /** Sends a frame; false (and the socket closed, code 4408) when the client is not reading. */
  sendText(text: string): boolean
  send(message: unknown): boolean
  close(code: number, reason: string): void
  /** Takes one message from the rate limit; 'ok', 'refused' (answer with an error) or 'closed' (far over it). */
  take(nowMs: number): 'ok' | 'refused' | 'closed'
  /** Runs the socket's messages one at a time, in order. */
  serial(task: () => Promise<void>): Promise<void>
  /** Told once, when the socket has closed for any reason. */
  onClosed(listener: (code: number) => void): void
  /** Called by the adapter when the socket closed. */
  closedBy(code: number): void
  readonly stats: { sent: number; closedSlow: boolean }
}

/** Grace for a closing handshake before the socket is dropped (a client that does not read never answers). */
const CLOSE_GRACE_MS = 1000

export function createConnection(input: { socket: RealtimeSocket; admission: Admission; credential: Credential; limits: ConnectionLimits }): Connection {
  const { socket, limits } = input
  let closed = false
  const listeners: ((code: number) => void)[] = []
  let tokens = limits.messagesPerSecond
  let refilledAt = 0
  let refusedInSecond = 0
  let secondStarted = 0
  let chain: Promise<void> = Promise.resolve()
  const stats = { sent: 0, closedSlow: false }
  /** Since when (monotonic ms) the send buffer has been over the bound; null while under it. */
  let overSince: number | null = null

  const connection: Connection = {
    id: randomUUID(),
    admission: input.admission,
    credential: input.credential,
    channels: new Map(),
    get closed() {
      return closed
    },
    stats,
    sendText(text) {
      if (closed) return false
      // A burst may go over the bound for a moment (a batch of changes is queued whole); a
      // socket that stays over it for the grace, or holds eight times the bound, is not
      // reading. Real time, not the platform's clock: this is about the network draining.
      const buffered = socket.bufferedAmount
      if (buffered <= limits.maxBufferedBytes) {
        overSince = null
      } else {
        const now = performance.now()
        overSince ??= now
        if (now - overSince > limits.slowGraceMs || buffered > limits.maxBufferedBytes * 8) {
          stats.closedSlow = true
          connection.close(CLOSE.tooSlow, 'the client is not reading its socket')
          return false
        }
      }
      socket.send(text)
      stats.sent++
      return true
    },
    send(message) {
      return connection.sendText(JSON.stringify(message))
    },
    close(code, reason) {
      if (closed) return
      closed = true
      try {
        socket.close(code, reason)
      } catch {
        socket.terminate()
      }
      setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref()
      for (const listener of listeners.splice(0)) listener(code)
    },
    take(nowMs) {
      if (nowMs - secondStarted >= 1000 || nowMs < secondStarted) {
        secondStarted = nowMs
        refusedInSecond = 0
      }
      tokens = Math.min(limits.messagesPerSecond, tokens + (Math.max(0, nowMs - refilledAt) / 1000) * limits.messagesPerSecond)
      refilledAt = nowMs
      if (tokens >= 1) {
        tokens -= 1
        return 'ok'
      }
      refusedInSecond++
      return refusedInSecond > limits.messagesPerSecond * 2 ? 'closed' : 'refused'
    },
    serial(task) {
      const run = chain.then(() => (closed ? undefined : task()))
      chain = run.catch(() => {})
      return run
    },
    onClosed(listener) {
      if (closed) listener(CLOSE.normal)
      else listeners.push(listener)
    },
    closedBy(code) {
      if (closed) return
      closed = true
      for (const listener of listeners.splice(0)) listener(code)
    },
  }
  return connection
}
