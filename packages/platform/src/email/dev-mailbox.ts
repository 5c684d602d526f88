/**
 * The development mailbox: where outbound email lands when no SMTP server is configured.
 * Messages live in `platform.dev_mail`; this module reads them back for the `/_dev/mail`
 * routes and for tests that need the link a sign-in email carries.
 */
import type { Queryable } from '../db/db.ts'
import { selectDevMail, type DevMailRow } from './queries.ts'

export interface DevMail {
  id: string
  to: string
  from: string
  subject: string
  text: string
  html: string | null
  createdAt: Date
}

export const DEV_MAIL_DEFAULT_LIMIT = 50
export const DEV_MAIL_MAX_LIMIT = 200

export function devMailFromRow(row: DevMailRow): DevMail {
  return {
    id: row.id,
    to: row.to_address,
    from: row.from_address,
    subject: row.subject,
    text: row.text_body,
    html: row.html_body,
    createdAt: row.created_at,
  }
}

/**
 * Stored messages, newest first. `limit` defaults to 50 and is clamped to 1..200; `to`
 * keeps only messages to that address (case-insensitive).
 *
 * @example
 * const recent = await listDevMail(db, { to: 'ana@acme.test', limit: 10 })
 */
export async function listDevMail(db: Queryable, options: { limit?: number; to?: string } = {}): Promise<DevMail[]> {
  const to = options.to?.trim() || null
  const rows = await selectDevMail(db, { to, limit: clampLimit(options.limit) })
  return rows.map(devMailFromRow)
}

/**
 * The newest message to `address`, or undefined when there is none.
 *
 * @example
 * const mail = await latestDevMailTo(db, 'ana@acme.test')
 * const link = mail?.text.match(/https?:\/\/\S+/)?.[0]
 */
export async function latestDevMailTo(db: Queryable, address: string): Promise<DevMail | undefined> {
  const [mail] = await listDevMail(db, { to: address, limit: 1 })
  return mail
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isFinite(limit)) return DEV_MAIL_DEFAULT_LIMIT
  return Math.min(DEV_MAIL_MAX_LIMIT, Math.max(1, Math.floor(limit)))
}
