/**
 * `service logs`: an app's stored Function log lines (`ctx.log`), oldest of the page
 * first so the newest ends up at the bottom of the terminal. Filters map to the owner
 * API's: --function, --level (that level and above), --from/--to (ISO 8601), --limit
 * (default 100); --dev reads a development namespace, --json prints the API's lines.
 */
import type { Client } from '../client.ts'
import type { Io } from '../io.ts'
import { appTarget } from './app-target.ts'

export interface LogsOptions {
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly function: string | undefined
  readonly level: string | undefined
  readonly from: string | undefined
  readonly to: string | undefined
  readonly limit: string | undefined
  readonly json: boolean
}

export interface LogLine {
  time: string
  level: string
  function: string
  requestId: string
  message: string
  fields: unknown
}

/** C0 controls but tab, DEL and C1 controls: a terminal may act on them (colours, cursor moves, titles, OSC 8 links). */
const CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/g
const CONTROLS_BUT_NEWLINE = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g

/**
 * Text a Function wrote, made safe to print on a terminal: each control character becomes
 * a visible escape (`\n`, `\r`, `\x1b`, `\x9b`); with `keepNewlines` newlines stay (a stack).
 *
 * @example
 * terminalSafe('\x1b]0;pwned\x07') // '\\x1b]0;pwned\\x07'
 */
export function terminalSafe(text: string, options: { keepNewlines?: boolean } = {}): string {
  return text.replace(options.keepNewlines === true ? CONTROLS_BUT_NEWLINE : CONTROLS, (c) =>
    c === '\n' ? '\\n' : c === '\r' ? '\\r' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** One line as the CLI prints it; whatever the Function wrote is escaped, so a line stays one terminal line. */
export function formatLogLine(line: LogLine): string {
  const fields = line.fields === null || line.fields === undefined ? '' : ` ${JSON.stringify(line.fields)}`
  return terminalSafe(`${line.time} ${line.level.padEnd(5)} ${line.function} ${line.message}${fields}`)
}

export async function logsCommand(io: Io, client: Client, options: LogsOptions): Promise<number> {
  const target = appTarget(options)
  if (typeof target === 'string') {
    io.err(`service logs: ${target}`)
    return 2
  }
  const query = new URLSearchParams()
  for (const key of ['function', 'level', 'from', 'to', 'limit'] as const) {
    const value = options[key]
    if (value !== undefined) query.set(key, value)
  }
  const search = query.toString() === '' ? '' : `?${query}`
  const { logs, nextCursor } = await client.call<{ logs: LogLine[]; nextCursor: string | null }>('GET', `${target.prefix}/logs${search}`)
  if (options.json) {
    io.out(JSON.stringify({ logs, nextCursor }, null, 2))
    return 0
  }
  if (logs.length === 0) io.err(`no log lines for ${target.label}${search ? ' with these filters' : ''}`)
  for (const line of [...logs].reverse()) io.out(formatLogLine(line))
  if (nextCursor !== null) io.err(`(older lines exist: narrow with --from/--to or raise --limit, at most 1000)`)
  return 0
}
