/**
 * Realtime (issue 20): one WebSocket per browser page at `{app_url}/_service/realtime`,
 * admitted by the app edge like any request, carrying channels of three kinds of traffic:
 *
 * - row changes of the app's tables (change-feed.ts), each delivered only to subscribers
 *   whose identity may read the row under row-level security, checked before delivery;
 * - broadcast messages between the app's clients, across processes (relay.ts);
 * - presence: who is in a channel, with join, leave and a state sync on joining.
 *
 * A socket's authority is re-checked while it is open (authority.ts); a socket that stops
 * reading is closed (connection.ts). The protocol is in protocol.ts and docs/api.md.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { RealtimeSettings } from '../config.ts'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError, toErrorBody } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'
import type { NamespaceSql } from '../namespaces/namespace-sql.ts'
import { createAuthority, type CheckOutcome } from './authority.ts'
import { createChangeFeed, type ChangeFeed, type ChangeFeedOptions, type ChangeIdentity, type ChangeSubscriber, type DeliveredChange } from './change-feed.ts'
import { createConnection, type Admission, type Connection, type Credential, type JoinedChannel } from './connection.ts'
import { createNodeUpgrade, REALTIME_PATH, type SocketEvents } from './node-upgrade.ts'
import { channelPresence, deletePresence, refreshPresence, sweepPresence, upsertPresence } from './presence-queries.ts'
import { CLOSE, parseClientMessage, ProtocolError, type ClientMessage } from './protocol.ts'
import { decodeNotice, encodeNotice, RELAY_CHANNEL, sendNotice, type RelayNotice } from './relay.ts'
import { addressOf } from '../http/client-address.ts'
import { createRealtimeTables, type RealtimeTables } from './tables.ts'

/** config.ts's defaults, for callers (tests) that give none. */
export type { RealtimeSettings }

export const DEFAULT_REALTIME_SETTINGS: RealtimeSettings = Object.freeze({
  maxMessageBytes: 6000,
  messagesPerSecond: 50,
  maxBufferedBytes: 1024 * 1024,
  revalidateSeconds: 30,
  resumeSeconds: 300,
  maxConnections: 10_000,
  maxConnectionsPerClient: 1000,
})

/** Channels one socket may join at once. */
export const MAX_CHANNELS = 100
/** The largest presence state, as JSON. */
export const MAX_PRESENCE_STATE_BYTES = 1024

/** What the edge hands over once it has admitted a handshake. */
export interface RealtimeTarget {
  app: { id: string; slug: string; ownerId: string; visibility: string }
  caller: { user: { id: string; email: string } | null; via: Admission['via'] }
  origin: string
}

export interface RealtimeDeps {
  db: Db
  clock: Clock
  logger: Logger
  /** The data API's path for app SQL: visibility checks run through it as each subscriber. */
  sql: NamespaceSql
  settings: RealtimeSettings
  /** The scheme of app origins (the base URL's). */
  protocol: string
  /** Runs a handshake through the platform's HTTP application (the edge admits it, and logs it). */
  admit(request: Request, env: unknown): Promise<Response>
  /** Runs a re-check of a socket's credentials through the edge, without a request log line. */
  recheck(request: Request): Promise<Response>
  /** The NOTIFY channel of app changes (APP_CHANGED): sockets are re-checked when it speaks. */
  appChangedChannel: string
  /** Signs and verifies the relay's notices between processes (relay.ts); derived from the master key. */
  relayKey: Uint8Array
  /** SERVICE_TRUST_PROXY: a handshake's client address is the last X-Forwarded-For entry (http/client-address.ts). */
  trustProxy?: boolean
  /** Change feed tuning (tests: no poll, a short retention). */
  feed?: Partial<ChangeFeedOptions>
  /** Keep-alive ping interval of the sockets. Default 30 s. */
  pingMs?: number
  /** How long a socket's send buffer may stay over REALTIME_MAX_BUFFERED_KB before it is closed. Default 2 s. */
  slowGraceMs?: number
}

