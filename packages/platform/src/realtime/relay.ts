/**
 * Broadcast and presence between the platform's processes: each process delivers to its own
 * sockets at once and sends one NOTIFY on RELAY_CHANNEL, which every other process on the
 * database delivers to its sockets (a process skips its own notices). A notice carries the
 * whole message, so broadcasts are bounded well under NOTIFY's 8,000-byte payload
 * (REALTIME_MAX_MESSAGE_BYTES is at most 6,000).
 */
import type { Db } from '../db/db.ts'

export const RELAY_CHANNEL = 'platform_realtime_relay'
/** NOTIFY refuses payloads of 8,000 bytes or more. */
export const MAX_NOTICE_BYTES = 7900

export type RelayNotice =
  | { kind: 'broadcast'; appId: string; topic: string; channel: string; event: string; payload: unknown }
  | { kind: 'join'; appId: string; topic: string; channel: string; key: string; ref: string; state: Record<string, unknown> }
  | { kind: 'leave'; appId: string; topic: string; channel: string; key: string; ref: string }

/** The notice's text, or null when it would not fit in a NOTIFY payload. */
export function encodeNotice(processId: string, notice: RelayNotice): string | null {
  const text = JSON.stringify({ p: processId, ...notice })
  return Buffer.byteLength(text) < MAX_NOTICE_BYTES ? text : null
}

/** The notice, unless it is this process's own or malformed. */
export function decodeNotice(processId: string, text: string): RelayNotice | null {
  try {
    const notice = JSON.parse(text) as RelayNotice & { p?: unknown }
    if (notice.p === processId || typeof notice.topic !== 'string' || typeof notice.appId !== 'string') return null
    return notice
  } catch {
    return null
  }
}

export async function sendNotice(db: Db, text: string): Promise<void> {
  await db.notify(RELAY_CHANNEL, text)
}
