/**
 * `service logs`: an app's stored Function log lines (`ctx.log`), oldest of the page
 * first so the newest ends up at the bottom of the terminal. Filters map to the owner
 * API's: --function, --level (that level and above), --from/--to (ISO 8601), --limit
 * (default 100); --dev reads a development namespace, --json prints the API's lines.
 * --follow then keeps polling (`followLogs`, which `service dev` uses too) and prints each
 * new line once, until Ctrl-C.
 */
import { ApiError, type Client } from '../client.ts'
import { EXIT, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { jsonLine, printResult } from '../output.ts'
import { appTarget, type AppTarget } from './app-target.ts'
import { pollOptions } from './login.ts'

export interface LogsOptions {
  readonly follow: boolean
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly function: string | undefined
  readonly level: string | undefined
  readonly from: string | undefined
  readonly to: string | undefined
  readonly limit: string | undefined
}

export interface LogLine {
  id: string
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
  if (typeof target === 'string') throw usageError(`service logs: ${target}`, usageOf('logs'))
  if (options.follow && options.to !== undefined) throw usageError('service logs: --follow prints new lines as they come; it takes no --to', usageOf('logs'))
  const filters = new URLSearchParams()
  for (const key of ['function', 'level'] as const) {
    const value = options[key]
    if (value !== undefined) filters.set(key, value)
  }
  const query = new URLSearchParams(filters)
  for (const key of ['from', 'to', 'limit'] as const) {
    const value = options[key]
    if (value !== undefined) query.set(key, value)
  }
  const search = query.toString() === '' ? '' : `?${query}`
  const { logs, nextCursor, newestCursor } = await client.call<LogPage>('GET', `${target.prefix}/logs${search}`)
  if (!options.follow) {
    printResult(io, { logs, nextCursor }, () => {
      if (logs.length === 0) io.err(`no log lines for ${target.label}${search ? ' with these filters' : ''}`)
      for (const line of [...logs].reverse()) io.out(formatLogLine(line))
      if (nextCursor !== null) io.err('(older lines exist: narrow with --from/--to or raise --limit, at most 1000)')
    })
    return 0
  }
  const print = (line: LogLine) => io.out(io.json === true ? jsonLine(line) : formatLogLine(line))
  for (const line of [...logs].reverse()) print(line)
  if (io.json !== true) io.err(`following ${target.label}; Ctrl-C to stop`)
  if (options.from !== undefined) filters.set('from', options.from)
  await followLogs(io, client, { target, filters, after: newestCursor, onLine: print })
  return EXIT.interrupted
}

/** Pages read per poll at most (1,000 lines each); beyond that a poll's oldest new lines are skipped, and said so. */
const MAX_PAGES = 10

interface LogPage {
  logs: LogLine[]
  nextCursor: string | null
  newestCursor: string | null
}

export interface FollowOptions {
  readonly target: AppTarget
  /** function, level and from filters, passed on to the API. */
  readonly filters: URLSearchParams
  /** The position of the newest line already shown (a page's newestCursor); null: none shown. */
  readonly after: string | null
  readonly onLine: (line: LogLine) => void
}

/**
 * Polls a namespace's logs (SERVICE_POLL_INTERVAL_MS, default 2 s) until `io.signal`
 * aborts, calling `onLine` once per new line, oldest first. Each poll asks for the lines
 * after the newest one seen (the API's `after` cursor, a position in write order, so lines
 * with the same time are told apart), newest first, and pages back with `cursor` when more
 * than a page came. A platform briefly unreachable is retried; other errors end it.
 */
export async function followLogs(io: Io, client: Client, options: FollowOptions): Promise<void> {
  const { target, filters, onLine } = options
  const { intervalMs } = pollOptions(io.env, 0)
  let after = options.after
  let unreachable = false
  while (!(io.signal?.aborted ?? false)) {
    await sleep(intervalMs, io.signal)
    if (io.signal?.aborted ?? false) break
    try {
      const fresh: LogLine[] = []
      let newest: string | null = null
      let cursor: string | null = null
      let page = 0
      do {
        const query = new URLSearchParams(filters)
        query.set('limit', '1000')
        if (after !== null) query.set('after', after)
        if (cursor !== null) query.set('cursor', cursor)
        const answer: LogPage = await client.call('GET', `${target.prefix}/logs?${query}`)
        newest ??= answer.newestCursor
        fresh.push(...answer.logs)
        cursor = answer.nextCursor
      } while (cursor !== null && ++page < MAX_PAGES)
      if (cursor !== null) io.err(`warning: more than ${MAX_PAGES * 1000} new lines since the last poll; the oldest of them are not shown`)
      if (unreachable) io.err(`the platform answers again; following ${target.label}`)
      unreachable = false
      // The API answers newest first; the lines are printed oldest first.
      for (const line of fresh.reverse()) onLine(line)
      if (newest !== null) after = newest
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 0 && error.status < 500)) throw error
      if (!unreachable) io.err(`warning: ${error.message}; retrying every ${intervalMs} ms`)
      unreachable = true
    }
  }
}

/** The position of a namespace's newest log line now, to follow from (null when it has none). */
export async function newestLogCursor(client: Client, target: AppTarget): Promise<string | null> {
  const page: LogPage = await client.call('GET', `${target.prefix}/logs?limit=1`)
  return page.newestCursor
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, { once: true })
  })
}