export interface Realtime {
  /** The edge's answer to an admitted `/_service/realtime` request (a handshake in progress, else 426). */
  handle(request: Request, target: RealtimeTarget): Response
  /** The Node HTTP server's `upgrade` listener (main.ts: `server.on('upgrade', platform.realtime.upgrade)`). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void
  /** Listens for change notices and starts the timers (main.ts; tests). */
  start(): Promise<void>
  /** Closes every socket (1001: reconnect elsewhere), stops listening. */
  stop(): Promise<void>
  /** Re-checks every socket's authority now (a timer does it every REALTIME_REVALIDATE_SECONDS). */
  recheck(): Promise<void>
  /** The row-change feed (tests call `poll()`). */
  changes: ChangeFeed
  tables: RealtimeTables
  stats(): { connections: number; closedSlow: number; sent: number }
}

interface Pending {
  admitted: Admission | null
}

/** A JWT's `exp` (epoch ms), read without verifying: the edge verified it. */
function tokenExpiry(authorization: string | null): number | null {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1]
  if (!token || token.startsWith('svc_')) return null
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }
    return typeof payload.exp === 'number' ? payload.exp * 1000 : null
  } catch {
    return null
  }
}

/** The handshake headers that decide admission, kept to replay it. */
const CREDENTIAL_HEADERS = ['host', 'cookie', 'authorization', 'origin', 'x-forwarded-for', 'x-forwarded-proto']

