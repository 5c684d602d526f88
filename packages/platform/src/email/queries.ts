/**
 * SQL of the development mailbox, one function per statement. Rows come back in the
 * order the mailbox shows them: newest first, ties (same clock instant) broken by
 * insertion order.
 */
import type { Queryable } from '../db/db.ts'

export interface DevMailRow extends Record<string, unknown> {
  id: string
  to_address: string
  from_address: string
  subject: string
  text_body: string
  html_body: string | null
  created_at: Date
}

const COLUMNS = 'id, to_address, from_address, subject, text_body, html_body, created_at'

export async function insertDevMail(
  db: Queryable,
  mail: { to: string; from: string; subject: string; text: string; html: string | null; createdAt: Date },
): Promise<DevMailRow> {
  const rows = await db.query<DevMailRow>(
    `insert into platform.dev_mail (to_address, from_address, subject, text_body, html_body, created_at)
     values ($1, $2, $3, $4, $5, $6)
     returning ${COLUMNS}`,
    [mail.to, mail.from, mail.subject, mail.text, mail.html, mail.createdAt],
  )
  const row = rows[0]
  if (!row) throw new Error('insert into platform.dev_mail returned no row')
  return row
}

/** Newest first; `to` (when not null) matches the recipient case-insensitively. */
export function selectDevMail(db: Queryable, filter: { to: string | null; limit: number }): Promise<DevMailRow[]> {
  return db.query<DevMailRow>(
    `select ${COLUMNS}
     from platform.dev_mail
     where $1::text is null or lower(to_address) = lower($1::text)
     order by created_at desc, seq desc
     limit $2`,
    [filter.to, filter.limit],
  )
}
