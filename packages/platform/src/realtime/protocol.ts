/**
 * The realtime wire protocol: JSON text frames over one WebSocket per browser page, at
 * `{app_url}/_service/realtime` (docs/api.md, "Realtime"). A client joins channels by name;
 * a channel carries broadcast messages between the app's clients, presence, and the row
 * changes of the tables its join names. This file parses what clients send (anything
 * malformed is answered with an error frame, never trusted) and names the close codes.
 */

/** Close codes: 4000 + the HTTP status the handshake would now be answered with, and the standard ones. */
export const CLOSE = {
  /** The client left, or the server closed the socket for a reason it names. */
  normal: 1000,
  /** The platform process is shutting down: reconnect (another process will answer). */
  goingAway: 1001,
  /** A frame over REALTIME_MAX_MESSAGE_BYTES (closed by `ws` itself). */
  tooBig: 1009,
  /** The session or token the socket was opened with has ended, expired or been revoked. */
  authRequired: 4401,
  /** The signed-in person no longer has access to the private app. */
  accessDenied: 4403,
  /** The app is gone (deleted, renamed). */
  appNotFound: 4404,
  /** The client did not read its socket: more than REALTIME_MAX_BUFFERED_KB waited to be sent. */
  tooSlow: 4408,
  /** The client kept sending far over REALTIME_MESSAGES_PER_SECOND. */
  rateLimited: 4429,
  /** The app was paused or suspended. */
  appNotActive: 4503,
} as const

export type ChangeEvent = 'insert' | 'update' | 'delete'

/** One row-change subscription of a join: a table, the events, an optional `column=eq.value` filter. */
export interface ChangeSpec {
  /** The client's name for it (default its index in the join), repeated in each change frame. */
  id: string
  events: ReadonlySet<ChangeEvent>
  table: string
  filter: { column: string; value: string } | null
}

export interface JoinConfig {
  /** A private channel: signed-in users only, apart from the public channel of the same name. */
  private: boolean
  /** Broadcasts come back to their sender too. */
  broadcastSelf: boolean
  changes: ChangeSpec[]
}

export type ClientMessage =
  | { type: 'join'; ref: string; channel: string; config: JoinConfig; resume: number | null }
  | { type: 'leave'; ref: string; channel: string }
  | { type: 'broadcast'; ref: string | null; channel: string; event: string; payload: unknown }
  | { type: 'track'; ref: string | null; channel: string; state: Record<string, unknown> }
  | { type: 'untrack'; ref: string | null; channel: string }
  | { type: 'ping'; ref: string | null }

export class ProtocolError extends Error {
  override name = 'ProtocolError'
  readonly ref: string | null
  constructor(message: string, ref: string | null) {
    super(message)
    this.ref = ref
  }
}

export const LIMITS = {
  channelName: 100,
  eventName: 100,
  ref: 64,
  changesPerJoin: 20,
  tableName: 63,
  filterValue: 1000,
} as const

const NAME = /^[A-Za-z0-9_.:\-/]+$/
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function refOf(message: Record<string, unknown>): string | null {
  const ref = message['ref']
  if (ref === undefined || ref === null) return null
  if ((typeof ref !== 'string' && typeof ref !== 'number') || String(ref).length > LIMITS.ref) {
    throw new ProtocolError(`ref must be a string of at most ${LIMITS.ref} characters`, null)
  }
  return String(ref)
}

function channelOf(message: Record<string, unknown>, ref: string | null): string {
  const channel = message['channel']
  if (typeof channel !== 'string' || channel.length < 1 || channel.length > LIMITS.channelName || !NAME.test(channel)) {
    throw new ProtocolError(`channel must be 1 to ${LIMITS.channelName} letters, digits and _ . : - /`, ref)
  }
  return channel
}

/**
 * `column=eq.value`, as Supabase and PostgREST spell an equality filter; only `eq`.
 *
 * @example
 * parseFilter('list_id=eq.42') // { column: 'list_id', value: '42' }
 */
export function parseFilter(text: string, ref: string | null = null): { column: string; value: string } {
  const match = /^([A-Za-z_][A-Za-z0-9_$]*)=eq\.(.*)$/s.exec(text)
  if (!match || match[2]!.length > LIMITS.filterValue) {
    throw new ProtocolError(`filter must be column=eq.value (only equality), got "${text.slice(0, 80)}"`, ref)
  }
  return { column: match[1]!, value: match[2]! }
}

