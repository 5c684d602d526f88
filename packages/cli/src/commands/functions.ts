/**
 * `service functions invoke <name> --dev <name>`: runs a Function of a development
 * namespace's active release through the owner API (any access level, `system` included)
 * as the owner, or with `--as anonymous` without a user. The input is `--input '<json>'`
 * (default `{}`). The invocation's log lines go to stderr, the returned value to stdout as
 * JSON; a failure prints its code, message and development detail and exits 1.
 */
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
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
    throw usageError('service functions invoke: name the Function and the development namespace (--dev <name>)', usageOf('functions'))
  }
  const target = appTarget(options)
  if (typeof target === 'string') throw usageError(`service functions invoke: ${target}`, usageOf('functions'))
  let input: unknown = {}
  if (options.input !== undefined) {
    try {
      input = JSON.parse(options.input)
    } catch {
      throw usageError('service functions invoke: --input must be JSON, for example --input \'{"title":"Milk"}\'', usageOf('functions'))
    }
  }
  const result = await client.call<Invocation>('POST', `${target.prefix}/functions/${encodeURIComponent(options.name)}/invoke`, {
    input,
    ...(options.as === undefined ? {} : { as: options.as }),
  })
  if (io.json === true) {
    printResult(io, result, () => {})
    if (!result.ok) throw new CliError(result.error.code, result.error.message, { details: { status: result.status, requestId: result.requestId } })
    return 0
  }
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
