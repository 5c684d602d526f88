/**
 * `service email inject --dev <name>`: sends a synthetic inbound email into a development
 * namespace through the owner API (`POST /v1/apps/<app>/dev/<name>/email/inbound`): the
 * namespace's `email.inbound.function` runs at once with the inbound email event. The message
 * is built from `--from`, `--to`, `--subject`, `--text`, `--html` and `--attach <path>`
 * (repeatable), or read whole from `--raw <file.eml>`. The receiver's log lines go to stderr,
 * the event it got and its returned value to stdout as JSON; a failure prints its code and
 * message and exits 1.
 */
import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { appTarget } from './app-target.ts'
import { formatLogLine, terminalSafe, type LogLine } from './logs.ts'

export interface EmailInjectOptions {
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly from: string | undefined
  readonly to: string | undefined
  readonly subject: string | undefined
  readonly text: string | undefined
  readonly html: string | undefined
  readonly attach: readonly string[] | undefined
  readonly raw: string | undefined
}

type Injection =
  | { ok: true; value: unknown; requestId: string; logs: LogLine[]; event: unknown }
  | { ok: false; status: number; error: { code: string; message: string }; requestId: string; logs: LogLine[]; event: unknown }

/** A few common types by extension; the platform stores anything else as application/octet-stream. */
const TYPES: Readonly<Record<string, string>> = {
  txt: 'text/plain', csv: 'text/csv', html: 'text/html', json: 'application/json', pdf: 'application/pdf',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', zip: 'application/zip',
}

export async function emailInjectCommand(io: Io, client: Client, options: EmailInjectOptions): Promise<number> {
  if (!options.dev) throw usageError('service email inject: name the development namespace (--dev <name>)', usageOf('email'))
  const target = appTarget(options)
  if (typeof target === 'string') throw usageError(`service email inject: ${target}`, usageOf('email'))
  const body = requestBody(options)
  const result = await client.call<Injection>('POST', `${target.prefix}/email/inbound`, body)
  if (io.json === true) {
    printResult(io, result, () => {})
    if (!result.ok) throw new CliError(result.error.code, result.error.message, { details: { status: result.status, requestId: result.requestId } })
    return 0
  }
  for (const line of result.logs) io.err(formatLogLine(line))
  // The message's sender wrote the event; the receiver wrote the value: no terminal controls reach the screen.
  if (result.ok) {
    io.out(terminalSafe(JSON.stringify({ event: result.event, value: result.value }, null, 2), { keepNewlines: true }))
    return 0
  }
  io.out(terminalSafe(JSON.stringify({ event: result.event }, null, 2), { keepNewlines: true }))
  io.err(terminalSafe(`error ${result.error.code} (${result.status}): ${result.error.message}`))
  return 1
}

function requestBody(options: EmailInjectOptions): Record<string, unknown> {
  const to = options.to === undefined ? {} : { to: options.to }
  if (options.raw !== undefined) {
    const others = (['from', 'subject', 'text', 'html'] as const).filter((name) => options[name] !== undefined)
    if (others.length > 0 || (options.attach?.length ?? 0) > 0) {
      throw usageError('service email inject: --raw is the whole message; leave out --from, --subject, --text, --html and --attach', usageOf('email'))
    }
    return { ...to, raw: readText(options.raw) }
  }
  const attachments = (options.attach ?? []).map((path) => {
    const name = basename(path)
    const type = TYPES[name.slice(name.lastIndexOf('.') + 1).toLowerCase()]
    return { name, ...(type === undefined ? {} : { contentType: type }), content: readBytes(path).toString('base64') }
  })
  return {
    ...to,
    ...(options.from === undefined ? {} : { from: options.from }),
    ...(options.subject === undefined ? {} : { subject: options.subject }),
    ...(options.text === undefined ? {} : { text: options.text }),
    ...(options.html === undefined ? {} : { html: options.html }),
    ...(attachments.length === 0 ? {} : { attachments }),
  }
}

function readBytes(path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (error) {
    throw usageError(`service email inject: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`, usageOf('email'))
  }
}

function readText(path: string): string {
  return readBytes(path).toString('utf8')
}