const EVENTS: Record<string, readonly ChangeEvent[]> = {
  insert: ['insert'],
  update: ['update'],
  delete: ['delete'],
  '*': ['insert', 'update', 'delete'],
}

function changesOf(value: unknown, ref: string | null): ChangeSpec[] {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.length > LIMITS.changesPerJoin) {
    throw new ProtocolError(`config.changes must be a list of at most ${LIMITS.changesPerJoin} subscriptions`, ref)
  }
  const specs: ChangeSpec[] = []
  const ids = new Set<string>()
  for (const [index, item] of value.entries()) {
    if (!isRecord(item)) throw new ProtocolError('each change subscription is an object { id?, event, table, filter? }', ref)
    const id = item['id'] === undefined || item['id'] === null ? String(index) : String(item['id'])
    if (id.length > LIMITS.ref || ids.has(id)) throw new ProtocolError(`each change subscription's id is distinct, at most ${LIMITS.ref} characters`, ref)
    ids.add(id)
    const events = EVENTS[String(item['event'] ?? '*')]
    if (!events) throw new ProtocolError('event must be insert, update, delete or *', ref)
    const table = item['table']
    if (typeof table !== 'string' || table.length > LIMITS.tableName || !IDENTIFIER.test(table)) {
      throw new ProtocolError('table must name a table of the app (a plain identifier)', ref)
    }
    const filter = item['filter'] === undefined || item['filter'] === null ? null : parseFilter(String(item['filter']), ref)
    specs.push({ id, events: new Set(events), table, filter })
  }
  return specs
}

function joinConfigOf(value: unknown, ref: string | null): JoinConfig {
  if (value === undefined || value === null) return { private: false, broadcastSelf: false, changes: [] }
  if (!isRecord(value)) throw new ProtocolError('config must be an object', ref)
  const broadcast = value['broadcast']
  return {
    private: value['private'] === true,
    broadcastSelf: isRecord(broadcast) && broadcast['self'] === true,
    changes: changesOf(value['changes'], ref),
  }
}

/**
 * A client's frame as a message, or a ProtocolError naming what is wrong (with the ref, when
 * the frame had a usable one, so the client can match the error to its request).
 *
 * @example
 * parseClientMessage('{"type":"join","ref":"1","channel":"room","config":{"changes":[{"event":"*","table":"notes"}]}}')
 */
export function parseClientMessage(text: string): ClientMessage {
  let message: unknown
  try {
    message = JSON.parse(text)
  } catch {
    throw new ProtocolError('each frame is one JSON object', null)
  }
  if (!isRecord(message)) throw new ProtocolError('each frame is one JSON object', null)
  const ref = refOf(message)
  switch (message['type']) {
    case 'join': {
      const resume = message['resume']
      if (resume !== undefined && resume !== null && !(Number.isSafeInteger(resume) && (resume as number) >= 0)) {
        throw new ProtocolError('resume must be a change position (a whole number)', ref)
      }
      return {
        type: 'join', ref: ref ?? '', channel: channelOf(message, ref),
        config: joinConfigOf(message['config'], ref), resume: (resume as number | undefined) ?? null,
      }
    }
    case 'leave':
      return { type: 'leave', ref: ref ?? '', channel: channelOf(message, ref) }
    case 'broadcast': {
      const event = message['event']
      if (typeof event !== 'string' || event.length < 1 || event.length > LIMITS.eventName) {
        throw new ProtocolError(`event must be a name of 1 to ${LIMITS.eventName} characters`, ref)
      }
      return { type: 'broadcast', ref, channel: channelOf(message, ref), event, payload: message['payload'] ?? null }
    }
    case 'track': {
      const state = message['state'] ?? {}
      if (!isRecord(state)) throw new ProtocolError('state must be an object', ref)
      return { type: 'track', ref, channel: channelOf(message, ref), state }
    }
    case 'untrack':
      return { type: 'untrack', ref, channel: channelOf(message, ref) }
    case 'ping':
      return { type: 'ping', ref }
    default:
      throw new ProtocolError('type must be join, leave, broadcast, track, untrack or ping', ref)
  }
}
