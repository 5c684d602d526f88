/**
 * `ctx.email.send` (spec 2.10 `email`): checks the message (message.ts), resolves its `from`
 * against the aliases the invocation's release declares (`email.aliases`, as
 * `<alias>@<app slug>.<EMAIL_DOMAIN>`), takes its recipients from the app's hourly budget
 * (EMAIL_RECIPIENTS_PER_HOUR, all namespaces together, fixed clock-hour windows) and commits
 * the message to platform.email_outbox, both in one statement, before it returns the
 * message's id. The delivery worker (delivery-worker.ts) sends it after that.
 */
import { randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import type { EmailDeclaration } from '../manifest/index.ts'
import { aliasAddress, appMailDomain } from './addresses.ts'
import { readSendArgs, type MessageLimits } from './message.ts'
import { insertMessageWithinBudget, selectSenderFacts } from './outbox-queries.ts'

/** A `ctx.email` call with the invocation's app, release and namespace, as the Functions host knows them. */
export interface EmailCall {
  readonly appId: string
  readonly releaseId: string
  /** The invocation's namespace id; null when the app has none yet. */
  readonly namespaceId: string | null
  readonly method: string
  readonly args: readonly unknown[]
}

export interface SendDeps {
  readonly db: Db
  readonly clock: Clock
  /** EMAIL_DOMAIN. */
  readonly domain: string
  readonly limits: MessageLimits & {
    /** EMAIL_RECIPIENTS_PER_HOUR. */
    readonly recipientsPerHour: number
  }
}

const HOUR_MS = 60 * 60 * 1000
const MAX_CACHED_RELEASES = 256

export interface Sender {
  /** Answers a `ctx.email` call: `send` resolves to `{ id }`. */
  answer(call: EmailCall): Promise<unknown>
}

/**
 * @example
 * const sender = createSender({ db, clock, domain: 'example.com', limits: { maxRecipients: 50, maxMessageBytes: 512 * 1024, recipientsPerHour: 1000 } })
 * const { id } = await sender.answer({ appId, releaseId, namespaceId, method: 'send', args: [{ from: 'support', to: 'ada@example.com', subject: 'Hi', text: 'Hello' }] }) as { id: string }
 */
export function createSender(deps: SendDeps): Sender {
  /** A release's declaration and slug (a release never changes; an app keeps its slug). */
  const releases = new Map<string, Promise<{ email: EmailDeclaration | null; slug: string } | undefined>>()

  function senderOf(releaseId: string) {
    let entry = releases.get(releaseId)
    if (entry === undefined) {
      if (releases.size >= MAX_CACHED_RELEASES) releases.delete(releases.keys().next().value!)
      entry = selectSenderFacts(deps.db, releaseId)
      entry.catch(() => releases.delete(releaseId))
      releases.set(releaseId, entry)
    }
    return entry
  }

  async function send(call: EmailCall): Promise<{ id: string }> {
    const message = readSendArgs(call.args, deps.limits)
    const facts = await senderOf(call.releaseId)
    const aliases = facts?.email?.aliases ?? []
    const slug = facts?.slug ?? ''
    const domain = appMailDomain(slug, deps.domain)
    const alias = message.from.includes('@') && message.from.toLowerCase().endsWith(`@${domain}`)
      ? message.from.slice(0, message.from.lastIndexOf('@'))
      : message.from
    if (facts === undefined || !aliases.includes(alias)) {
      throw new ServiceError('EMAIL_ALIAS_NOT_DECLARED',
        aliases.length === 0
          ? `This app declares no email aliases; declare one in service.yaml ("email:" then "  aliases: [${/^[a-z0-9]+([._-][a-z0-9]+)*$/.test(alias) ? alias : 'support'}]") and deploy`
          : `"${message.from.slice(0, 64)}" is not an alias this app declares; send from one of: ${aliases.join(', ')}`,
        { details: { from: message.from.slice(0, 64), aliases } })
    }
    if (call.namespaceId === null) throw new ServiceError('APP_NOT_DEPLOYED', 'this app has no namespace yet')
    const namespaceId = call.namespaceId
    const now = deps.clock.now()
    const id = randomUUID()
    const windowStart = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS)
    const queued = await insertMessageWithinBudget(deps.db, {
      id, appId: call.appId, namespaceId, from: aliasAddress({ alias, slug, emailDomain: deps.domain }), to: message.to,
      replyTo: message.replyTo, subject: message.subject, text: message.text, html: message.html, messageId: `<${id}@${domain}>`, now,
    }, { windowStart, limit: deps.limits.recipientsPerHour })
    if (!queued) {
      const retryAfterSeconds = Math.max(1, Math.ceil((windowStart.getTime() + HOUR_MS - now.getTime()) / 1000))
      throw new ServiceError('EMAIL_RATE_LIMITED',
        `This app has sent to ${deps.limits.recipientsPerHour} recipients this hour (EMAIL_RECIPIENTS_PER_HOUR); try again in ${retryAfterSeconds} seconds`,
        { details: { limit: deps.limits.recipientsPerHour, recipients: message.to.length, retryAfterSeconds } })
    }
    return { id }
  }

  return {
    async answer(call) {
      if (call.method === 'send') return await send(call)
      throw new ServiceError('BAD_REQUEST', `ctx.email has no method ${JSON.stringify(call.method.slice(0, 64))}; it has send`)
    },
  }
}
