/**
 * `service dev <dir> --dev <name>`: the inner loop. Deploys the app directory to the
 * development namespace <name>, then redeploys whenever a bundle file changes (fs.watch,
 * changes within 300 ms deployed once) and streams the namespace's Function logs, until
 * Ctrl-C. A deploy that fails is reported and the loop goes on: the namespace keeps its
 * last good release until the next save fixes it.
 *
 * `service dev delete <name>`: deletes a development namespace of an app (`--app <app>`,
 * else app.id of ./service.yaml) with its schema, data, releases, logs and secrets. It asks
 * first on a terminal; `--yes` confirms without asking, and without a terminal nothing is
 * deleted unless `--yes` is given (a script must say so).
 */
import { watch, type FSWatcher } from 'node:fs'
import type { Client } from '../client.ts'
import { CliError, EXIT, toCliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { jsonLine, printError, printResult } from '../output.ts'
import { appTarget } from './app-target.ts'
import { deployBundle, type DeployResult } from './deploy.ts'
import { followLogs, formatLogLine, newestLogCursor, type LogLine } from './logs.ts'

export interface DevOptions {
  readonly action: string | undefined
  readonly name: string | undefined
  readonly app: string | undefined
  /** --yes: delete without asking. */
  readonly yes: boolean
}

export async function devCommand(io: Io, client: Client, options: DevOptions): Promise<number> {
  if (options.action !== 'delete' || !options.name) throw usageError('service dev delete: name the development namespace', usageOf('dev'))
  const target = appTarget({ app: options.app, dev: options.name })
  if (typeof target === 'string') throw usageError(`service dev delete: ${target}`, usageOf('dev'))
  if (!options.yes) {
    if (!io.confirm) {
      throw usageError(`service dev delete: this deletes ${target.label} with its schema, data, releases, logs and secrets;`
        + ' there is no terminal to ask on, so confirm with --yes. Nothing was deleted.', usageOf('dev'))
    }
    if (!(await io.confirm(`delete ${target.label} with its schema, data, releases, logs and secrets?`))) {
      io.err('nothing was deleted')
      return 1
    }
  }
  await client.call('DELETE', target.prefix)
  printResult(io, { deleted: options.name, app: target.app }, () => io.out(`deleted ${target.label}: its schema, data, releases, logs and secrets are gone`))
  return 0
}

/** Changes within this long of each other are deployed once. */
export const DEV_DEBOUNCE_MS = 300

/** Whether a changed path (relative to the app directory) is part of the bundle. */
export function isBundlePath(path: string): boolean {
  const normal = path.split('\\').join('/')
  if (normal.split('/').some((segment) => segment.startsWith('.') || segment === 'node_modules')) return false
  return normal === 'service.yaml' || /^(functions|public|database\/migrations)\//.test(normal)
}

export interface DevWatchOptions {
  readonly dir: string | undefined
  readonly dev: string | undefined
}

/**
 * Deploy, watch, redeploy and stream logs until `io.signal` aborts; returns 130 then.
 * Under --json each event is one line on stdout: {"event": "deployed", ...the deploy's
 * result}, {"event": "deploy-failed", "error": {...}}, {"event": "log", ...the line}.
 */
export async function devWatchCommand(io: Io, client: Client, options: DevWatchOptions): Promise<number> {
  const { dir, dev } = options
  if (!dir || !dev) throw usageError('service dev: name the app directory and the development namespace (--dev <name>)', usageOf('dev'))
  const event = (value: Record<string, unknown>) => io.out(jsonLine(value))
  let following: Promise<void> | null = null
  const stopLogs = new AbortController()
  // Logs are followed from the first successful deploy on: older lines are not repeated.
  const startLogs = async (result: DeployResult) => {
    if (following !== null) return
    const target = appTarget({ app: result.app.slug, dev })
    if (typeof target === 'string') return
    const logIo: Io = { ...io, signal: AbortSignal.any([stopLogs.signal, ...(io.signal ? [io.signal] : [])]) }
    const onLine = (line: LogLine) => (io.json === true ? event({ event: 'log', ...line }) : io.out(formatLogLine(line)))
    const after = await newestLogCursor(client, target)
    following = followLogs(logIo, client, { target, filters: new URLSearchParams(), after, onLine }).catch((error: unknown) => {
      printError(io, { error: toCliError(error, { command: 'dev', app: result.app.slug, dev, dir }), json: io.json === true })
    })
  }
  const deployOnce = async (reason: string) => {
    if (reason) io.err(reason)
    try {
      const result = await deployBundle(io, client, { dir, dev })
      if (io.json === true) event({ event: 'deployed', ...result })
      else io.out(`deployed ${result.app.slug} release ${result.release.version} to development namespace ${dev}; watching ${dir} (Ctrl-C to stop)`)
      await startLogs(result)
    } catch (error) {
      const failure = toCliError(error, { command: 'dev', app: undefined, dev, dir })
      // Not signed in or no platform: no later save can fix that.
      if (failure.exitCode === EXIT.unauthenticated || failure.exitCode === EXIT.unreachable) throw failure
      if (io.json === true) event({ event: 'deploy-failed', error: { code: failure.code, message: failure.message, ...(failure.details === undefined ? {} : { details: failure.details }) } })
      else printError(io, { error: new CliError(failure.code, `${failure.message} (the namespace keeps its last release; fix and save)`, { details: failure.details }), json: false })
    }
  }

  // Changes are gathered while a deploy runs, then deployed together: one deploy at a time.
  const changed = new Set<string>()
  let due = false
  let wake: (() => void) | null = null
  let timer: ReturnType<typeof setTimeout> | undefined
  let watcher: FSWatcher
  try {
    watcher = watch(dir, { recursive: true }, (_kind, filename) => {
      const path = filename?.toString()
      if (path === undefined || !isBundlePath(path)) return
      changed.add(path.split('\\').join('/'))
      clearTimeout(timer)
      timer = setTimeout(() => {
        due = true
        wake?.()
      }, DEV_DEBOUNCE_MS)
    })
  } catch (error) {
    throw new CliError('DEV_WATCH_FAILED', `cannot watch ${dir}: ${(error as Error).message}`, { cause: error })
  }
  io.signal?.addEventListener('abort', () => wake?.(), { once: true })
  try {
    await deployOnce('')
    while (!(io.signal?.aborted ?? false)) {
      if (!due) {
        await new Promise<void>((resolve) => {
          wake = resolve
        })
      }
      wake = null
      due = false
      if (io.signal?.aborted ?? false) break
      const paths = [...changed].sort()
      changed.clear()
      if (paths.length > 0) await deployOnce(`changed: ${paths.join(', ')}; deploying...`)
    }
  } finally {
    clearTimeout(timer)
    watcher.close()
    stopLogs.abort()
    await following
  }
  return EXIT.interrupted
}
