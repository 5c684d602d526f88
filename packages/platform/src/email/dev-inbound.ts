/**
 * Synthetic inbound email for a development namespace (spec 6.4: "development tests use
 * synthetic injection"): `POST /v1/apps/:appId/dev/:devName/email/inbound` builds a real
 * MIME message (nodemailer's MailComposer) from `{ from?, to?, subject?, text?, html?,
 * headers?, attachments? }`, or takes `{ raw }` (an RFC 5322 message as text), turns it into
 * the inbound email event exactly as received mail is (inbound-event.ts: attachments stored
 * as the namespace's files) and runs the namespace's `email.inbound.function` at once, as the
 * app's system identity, in the namespace (its schema, files, secrets and logs). The answer
 * carries the event and the outcome with the invocation's log lines, as a development
 * invocation's does. Nothing is queued: no inbox row, no retry. Production SMTP mail never
 * reaches a development namespace.
 */
import { randomUUID } from 'node:crypto'
import MailComposer from 'nodemailer/lib/mail-composer'
import type { Db } from '../db/db.ts'
import type { App } from '../apps/apps.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import type { ManagedFiles } from '../files/index.ts'
import { failureResponse, listFunctionLogs, MAX_LOG_PAGE, type FunctionHost } from '../functions/index.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { activeReleaseOf } from '../namespaces/dev-names.ts'
import { aliasAddress, inboundTarget, parseAddress } from './addresses.ts'
import { buildInboundEvent, type InboundEmailEvent } from './inbound-event.ts'
import { selectSenderFacts } from './outbox-queries.ts'

export interface DevInboundDeps {
  readonly db: Db
  readonly clock: Clock
  readonly host: () => FunctionHost
  /** Managed files (a getter: the composition root builds them after this). */
  readonly files: () => ManagedFiles
  /** EMAIL_DOMAIN. */
  readonly emailDomain: string
  /** INBOUND_EMAIL_MAX_KB in bytes. */
  readonly maxBytes: number
}

export type DevInboundOutcome =
  | { ok: true; value: unknown; requestId: string; logs: unknown[]; event: InboundEmailEvent }
  | { ok: false; status: number; error: unknown; requestId: string; logs: unknown[]; event: InboundEmailEvent }

const FIELDS = new Set(['from', 'to', 'subject', 'text', 'html', 'headers', 'attachments', 'raw'])
const MAX_ATTACHMENTS = 20

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('EMAIL_INVALID', message, { details: { field } })
}

function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalid(`${field} must be a string`, field)
  return value
}

function oneLine(value: string, field: string): string {
  if (/[\r\n\u0000]/.test(value)) throw invalid(`${field} must be one line: no CR, LF or NUL`, field)
  return value
}

function readHeaders(value: unknown): { key: string; value: string }[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > 50) throw invalid('headers is an array of at most 50 { name, value }', 'headers')
  return value.map((entry) => {
    if (typeof entry !== 'object' || entry === null || typeof entry.name !== 'string' || typeof entry.value !== 'string') {
      throw invalid('each header is { name, value } with string values', 'headers')
    }
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,76}$/.test(entry.name)) throw invalid(`${JSON.stringify(String(entry.name).slice(0, 64))} is not a header name`, 'headers')
    return { key: entry.name as string, value: oneLine(entry.value as string, 'headers') }
  })
}

function readAttachments(value: unknown): { filename: string; contentType?: string; content: Buffer }[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || value.length > MAX_ATTACHMENTS) throw invalid(`attachments is an array of at most ${MAX_ATTACHMENTS} { name, contentType?, content (base64) }`, 'attachments')
  return value.map((entry) => {
    if (typeof entry !== 'object' || entry === null || typeof entry.name !== 'string' || typeof entry.content !== 'string') {
      throw invalid('each attachment is { name, contentType?, content } with content in base64', 'attachments')
    }
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(entry.content)) throw invalid('an attachment\'s content is base64', 'attachments')
    if (entry.contentType !== undefined && (typeof entry.contentType !== 'string' || !/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i.test(entry.contentType))) {
      throw invalid('an attachment\'s contentType is a media type such as text/plain', 'attachments')
    }
    return {
      filename: oneLine(entry.name as string, 'attachments'),
      ...(entry.contentType === undefined ? {} : { contentType: entry.contentType as string }),
      content: Buffer.from(entry.content as string, 'base64'),
    }
  })
}

/**
 * @example
 * const outcome = await injectDevInbound(deps, { app, devName: 'ada', body: { from: 'bob@example.com', subject: 'Hi', text: 'Hello' } })
 */
