/**
 * Broadcast and presence between the platform's processes: each process delivers to its own
 * sockets at once and sends one NOTIFY on RELAY_CHANNEL, which every other process on the
 * database delivers to its sockets (a process skips its own notices). A notice carries the
 * whole message, so broadcasts are bounded well under NOTIFY's 8,000-byte payload
 * (REALTIME_MAX_MESSAGE_BYTES is at most 6,000).
 *
 * Notices are signed: `NOTIFY` needs no privilege, so any app's SQL on the same database can
 * send one on this channel. Each carries an HMAC-SHA-256 of its JSON under a key derived
 * from the master key (every process of one platform has it), and a notice whose MAC does
 * not verify is dropped, so app SQL cannot forge broadcasts or presence into another app's
 * channels.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Db } from '../db/db.ts'

export const RELAY_CHANNEL = 'platform_realtime_relay'
/** NOTIFY refuses payloads of 8,000 bytes or more. */
export const MAX_NOTICE_BYTES = 7900

export type RelayNotice =
  | { kind: 'broadcast'; appId: string; topic: string; channel: string; event: string; payload: unknown }
  | { kind: 'join'; appId: string; topic: string; channel: string; key: string; ref: string; state: Record<string, unknown> }
  | { kind: 'leave'; appId: string; topic: string; channel: string; key: string; ref: string }

/** Hex characters of a notice's MAC, which precedes its JSON and a dot. */
const MAC_HEX = 64

function mac(key: Uint8Array, body: string): Buffer {
  return createHmac('sha256', key).update(body).digest()
}

/**
 * The notice's text (`<mac hex>.<json>`), or null when it would not fit in a NOTIFY payload.
 *
 * @example
 * const text = encodeNotice(relayKey, processId, { kind: 'broadcast', appId, topic, channel, event, payload })
 */
export function encodeNotice(key: Uint8Array, processId: string, notice: RelayNotice): string | null {
  const body = JSON.stringify({ p: processId, ...notice })
  const text = `${mac(key, body).toString('hex')}.${body}`
  return Buffer.byteLength(text) < MAX_NOTICE_BYTES ? text : null
}

/** The notice, unless its MAC does not verify under `key`, it is this process's own, or it is malformed. */
export function decodeNotice(key: Uint8Array, processId: string, text: string): RelayNotice | null {
  if (text.length <= MAC_HEX || text[MAC_HEX] !== '.') return null
  const given = Buffer.from(text.slice(0, MAC_HEX), 'hex')
  const body = text.slice(MAC_HEX + 1)
  if (given.length !== MAC_HEX / 2 || !timingSafeEqual(given, mac(key, body))) return null
  try {
    const notice = JSON.parse(body) as RelayNotice & { p?: unknown }
    if (notice.p === processId || typeof notice.topic !== 'string' || typeof notice.appId !== 'string') return null
    return notice
  } catch {
    return null
  }
}

export async function sendNotice(db: Db, text: string): Promise<void> {
  await db.notify(RELAY_CHANNEL, text)
}
