/**
 * A real logger (lib/logger.ts, the JSON lines the platform writes) whose lines a test keeps
 * and reads back, for tests of what the platform logs.
 */
import { createLogger, type Logger, type LogLevel } from '../src/lib/logger.ts'

export interface LogLine {
  time: string
  level: LogLevel
  message: string
  [field: string]: unknown
}

export interface CapturedLog {
  logger: Logger
  /** Every line written so far, parsed. */
  lines: LogLine[]
  /** Every line written so far, as written (to check nothing secret appears anywhere). */
  text(): string
  /** The lines with this message. */
  withMessage(message: string): LogLine[]
}

/**
 * @example
 * const log = capturedLog('info')
 * const h = await startHarness(undefined, { logger: log.logger })
 */
export function capturedLog(level: LogLevel): CapturedLog {
  const raw: string[] = []
  const lines: LogLine[] = []
  const logger = createLogger({
    level,
    write: (line) => {
      raw.push(line)
      lines.push(JSON.parse(line) as LogLine)
    },
  })
  return {
    logger,
    lines,
    text: () => raw.join('\n'),
    withMessage: (message) => lines.filter((line) => line.message === message),
  }
}
