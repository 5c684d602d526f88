/**
 * The CLI's one error class and its exit codes. Commands throw `CliError` (their own codes,
 * such as `USAGE`) or let the client's `ApiError` (the platform's codes) through; `main.ts`
 * turns either into the exit code and one message on stderr, a JSON line with `--json`
 * (output.ts). Each error names the next command to run where there is one (`next`).
 * The exit codes are documented in docs/cli.md; scripts and agents switch on them.
 */
import { ApiError } from './client.ts'

/** Exit codes: 0 success, then by what went wrong. */
export const EXIT = {
  ok: 0,
  /** The platform refused, a check found problems, or a Function failed. */
  failed: 1,
  /** The command line is wrong (unknown command, missing argument, bad flag); nothing was sent. */
  usage: 2,
  /** No owner token, or the platform refused it (UNAUTHENTICATED; APP_TOKEN_NOT_ALLOWED, an app token in its place). */
  unauthenticated: 3,
  /** The platform did not answer (PLATFORM_UNREACHABLE). */
  unreachable: 4,
  /** A long-running command (dev, logs --follow) was stopped with Ctrl-C. */
  interrupted: 130,
} as const

export type ExitCode = (typeof EXIT)[keyof typeof EXIT]

export class CliError extends Error {
  override name = 'CliError'
  /** A stable code: the platform's (`APP_NOT_FOUND`) or the CLI's own (`USAGE`). */
  readonly code: string
  readonly exitCode: ExitCode
  /** The command to run next, when there is one (`service login`). */
  readonly next: string | undefined
  readonly details: unknown
  constructor(code: string, message: string, options: { exitCode?: ExitCode; next?: string | undefined; details?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.exitCode = options.exitCode ?? EXIT.failed
    this.next = options.next
    this.details = options.details
  }
}

/**
 * A wrong command line: exit 2, the usage lines in `details.usage`.
 *
 * @example
 *   if (!dir) throw usageError('name the app directory', 'service deploy <dir> [--dev <name>]')
 */
export function usageError(message: string, usage: string, next?: string): CliError {
  return new CliError('USAGE', message, { exitCode: EXIT.usage, details: { usage }, next })
}

/** What a command was acting on, for naming the next command. */
export interface ErrorContext {
  readonly command: string | undefined
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly dir: string | undefined
}

/** The next command for a platform error code, where one helps. */
export function nextCommand(code: string, context: ErrorContext): string | undefined {
  const app = context.app ?? '<app>'
  const dir = context.dir ?? '<dir>'
  if (code === 'UNAUTHENTICATED' || code === 'APP_TOKEN_NOT_ALLOWED') return 'service login (or set SERVICE_TOKEN to an owner API token)'
  if (code === 'PLATFORM_UNREACHABLE') return 'npm start (in the platform\'s directory), or set SERVICE_URL to where it runs'
  if (code === 'APP_NOT_FOUND') return context.command === 'deploy' ? undefined : `service apps list (or create the app: service deploy ${dir})`
  if (code === 'DEV_NAMESPACE_NOT_FOUND') return `service deploy ${dir} --dev ${context.dev ?? '<name>'}`
  if (code === 'JOB_NOT_FOUND') return `service jobs list --app ${app}${context.dev ? ` --dev ${context.dev}` : ''}`
  if (code === 'FORBIDDEN') return `service access list ${app} (ask the app's owner or an Administer holder for a role)`
  if (code === 'CONFIRMATION_REQUIRED') return 'confirm your email address (the link in the confirmation email), then run the command again'
  if (code === 'APP_NOT_DEPLOYED') return `service deploy ${dir}`
  if (code === 'FUNCTION_NOT_FOUND') return `service releases list ${app}`
  if (code === 'SECRET_NOT_SET') return `service secrets set <NAME> --app ${app}${context.dev ? ` --dev ${context.dev}` : ''}`
  if (code === 'CRON_NOT_FOUND') return `service cron list ${app}`
  if (code === 'SLOT_NOT_FOUND') return `service integrations list ${app}`
  if (code === 'CONNECTION_NOT_FOUND') return 'service connections list'
  if (code === 'MIGRATION_FAILED' || code === 'MIGRATION_MODIFIED') return `fix the migration named above, then: service deploy ${dir}`
  if (code.startsWith('MANIFEST_') || code.startsWith('BUNDLE_')) return `service validate ${dir}`
  if (code === 'DEPLOY_IN_PROGRESS' || code === 'RATE_LIMITED') return 'wait a moment and run the same command again'
  return undefined
}

/**
 * Any throwable as a CliError, once (platform errors keep their code; exit 3 for
 * UNAUTHENTICATED and for APP_TOKEN_NOT_ALLOWED, an app access token where an owner token
 * belongs, which the same step fixes; 4 for an unreachable platform). Anything else is a
 * bug: rethrown.
 */
export function toCliError(error: unknown, context: ErrorContext): CliError {
  if (error instanceof CliError) return error
  if (error instanceof ApiError) {
    const exitCode = error.code === 'UNAUTHENTICATED' || error.code === 'APP_TOKEN_NOT_ALLOWED' ? EXIT.unauthenticated
      : error.code === 'PLATFORM_UNREACHABLE' ? EXIT.unreachable
        : EXIT.failed
    return new CliError(error.code, error.message, { exitCode, details: error.details, next: nextCommand(error.code, context), cause: error })
  }
  throw error
}
