/**
 * How commands print, for people and for agents (`--json`). Without `--json` a command
 * prints lines for a person on stdout and notes on stderr. With `--json` every line the CLI
 * writes is one JSON value: stdout carries the command's result (one document, or one
 * document a line for the streaming commands `dev` and `logs --follow`); stderr carries
 * `{"notice": "..."}` lines for what a person would have read there, and a failed command's
 * last line is `{"error": {"code", "message", "details"?, "next"?}}`.
 */
import type { CliError } from './errors.ts'
import type { Io } from './io.ts'

/**
 * One JSON value on one line. JSON.stringify escapes C0 controls but leaves DEL and the C1
 * controls (a terminal acts on U+009B as on ESC [); those are escaped too, so text a
 * Function wrote cannot drive a terminal through --json output either.
 *
 * @example
 *   jsonLine({ message: '\x9b31m' }) // '{"message":"\\u009b31m"}'
 */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * The Io a command gets under `--json`: `json` set, and plain stderr lines turned into
 * notices so stderr stays one JSON value a line.
 */
export function jsonIo(io: Io): Io {
  return { ...io, json: true, err: (line) => io.err(jsonLine({ notice: line })) }
}

/**
 * Prints a command's result: the value as one JSON line under `--json`, else the lines
 * `human` prints.
 *
 * @example
 *   printResult(io, { apps }, () => { for (const app of apps) io.out(app.slug) })
 */
export function printResult(io: Io, value: unknown, human: () => void): void {
  if (io.json === true) io.out(jsonLine(value))
  else human()
}

/** The error as the person or the agent reads it, on the process's own stderr (`raw`, not the notice-wrapping Io). */
export function printError(raw: Io, options: { error: CliError; json: boolean; hint?: string | null }): void {
  const { error, json, hint } = options
  if (json) {
    raw.err(jsonLine({
      error: {
        code: error.code,
        message: error.message,
        ...(error.details === undefined ? {} : { details: error.details }),
        ...(error.next === undefined ? {} : { next: error.next }),
      },
    }))
    return
  }
  if (error.code === 'USAGE') {
    raw.err(error.message)
    const usage = (error.details as { usage?: string } | undefined)?.usage
    if (usage) raw.err(usage.startsWith('usage:') ? usage : `usage: ${usage}`)
  } else {
    raw.err(`error ${error.code}: ${error.message}`)
    if (hint) raw.err(hint)
    for (const line of detailLines(error.details)) raw.err(line)
  }
  if (error.next !== undefined) raw.err(`next: ${error.next}`)
}

/** The platform's error details a person acts on: manifest problems with positions, a migration's place and SQLSTATE. */
function detailLines(details: unknown): string[] {
  const lines: string[] = []
  const problems = (details as { problems?: { path: string; message: string }[] } | undefined)?.problems
  for (const p of problems ?? []) lines.push(`  ${p.path}: ${p.message}`)
  const errors = (details as { errors?: { line: number; column: number; code: string; message: string }[] } | undefined)?.errors
  for (const p of errors ?? []) lines.push(`  service.yaml:${p.line}:${p.column} ${p.code} ${p.message}`)
  const migration = details as { migration?: string; line?: number; column?: number; sqlState?: string } | undefined
  if (migration?.migration) {
    lines.push(`  ${migration.migration}${migration.line ? `:${migration.line}:${migration.column}` : ''} SQLSTATE ${migration.sqlState}`)
  }
  return lines
}