export async function injectDevInbound(deps: DevInboundDeps, input: { app: App; devName: string; body: Record<string, unknown> }): Promise<DevInboundOutcome> {
  const { app, devName, body } = input
  const unknown = Object.keys(body).find((key) => !FIELDS.has(key))
  if (unknown !== undefined) {
    throw new ServiceError('VALIDATION_FAILED', `unknown field ${unknown.slice(0, 64)}; the body is { from, to, subject, text, html, headers, attachments } or { to, raw }`,
      { details: { field: unknown.slice(0, 64) } })
  }
  const releaseId = await activeReleaseOf(deps.db, app.id, devName)
  const facts = releaseId === null ? undefined : await selectSenderFacts(deps.db, releaseId)
  const namespace = releaseId === null ? null : await findNamespace(deps.db, app.id, 'development', devName)
  if (facts === undefined || namespace === null) {
    throw new ServiceError('DEV_NAMESPACE_NOT_FOUND', `the development namespace ${devName} has no release; deploy to it with: service deploy <dir> --dev ${devName}`)
  }
  const email = facts.email
  const receiver = email?.inbound?.function
  if (!email || receiver === undefined) {
    throw new ServiceError('EMAIL_INBOUND_NOT_DECLARED',
      `the development release of ${app.slug} (${devName}) receives no email; declare email.inbound with a system Function and an alias in service.yaml`)
  }
  // Recipients as the SMTP listener would accept them: the app's declared aliases, with a +tag or not.
  const toValue = body.to ?? aliasAddress({ alias: email.aliases[0]!, slug: facts.slug, emailDomain: deps.emailDomain })
  const toList = typeof toValue === 'string' ? [toValue] : toValue
  if (!Array.isArray(toList) || toList.length === 0 || toList.length > 100) throw invalid('to is an address of this app or an array of them', 'to')
  const recipients = toList.map((recipient) => {
    const target = typeof recipient === 'string' ? inboundTarget(recipient, deps.emailDomain) : null
    if (target === null || target.slug !== facts.slug || !email.aliases.includes(target.alias)) {
      throw invalid(`${JSON.stringify(String(recipient).slice(0, 80))} is not an address this app receives at; use <alias>[+tag]@${facts.slug}.${deps.emailDomain} with a declared alias (${email.aliases.join(', ')})`, 'to')
    }
    return target.address
  })
  let raw: Uint8Array
  const rawText = optionalString(body, 'raw')
  if (rawText !== undefined) {
    const others = ['from', 'subject', 'text', 'html', 'headers', 'attachments'].filter((field) => body[field] !== undefined)
    if (others.length > 0) throw invalid(`raw is the whole message; leave out ${others.join(', ')}`, others[0]!)
    raw = new TextEncoder().encode(rawText)
  } else {
    const from = optionalString(body, 'from') ?? 'sender@example.com'
    if (parseAddress(from) === null) throw invalid('from is a plain address such as ada@example.com', 'from')
    const text = optionalString(body, 'text')
    const html = optionalString(body, 'html')
    const composer = new MailComposer({
      from, to: recipients, subject: oneLine(optionalString(body, 'subject') ?? '', 'subject'),
      ...(text === undefined ? {} : { text }), ...(html === undefined ? {} : { html }),
      headers: readHeaders(body.headers), attachments: readAttachments(body.attachments),
      messageId: `<${randomUUID()}@dev.${deps.emailDomain}>`, date: deps.clock.now(),
      disableFileAccess: true, disableUrlAccess: true,
    })
    raw = new Uint8Array(await composer.compile().build())
  }
  if (raw.byteLength > deps.maxBytes) {
    throw new ServiceError('EMAIL_TOO_LARGE', `The message is ${raw.byteLength} bytes; inbound mail is at most ${deps.maxBytes} (INBOUND_EMAIL_MAX_KB)`,
      { details: { bytes: raw.byteLength, limit: deps.maxBytes } })
  }
  const host = deps.host()
  const fn = await host.resolveDev(app, devName, receiver)
  if (fn === null || fn.declaration.access !== 'system') {
    throw new ServiceError('FUNCTION_NOT_FOUND', `the email.inbound.function "${receiver}" is not a declared system Function`)
  }
  const event = await buildInboundEvent(
    { files: deps.files(), caller: { appId: app.id, namespaceId: namespace.id, userId: null, system: true, jobId: null } },
    { id: randomUUID(), receivedAt: deps.clock.now(), recipients, raw },
  )
  const requestId = randomUUID()
  const result = await host.run(fn, { input: event, user: null, requestId, awaitLogs: true })
  const page = await listFunctionLogs(deps.db, { appId: app.id, devName, requestId, limit: MAX_LOG_PAGE })
  const logs = [...page.lines].reverse()
  if (result.ok) return { ok: true, value: result.value, requestId, logs, event }
  const { status, body: failure } = failureResponse(result.error, { environment: 'development' })
  return { ok: false, status, error: failure.error, requestId, logs, event }
}
