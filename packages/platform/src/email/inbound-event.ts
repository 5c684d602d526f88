/**
 * The inbound email event: what an app's `email.inbound.function` gets for a message (the
 * SDK's InboundEmail type, docs/api.md "Inbound email"). Built from the raw message with
 * mailparser: the From, To and Subject headers decoded; the text and html parts as sent
 * (neither made from the other; `cid:` links kept); every header line unfolded, values as
 * sent, at most 200; each attachment (inline parts too) stored as a managed file of the
 * app's namespace, owned by the app (a system invocation reads it with `ctx.files`), at most
 * 50. The fields are fixed: a receiver's strict input schema lists exactly these.
 */
import { simpleParser, type AddressObject } from 'mailparser'
import type { FileCaller, ManagedFiles } from '../files/index.ts'

export interface InboundEmailEvent {
  readonly id: string
  readonly receivedAt: string
  readonly from: string
  readonly to: readonly string[]
  readonly recipients: readonly string[]
  readonly subject: string
  readonly text: string | null
  readonly html: string | null
  readonly headers: readonly { readonly name: string; readonly value: string }[]
  readonly attachments: readonly { readonly file: string; readonly name: string; readonly contentType: string; readonly size: number }[]
}

export const MAX_EVENT_HEADERS = 200
export const MAX_EVENT_ATTACHMENTS = 50

/** PostgreSQL's jsonb cannot hold U+0000; a message's text may. */
function clean(value: string): string {
  return value.replaceAll('\u0000', '\ufffd')
}

function addresses(value: AddressObject | AddressObject[] | undefined): string[] {
  if (value === undefined) return []
  const list = Array.isArray(value) ? value : [value]
  return list.flatMap((object) => object.value.flatMap((entry) => [
    ...(entry.address ? [entry.address] : []),
    ...(entry.group ?? []).flatMap((member) => (member.address ? [member.address] : [])),
  ])).map(clean)
}

/** A managed file's name (files/: 1 to 255 characters, no slashes or control characters). */
function fileName(name: string | undefined, index: number): string {
  const cleaned = (name ?? '').replace(/[\u0000-\u001f\u007f/\\]/g, '_').slice(0, 255)
  return cleaned.trim() === '' ? `attachment-${index + 1}` : cleaned
}

/** The part's media type without parameters, or application/octet-stream. */
function contentType(type: string): string {
  const bare = type.split(';')[0]!.trim().toLowerCase()
  return /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/.test(bare) ? bare : 'application/octet-stream'
}

/**
 * Parses `raw` into the event, storing its attachments as files of `caller`'s namespace.
 *
 * @example
 * const event = await buildInboundEvent({ files, caller }, { id, receivedAt, recipients: ['support@tasks.example.com'], raw })
 */
export async function buildInboundEvent(
  deps: { files: ManagedFiles; caller: FileCaller },
  input: { id: string; receivedAt: Date; recipients: readonly string[]; raw: Uint8Array },
): Promise<InboundEmailEvent> {
  const parsed = await simpleParser(Buffer.from(input.raw.buffer, input.raw.byteOffset, input.raw.byteLength), {
    skipHtmlToText: true, skipTextToHtml: true, keepCidLinks: true,
  })
  const headers = parsed.headerLines.slice(0, MAX_EVENT_HEADERS).map((line) => {
    const colon = line.line.indexOf(':')
    const name = colon === -1 ? line.key : line.line.slice(0, colon)
    const value = colon === -1 ? '' : line.line.slice(colon + 1).replace(/\r?\n(?=[ \t])/g, '').trim()
    return { name: clean(name), value: clean(value) }
  })
  const attachments = []
  for (const [index, attachment] of parsed.attachments.slice(0, MAX_EVENT_ATTACHMENTS).entries()) {
    const bytes = new Uint8Array(attachment.content)
    const name = fileName(attachment.filename, index)
    const type = contentType(attachment.contentType)
    const info = await deps.files.upload(deps.caller, {
      name, contentType: type, chunks: (async function* () { yield bytes })(),
    })
    attachments.push({ file: info.ref, name, contentType: info.contentType, size: info.size })
  }
  return {
    id: input.id,
    receivedAt: input.receivedAt.toISOString(),
    from: addresses(parsed.from)[0] ?? '',
    to: addresses(parsed.to),
    recipients: [...input.recipients],
    subject: clean(parsed.subject ?? ''),
    text: typeof parsed.text === 'string' ? clean(parsed.text) : null,
    html: typeof parsed.html === 'string' ? clean(parsed.html) : null,
    headers,
    attachments,
  }
}
