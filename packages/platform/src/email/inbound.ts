/**
 * Receiving mail for apps (spec 6.4): which recipients the SMTP listener accepts, and how an
 * accepted message is stored. A recipient is accepted only when it is
 * `<alias>[+tag]@<slug>.<EMAIL_DOMAIN>` for an app whose active production release declares
 * `email.inbound` and that alias; anything else is refused at RCPT TO (550; 450 while the app
 * is paused or suspended, so the sender tries again later). An accepted message is committed
 * to platform.email_inbox, one row per app it is addressed to, before the listener answers
 * 250; the inbound worker (inbound-worker.ts) invokes each app's receiver after that.
 * Development namespaces receive no SMTP mail: the owner API injects it (dev-inbound.ts).
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { inboundTarget } from './addresses.ts'
import { insertInbound, selectReceivingFacts } from './inbox-queries.ts'

/** An accepted recipient: the app and production namespace it reaches. */
export interface AcceptedRecipient {
  readonly accepted: true
  readonly appId: string
  readonly namespaceId: string
  readonly address: string
}

/** A refused recipient with the SMTP reply to give. */
export interface RefusedRecipient {
  readonly accepted: false
  /** 550 no such mailbox; 450 the app is paused; 452 the app has taken as much mail as it may this hour. */
  readonly code: 550 | 450 | 452
  readonly message: string
}

export type RecipientVerdict = AcceptedRecipient | RefusedRecipient

const NO_SUCH_MAILBOX: RefusedRecipient = { accepted: false, code: 550, message: '5.1.1 No such mailbox here' }

/**
 * The verdict on one RCPT TO address.
 *
 * @example
 * const verdict = await checkRecipient({ db, emailDomain: 'example.com' }, 'support@tasks.example.com')
 */
export async function checkRecipient(deps: { db: Db; emailDomain: string }, recipient: string): Promise<RecipientVerdict> {
  const target = inboundTarget(recipient, deps.emailDomain)
  if (target === null) return NO_SUCH_MAILBOX
  const facts = await selectReceivingFacts(deps.db, target.slug)
  if (facts === undefined || facts.status === 'archived') return NO_SUCH_MAILBOX
  const email = facts.email
  if (facts.namespace_id === null || !email?.inbound || !email.aliases.includes(target.alias)) return NO_SUCH_MAILBOX
  if (facts.status !== 'active') return { accepted: false, code: 450, message: '4.2.1 Mailbox temporarily unavailable; try again later' }
  return { accepted: true, appId: facts.app_id, namespaceId: facts.namespace_id, address: target.address }
}

/**
 * Commits a received message: one inbox row per app among `recipients`, in one transaction.
 * Returns the rows' ids.
 *
 * @example
 * const ids = await storeInbound({ db, clock }, { mailFrom: 'ada@example.com', recipients: accepted, raw })
 */
export async function storeInbound(
  deps: { db: Db; clock: Clock },
  input: { mailFrom: string; recipients: readonly AcceptedRecipient[]; raw: Uint8Array },
): Promise<string[]> {
  const byApp = new Map<string, { namespaceId: string; addresses: string[] }>()
  for (const recipient of input.recipients) {
    const entry = byApp.get(recipient.appId) ?? { namespaceId: recipient.namespaceId, addresses: [] }
    if (!entry.addresses.includes(recipient.address)) entry.addresses.push(recipient.address)
    byApp.set(recipient.appId, entry)
  }
  const now = deps.clock.now()
  const rows = [...byApp].map(([appId, entry]) => ({ id: randomUUID(), appId, namespaceId: entry.namespaceId, recipients: entry.addresses }))
  await deps.db.transaction(async (tx) => {
    for (const row of rows) await insertInbound(tx, { ...row, mailFrom: input.mailFrom, raw: input.raw, now })
  })
  return rows.map((row) => row.id)
}
