/**
 * The argument of `ctx.email.send` as it arrives from a worker, checked before anything is
 * stored: only the fields `from`, `to`, `subject`, `text`, `html` and `replyTo`; addresses
 * strictly parsed (addresses.ts); no control character in the subject (CR and LF above all,
 * so no header can be injected through it); bounded recipients and size (EMAIL_* settings).
 * Bodies may hold any text but U+0000 (PostgreSQL text cannot store it).
 */
import { ServiceError } from '../lib/errors.ts'
import { parseAddress } from './addresses.ts'

/** A checked message, before its alias is resolved against the release. */
export interface OutgoingMessage {
  /** The alias as written (`support`, or the alias's full address). */
  readonly from: string
  /** Parsed addresses, repeats removed, in the order given. */
  readonly to: readonly string[]
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  readonly replyTo: string | null
}

export interface MessageLimits {
  /** EMAIL_MAX_RECIPIENTS. */
  readonly maxRecipients: number
  /** EMAIL_MAX_MESSAGE_KB in bytes: subject, text and html together, UTF-8. */
  readonly maxMessageBytes: number
}

/** The longest subject, in characters (RFC 5322's line limit is 998 octets). */
export const MAX_SUBJECT_CHARS = 998

const FIELDS = new Set(['from', 'to', 'subject', 'text', 'html', 'replyTo'])

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('EMAIL_INVALID', message, { details: { field } })
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** What a refused address is shown as: cut, with control characters made visible. */
function shown(value: string): string {
  const cut = value.length > 80 ? `${value.slice(0, 80)}…` : value
  return JSON.stringify(cut)
}

function address(value: unknown, field: string): string {
  if (typeof value !== 'string') throw invalid(`${field} must be an address string such as "ada@example.com"`, field)
  const parsed = parseAddress(value)
  if (parsed === null) {
    throw invalid(`${shown(value)} is not a plain email address; write local@domain only (no name, brackets, spaces, commas or line breaks)`, field)
  }
  return parsed.address
}

function body(value: unknown, field: string): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') throw invalid(`${field} must be a string`, field)
  if (value.includes('\u0000')) throw invalid(`${field} cannot contain the character U+0000`, field)
  return value
}

/**
 * Checks `ctx.email.send`'s arguments.
 *
 * @example
 * const message = readSendArgs([{ from: 'support', to: 'ada@example.com', subject: 'Hi', text: 'Hello' }], limits)
 */
export function readSendArgs(args: readonly unknown[], limits: MessageLimits): OutgoingMessage {
  const [input] = args
  if (args.length > 1) throw invalid('email.send takes one argument: { from, to, subject, text?, html?, replyTo? }', 'arguments')
  if (!isPlainObject(input)) throw invalid('email.send needs a message: { from, to, subject, text?, html?, replyTo? }', 'message')
  for (const name of Object.keys(input)) {
    if (!FIELDS.has(name)) throw invalid(`email.send has no field ${JSON.stringify(name.slice(0, 64))}; the fields are from, to, subject, text, html and replyTo`, name.slice(0, 64))
  }
  const from = input.from
  if (typeof from !== 'string' || from.length === 0 || from.length > 254) {
    throw invalid('from must be an alias declared in service.yaml (email.aliases), such as "support"', 'from')
  }
  const list = typeof input.to === 'string' ? [input.to] : input.to
  if (!Array.isArray(list) || list.length === 0) throw invalid('to must be an address or a non-empty array of addresses', 'to')
  if (list.length > limits.maxRecipients) {
    throw new ServiceError('EMAIL_TOO_MANY_RECIPIENTS', `A message goes to at most ${limits.maxRecipients} recipients (EMAIL_MAX_RECIPIENTS); this one lists ${list.length}`, {
      details: { recipients: list.length, limit: limits.maxRecipients },
    })
  }
  const to = [...new Set(list.map((item) => address(item, 'to')))]
  const subject = input.subject
  if (typeof subject !== 'string') throw invalid('subject must be a string', 'subject')
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(subject)) {
    throw invalid('subject must be one line: no line breaks (CR, LF) or other control characters', 'subject')
  }
  if (subject.length > MAX_SUBJECT_CHARS) throw invalid(`subject is at most ${MAX_SUBJECT_CHARS} characters`, 'subject')
  const text = body(input.text, 'text')
  const html = body(input.html, 'html')
  if (text === null && html === null) throw invalid('a message needs text, html or both', 'text')
  const replyTo = input.replyTo === undefined || input.replyTo === null ? null : address(input.replyTo, 'replyTo')
  const encoder = new TextEncoder()
  const bytes = encoder.encode(subject).byteLength + (text === null ? 0 : encoder.encode(text).byteLength) + (html === null ? 0 : encoder.encode(html).byteLength)
  if (bytes > limits.maxMessageBytes) {
    throw new ServiceError('EMAIL_TOO_LARGE', `The message is ${bytes} bytes (subject, text and html, UTF-8); the limit is ${limits.maxMessageBytes} (EMAIL_MAX_MESSAGE_KB)`, {
      details: { bytes, limit: limits.maxMessageBytes },
    })
  }
  return { from, to, subject, text, html, replyTo }
}