export function createRealtime(deps: RealtimeDeps): Realtime {
  const { db, logger, settings } = deps
  const processId = randomUUID()
  const pendings = new WeakMap<Request, Pending>()
  const connections = new Set<Connection>()
  /** Sockets held per client address (REALTIME_MAX_CONNECTIONS_PER_CLIENT). */
  const perClient = new Map<string, number>()
  /** Sockets in each topic (`<app>:<public|private>:<channel>`), with their channel. */
  const topics = new Map<string, Map<Connection, JoinedChannel>>()
  const namespaces = new Map<string, Namespace>()
  const tables = createRealtimeTables({ db, clock: deps.clock })
  const changes = createChangeFeed({ db, sql: deps.sql, logger, retentionSeconds: settings.resumeSeconds, ...deps.feed })
  let closedSlow = 0
  let sent = 0
  let started = false
  let stopping = false
  const unlisten: (() => Promise<void>)[] = []
  let presenceTimer: ReturnType<typeof setInterval> | null = null
  let tablesTimer: ReturnType<typeof setInterval> | null = null

  async function checkCredential(credential: Credential): Promise<CheckOutcome> {
    const request = new Request(credential.url, { method: 'GET', headers: credential.headers })
    const pending: Pending = { admitted: null }
    pendings.set(request, pending)
    const response = await deps.recheck(request)
    if (pending.admitted) return { admitted: pending.admitted }
    const body = (await response.json().catch(() => null)) as { error?: { code?: unknown } } | null
    return { status: response.status, code: typeof body?.error?.code === 'string' ? body.error.code : null }
  }

  const authority = createAuthority({
    clock: deps.clock, logger, check: checkCredential, connections: () => connections,
    intervalMs: settings.revalidateSeconds * 1000,
  })

  async function namespaceOf(appId: string): Promise<Namespace> {
    let namespace = namespaces.get(appId)
    if (!namespace) {
      const found = await findNamespace(db, appId)
      if (!found) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no database yet; deploy it first')
      namespace = found
      namespaces.set(appId, namespace)
    }
    return namespace
  }

  function identityOf(connection: Connection, namespace: Namespace): ChangeIdentity {
    const { app, user } = connection.admission
    // The data API's claims for the same caller (data-api/handler.ts; an app token acts as the app's owner).
    return user
      ? { key: `${app.id}:${user.id}`, namespace, claims: { sub: user.id, role: 'authenticated', email: user.email, aud: app.id } }
      : { key: `${app.id}:anon`, namespace, claims: { role: 'anon', aud: app.id } }
  }

  function errorFrame(error: unknown, context: { ref?: string | null; channel?: string }): Record<string, unknown> {
    const ref = context.ref ?? (error instanceof ProtocolError ? error.ref : null)
    const base = { type: 'error', ...(ref ? { ref } : {}), ...(context.channel ? { channel: context.channel } : {}) }
    if (error instanceof ProtocolError) return { ...base, code: 'REALTIME_MESSAGE_INVALID', message: error.message }
    if (!(error instanceof ServiceError)) logger.error('realtime message failed', { error: String(error) })
    const { body } = toErrorBody(error)
    return { ...base, code: body.error.code, message: body.error.message, ...(body.error.details === undefined ? {} : { details: body.error.details }) }
  }

  /** A change's frame for a channel's subscription, serialised once for all the sockets that get the same. */
  const changeFrames = new WeakMap<DeliveredChange, Map<string, string>>()
  function changeFrame(change: DeliveredChange, channel: string, subscription: string): string {
    let texts = changeFrames.get(change)
    if (!texts) changeFrames.set(change, (texts = new Map()))
    const key = `${subscription}\u0000${channel}`
    let text = texts.get(key)
    if (text === undefined) {
      text = JSON.stringify({ type: 'change', channel, subscription, ...change })
      texts.set(key, text)
    }
    return text
  }

  function members(topic: string): Map<Connection, JoinedChannel> {
    let set = topics.get(topic)
    if (!set) topics.set(topic, (set = new Map()))
    return set
  }

  /** Sends a frame to the channel's sockets here; `except` is the sender when it did not ask for its own. */
  function fanOut(topic: string, text: string, except: Connection | null): void {
    for (const connection of topics.get(topic)?.keys() ?? []) {
      if (connection !== except && connection.sendText(text)) sent++
    }
  }

  function presenceFanOut(topic: string, frame: (channel: JoinedChannel) => string): void {
    for (const [connection, channel] of topics.get(topic) ?? []) {
      const text = frame(channel)
      if (channel.presencePending) channel.presencePending.push(text)
      else if (connection.sendText(text)) sent++
    }
  }

  function deliverNotice(notice: RelayNotice): void {
    switch (notice.kind) {
      case 'broadcast':
        fanOut(notice.topic, JSON.stringify({ type: 'broadcast', channel: notice.channel, event: notice.event, payload: notice.payload }), null)
        return
      case 'join':
        presenceFanOut(notice.topic, (channel) => JSON.stringify({ type: 'presence', channel: channel.name, event: 'join', key: notice.key, ref: notice.ref, state: notice.state }))
        return
      case 'leave':
        presenceFanOut(notice.topic, (channel) => JSON.stringify({ type: 'presence', channel: channel.name, event: 'leave', key: notice.key, ref: notice.ref }))
        return
    }
  }

  /** Delivers here and tells the other processes; false when the notice is too large to relay. */
  async function relay(notice: RelayNotice, except: Connection | null): Promise<boolean> {
    const text = encodeNotice(deps.relayKey, processId, notice)
    if (text === null) return false
    if (notice.kind === 'broadcast') {
      fanOut(notice.topic, JSON.stringify({ type: 'broadcast', channel: notice.channel, event: notice.event, payload: notice.payload }), except)
    } else {
      deliverNotice(notice)
    }
    await sendNotice(db, text).catch((error: unknown) => logger.warn('realtime relay notice failed', { error: String(error) }))
    return true
  }

  async function untrack(connection: Connection, channel: JoinedChannel): Promise<void> {
    const ref = channel.presenceRef
    if (!ref) return
    channel.presenceRef = null
    await deletePresence(db, [ref])
    const { app, user } = connection.admission
    await relay({ kind: 'leave', appId: app.id, topic: channel.topic, channel: channel.name, key: user ? user.id : `anon:${connection.id}`, ref }, null)
  }

  async function leave(connection: Connection, channel: JoinedChannel): Promise<void> {
    connection.channels.delete(channel.name)
    changes.remove(channel.subscribers)
    const set = topics.get(channel.topic)
    set?.delete(connection)
    if (set?.size === 0) topics.delete(channel.topic)
    await untrack(connection, channel)
  }

  async function join(connection: Connection, message: Extract<ClientMessage, { type: 'join' }>): Promise<void> {
    const { app, user } = connection.admission
    if (connection.channels.has(message.channel)) {
      throw new ServiceError('REALTIME_ALREADY_JOINED', `this socket has already joined "${message.channel}"; leave it first`)
    }
    if (connection.channels.size >= MAX_CHANNELS) {
      throw new ServiceError('REALTIME_TOO_MANY_CHANNELS', `a socket may join at most ${MAX_CHANNELS} channels at once`)
    }
    if (message.config.private && !user) {
      throw new ServiceError('AUTH_REQUIRED', 'private channels are for signed-in users: sign in first')
    }
    const channel: JoinedChannel = {
      name: message.channel,
      topic: `${app.id}:${message.config.private ? 'private' : 'public'}:${message.channel}`,
      private: message.config.private,
      broadcastSelf: message.config.broadcastSelf,
      subscribers: [],
      presenceRef: null,
      presencePending: [],
    }
    // Changes are held back until the join is answered, then sent in order.
    let held: string[] | null = []
    const emit = (text: string) => {
      if (held) held.push(text)
      else if (connection.sendText(text)) sent++
    }
    if (message.config.changes.length > 0) {
      const namespace = await namespaceOf(app.id)
      const identity = identityOf(connection, namespace)
      for (const spec of message.config.changes) {
        const table = await tables.prepare(namespace, spec.table, spec.filter)
        const subscriber: ChangeSubscriber = {
          identity, table, events: spec.events, filter: spec.filter,
          deliver: (change: DeliveredChange) => emit(changeFrame(change, channel.name, spec.id)),
          missed: (position) => emit(JSON.stringify({ type: 'gap', channel: channel.name, position })),
        }
        channel.subscribers.push(subscriber)
      }
    }
    if (connection.closed) return
    connection.channels.set(channel.name, channel)
    members(channel.topic).set(connection, channel)
    const { position, gap } = await changes.add(channel.subscribers, message.resume)
    if (connection.closed || connection.channels.get(channel.name) !== channel) {
      changes.remove(channel.subscribers)
      return
    }
    connection.send({ type: 'joined', ref: message.ref, channel: channel.name, position, gap })
    for (const text of held) connection.sendText(text)
    held = null
    const present = await channelPresence(db, { appId: app.id, topic: channel.topic })
    const state: Record<string, { ref: string; state: Record<string, unknown> }[]> = {}
    for (const row of present) (state[row.key] ??= []).push({ ref: row.ref, state: row.state })
    connection.send({ type: 'presence', channel: channel.name, event: 'sync', state })
    for (const text of channel.presencePending ?? []) connection.sendText(text)
    channel.presencePending = null
  }

  async function handleMessage(connection: Connection, message: ClientMessage): Promise<void> {
    const { app, user } = connection.admission
    const joined = (name: string) => {
      const channel = connection.channels.get(name)
      if (!channel) throw new ServiceError('REALTIME_NOT_JOINED', `join "${name}" first`)
      return channel
    }
    switch (message.type) {
      case 'join':
        return join(connection, message)
      case 'leave': {
        const channel = connection.channels.get(message.channel)
        if (channel) await leave(connection, channel)
        connection.send({ type: 'left', ref: message.ref, channel: message.channel })
        return
      }
      case 'broadcast': {
        const channel = joined(message.channel)
        const relayed = await relay({
          kind: 'broadcast', appId: app.id, topic: channel.topic, channel: channel.name, event: message.event, payload: message.payload,
        }, channel.broadcastSelf ? null : connection)
        if (!relayed) {
          throw new ServiceError('REALTIME_MESSAGE_TOO_LARGE', 'the broadcast is too large to relay between processes; send less', {
            details: { maxBytes: settings.maxMessageBytes },
          })
        }
        if (message.ref) connection.send({ type: 'sent', ref: message.ref, channel: channel.name })
        return
      }
      case 'track': {
        const channel = joined(message.channel)
        const state = JSON.stringify(message.state)
        if (Buffer.byteLength(state) > MAX_PRESENCE_STATE_BYTES) {
          throw new ServiceError('REALTIME_MESSAGE_TOO_LARGE', `a presence state is at most ${MAX_PRESENCE_STATE_BYTES} bytes of JSON`)
        }
        const ref = channel.presenceRef ?? randomUUID()
        const key = user ? user.id : `anon:${connection.id}`
        await upsertPresence(db, { ref, appId: app.id, topic: channel.topic, key, state: message.state, processId })
        channel.presenceRef = ref
        if (connection.closed || connection.channels.get(channel.name) !== channel) {
          await deletePresence(db, [ref])
          return
        }
        await relay({ kind: 'join', appId: app.id, topic: channel.topic, channel: channel.name, key, ref, state: message.state }, null)
        if (message.ref) connection.send({ type: 'tracked', ref: message.ref, channel: channel.name, key })
        return
      }
      case 'untrack': {
        await untrack(connection, joined(message.channel))
        if (message.ref) connection.send({ type: 'untracked', ref: message.ref, channel: message.channel })
        return
      }
      case 'ping':
        connection.send({ type: 'pong', ...(message.ref ? { ref: message.ref } : {}) })
        return
    }
  }

  function accept(admission: Admission, credential: Credential, client: string) {
    return (socket: Parameters<typeof createConnection>[0]['socket']): SocketEvents => {
      const connection = createConnection({
        socket, admission, credential,
        limits: { maxBufferedBytes: settings.maxBufferedBytes, slowGraceMs: deps.slowGraceMs ?? 2000, messagesPerSecond: settings.messagesPerSecond, maxChannels: MAX_CHANNELS },
      })
      connections.add(connection)
      perClient.set(client, (perClient.get(client) ?? 0) + 1)
      authority.watch(connection)
      let refusedAt = 0
      connection.onClosed(() => {
        connections.delete(connection)
        const held = (perClient.get(client) ?? 1) - 1
        if (held > 0) perClient.set(client, held)
        else perClient.delete(client)
        if (connection.stats.closedSlow) closedSlow++
        const channels = [...connection.channels.values()]
        for (const channel of channels) {
          leave(connection, channel).catch((error: unknown) => logger.warn('realtime leave failed', { error: String(error) }))
        }
      })
      return {
        message(text) {
          const taken = connection.take(deps.clock.now().getTime())
          if (taken === 'closed') return connection.close(CLOSE.rateLimited, 'far over the message rate limit')
          if (taken === 'refused') {
            // One error a second at most: the refusals themselves must not flood the client.
            const now = deps.clock.now().getTime()
            if (now - refusedAt >= 1000 || now < refusedAt) {
              refusedAt = now
              connection.send({ type: 'error', code: 'RATE_LIMITED', message: `at most ${settings.messagesPerSecond} messages a second; this one was dropped` })
            }
            return
          }
          let message: ClientMessage
          try {
            message = parseClientMessage(text)
          } catch (error) {
            connection.send(errorFrame(error, {}))
            return
          }
          void connection.serial(async () => {
            try {
              await handleMessage(connection, message)
            } catch (error) {
              const ref = 'ref' in message ? message.ref : null
              connection.send(errorFrame(error, { ref, ...('channel' in message ? { channel: message.channel } : {}) }))
            }
          })
        },
        closed(code) {
          connection.closedBy(code)
        },
      }
    }
  }

  const node = createNodeUpgrade({
    protocol: deps.protocol,
    maxPayload: settings.maxMessageBytes,
    ...(deps.pingMs === undefined ? {} : { pingMs: deps.pingMs }),
    async admit(request, env) {
      if (stopping || !started) {
        return Response.json({ error: { code: 'REALTIME_UNAVAILABLE', message: 'realtime is not running on this process; try again' } }, { status: 503 })
      }
      if (connections.size >= settings.maxConnections) {
        return Response.json({ error: { code: 'REALTIME_UNAVAILABLE', message: 'this process holds as many realtime sockets as it may; try again' } }, { status: 503 })
      }
      // One client must not take the process's sockets from every other app's clients.
      const client = addressOf(request.headers, () => (env as { incoming?: IncomingMessage }).incoming?.socket.remoteAddress, deps.trustProxy ?? false)
      if ((perClient.get(client) ?? 0) >= settings.maxConnectionsPerClient) {
        return Response.json({ error: { code: 'RATE_LIMITED', message: `this client holds ${settings.maxConnectionsPerClient} realtime sockets, as many as one may; close some first` } },
          { status: 429 })
      }
      const pending: Pending = { admitted: null }
      pendings.set(request, pending)
      const response = await deps.admit(request, env)
      if (!pending.admitted) return response
      const headers: Record<string, string> = {}
      for (const name of CREDENTIAL_HEADERS) {
        const value = request.headers.get(name)
        if (value !== null) headers[name] = value
      }
      const credential: Credential = { url: request.url, headers, expiresAt: tokenExpiry(request.headers.get('authorization')) }
      return { accept: accept(pending.admitted, credential, client) }
    },
  })

  return {
    handle(request, target) {
      const pending = pendings.get(request)
      if (!pending) throw new ServiceError('UPGRADE_REQUIRED', `${REALTIME_PATH} is a WebSocket: connect with one`)
      // A browser sends the session cookie with any page's WebSocket, even another app's on
      // a sibling origin: a socket opened with the cookie must come from the app's own pages.
      const origin = request.headers.get('origin')
      if (target.caller.via === 'session' && origin !== null && origin !== target.origin) {
        throw new ServiceError('FORBIDDEN', 'a signed-in realtime socket may be opened by the app\'s own pages only')
      }
      pending.admitted = {
        app: { id: target.app.id, slug: target.app.slug, ownerId: target.app.ownerId, visibility: target.app.visibility },
        origin: target.origin,
        user: target.caller.user ? { id: target.caller.user.id, email: target.caller.user.email } : null,
        via: target.caller.via,
      }
      return new Response(null, { status: 204 })
    },

    upgrade: (req, socket, head) => node.upgrade(req, socket, head),

    async start() {
      if (started) return
      started = true
      await changes.start()
      unlisten.push(await db.listen(RELAY_CHANNEL, (text) => {
        const notice = decodeNotice(deps.relayKey, processId, text)
        if (notice) deliverNotice(notice)
      }))
      unlisten.push(await db.listen(deps.appChangedChannel, () => authority.appChanged()))
      authority.start()
      node.start()
      presenceTimer = setInterval(() => {
        void (async () => {
          await refreshPresence(db, processId)
          for (const gone of await sweepPresence(db)) {
            const channel = gone.topic.split(':').slice(2).join(':')
            await relay({ kind: 'leave', appId: gone.appId, topic: gone.topic, channel, key: gone.key, ref: gone.ref }, null)
          }
        })().catch((error: unknown) => logger.warn('realtime presence refresh failed', { error: String(error) }))
      }, 15_000)
      presenceTimer.unref()
      tablesTimer = setInterval(() => {
        void (async () => {
          await tables.mark(changes.tables())
          await tables.sweep()
        })().catch((error: unknown) => logger.warn('realtime trigger sweep failed', { error: String(error) }))
      }, 10 * 60_000)
      tablesTimer.unref()
    },

    async stop() {
      if (stopping) return
      stopping = true
      authority.stop()
      if (presenceTimer) clearInterval(presenceTimer)
      if (tablesTimer) clearInterval(tablesTimer)
      const leaving: RelayNotice[] = []
      for (const connection of connections) {
        const { app, user } = connection.admission
        for (const channel of connection.channels.values()) {
          if (!channel.presenceRef) continue
          leaving.push({ kind: 'leave', appId: app.id, topic: channel.topic, channel: channel.name, key: user ? user.id : `anon:${connection.id}`, ref: channel.presenceRef })
        }
        connection.channels.clear()
        connection.close(CLOSE.goingAway, 'the platform process is shutting down; reconnect')
      }
      connections.clear()
      topics.clear()
      node.close()
      // The other processes' sockets are told these presences left.
      await deletePresence(db, leaving.map((notice) => (notice as { ref: string }).ref)).catch(() => {})
      for (const notice of leaving) {
        const text = encodeNotice(deps.relayKey, processId, notice)
        if (text !== null) await sendNotice(db, text).catch(() => {})
      }
      await Promise.all(unlisten.splice(0).map((stop) => stop().catch(() => {})))
      if (started) await changes.stop()
    },

    recheck: () => authority.recheckAll(),
    changes,
    tables,
    stats: () => ({ connections: connections.size, closedSlow, sent }),
  }
}
