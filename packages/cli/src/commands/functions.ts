/**
 * `service functions invoke <name> --dev <name>`: runs a Function of a development
 * namespace's active release through the owner API (any access level, `system` included)
 * as the owner, or with `--as anonymous` without a user. The input is `--input '<json>'`
 * (default `{}`). The invocation's log lines go to stderr, the returned value to stdout as
 * JSON; a failure prints its code, message and development detail and exits 1.
 */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'
import { appTarget } from './app-target.ts'
import { formatLogLine, terminalSafe, type LogLine } from './logs.ts'

export interface InvokeOptions {
  readonly name: string | undefined
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly input: string | undefined
  readonly as: string | undefined
}

type Invocation =
  | { ok: true; value: unknown; requestId: string; logs: LogLine[] }
  | { ok: false; status: number; error: { code: string; message: string; details?: { stack?: string } }; requestId: string; logs: LogLine[] }

export async function functionsInvokeCommand(io: Io, client: Client, options: InvokeOptions): Promise<number> {
  if (!options.name || !options.dev) {
    io.err("usage: service functions invoke <name> --dev <name> [--input '<json>'] [--as owner|anonymous] [--app <app>]")
    return 2
  }
  const target = appTarget(options)
  if (typeof target === 'string') {
    io.err(`service functions invoke: ${target}`)
    return 2
  }
  let input: unknown = {}
  if (options.input !== undefined) {
    try {
      input = JSON.parse(options.input)
    } catch {
      io.err('service functions invoke: --input must be JSON, for example --input \'{"title":"Milk"}\'')
      return 2
    }
  }
  const result = await client.call<Invocation>('POST', `${target.prefix}/functions/${encodeURIComponent(options.name)}/invoke`, {
    input,
    ...(options.as === undefined ? {} : { as: options.as }),
  })
  for (const line of result.logs) io.err(formatLogLine(line))
  if (result.ok) {
    io.out(terminalSafe(JSON.stringify(result.value, null, 2), { keepNewlines: true }))
    return 0
  }
  // The Function wrote the message, details and stack: no terminal controls reach the screen.
  io.err(terminalSafe(`error ${result.error.code} (${result.status}): ${result.error.message}`))
  if (result.error.details?.stack) io.err(terminalSafe(String(result.error.details.stack), { keepNewlines: true }))
  else if (result.error.details !== undefined) io.err(terminalSafe(JSON.stringify(result.error.details, null, 2), { keepNewlines: true }))
  return 1
}
