/**
 * Structured logging: one JSON line per event on stderr. Secret values never reach a log
 * line: callers pass fields, and `redact` replaces known secret values wherever they occur.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void
  info(message: string, fields?: Record<string, unknown>): void
  warn(message: string, fields?: Record<string, unknown>): void
  error(message: string, fields?: Record<string, unknown>): void
}

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export function createLogger(options: {
  level: LogLevel
  write?: (line: string) => void
}): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'))
  const min = ORDER[options.level]
  const emit = (level: LogLevel) => (message: string, fields?: Record<string, unknown>) => {
    if (ORDER[level] < min) return
    const head = { time: new Date().toISOString(), level, message }
    // A field named time, level or message cannot mask the line's own (the head keeps its place and value).
    write(JSON.stringify(fields === undefined ? head : Object.assign({ ...head }, fields, head)))
  }
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') }
}

/**
 * A logger that adds `fields` to every line (the caller's own fields win on a clash).
 *
 * @example
 *   const poolLogger = withFields(logger, { appId, releaseId })
 */
export function withFields(logger: Logger, fields: Record<string, unknown>): Logger {
  const add = (level: LogLevel) => (message: string, more?: Record<string, unknown>) => logger[level](message, { ...fields, ...more })
  return { debug: add('debug'), info: add('info'), warn: add('warn'), error: add('error') }
}

/** A logger that drops everything (tests that do not inspect logs). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }

/** Replaces every occurrence of each secret value in a text. */
export function redact(text: string, secrets: Iterable<string>): string {
  let out = text
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]')
  }
  return out
}
