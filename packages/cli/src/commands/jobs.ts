/**
 * `service jobs list|get`: an app namespace's background jobs (spec 2.12, 4.1), from the
 * owner API's `GET /v1/apps/{app}{ns}/jobs` and `/jobs/{id}`: id, queue, state, attempts,
 * timestamps and the latest bounded error. Never a payload, idempotency key or the user
 * who enqueued it (the API does not return them). The owner and Edit holders.
 */
import type { Client } from '../client.ts'
import { usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { appTarget } from './app-target.ts'
import { terminalSafe } from './logs.ts'

export interface JobView {
  id: string
  queue: string
  kind: 'queue' | 'cron'
  state: string
  attempts: number
  maxAttempts: number
  createdAt: string
  updatedAt: string
  runAt: string | null
  startedAt: string | null
  finishedAt: string | null
  lastError: { code: string; message: string } | null
}

interface QueueTotals { queue: string; created: number; retried: number; succeeded: number; failed: number; depth: number }

interface JobHistory { from: string; to: string; jobs: JobView[]; nextCursor: string | null; totals: QueueTotals[] }

export interface JobsOptions {
  readonly action: string | undefined
  readonly id: string | undefined
  readonly extra: readonly string[]
  readonly app: string | undefined
  readonly dev: string | undefined
  readonly queue: string | undefined
  readonly state: string | undefined
  readonly from: string | undefined
  readonly to: string | undefined
  readonly limit: string | undefined
  readonly cursor: string | undefined
}

/** The latest error as one terminal-safe line (a Function wrote its message). */
const errorText = (job: JobView) => (job.lastError === null ? '' : terminalSafe(` ${job.lastError.code}: ${job.lastError.message}`))

export async function jobsCommand(io: Io, client: Client, options: JobsOptions): Promise<number> {
  const target = appTarget(options)
  if (typeof target === 'string') throw usageError(`service jobs: ${target}`, usageOf('jobs'))
  const devFlag = options.dev ? ` --dev ${options.dev}` : ''
  switch (options.action) {
    case 'list': {
      if (options.id !== undefined) break
      const query = new URLSearchParams()
      for (const key of ['queue', 'state', 'from', 'to', 'limit'] as const) {
        const value = options[key]
        if (value !== undefined) query.set(key, value)
      }
      if (options.cursor !== undefined) query.set('nextCursor', options.cursor)
      const search = query.toString() === '' ? '' : `?${query}`
      const history = await client.call<JobHistory>('GET', `${target.prefix}/jobs${search}`)
      printResult(io, history, () => {
        if (history.jobs.length === 0) io.out(`no jobs created in ${target.label} from ${history.from} to ${history.to}${options.queue || options.state ? ' with these filters' : ''}`)
        for (const job of history.jobs) {
          io.out(`${job.id}  ${job.queue.padEnd(20)} ${job.state.padEnd(13)} ${`${job.attempts}/${job.maxAttempts}`.padEnd(6)} ${job.createdAt}${errorText(job)}`)
        }
        if (history.nextCursor !== null) io.err(`more: service jobs list --app ${target.app}${devFlag} --cursor ${history.nextCursor}`)
        for (const t of history.totals) {
          io.err(`queue ${t.queue}: ${t.created} created, ${t.succeeded} succeeded, ${t.failed} failed, ${t.retried} retried, ${t.depth} pending`)
        }
      })
      return 0
    }
    case 'get': {
      if (options.id === undefined || options.extra.length > 0) break
      const { job } = await client.call<{ job: JobView }>('GET', `${target.prefix}/jobs/${encodeURIComponent(options.id)}`)
      printResult(io, { job }, () => {
        io.out(`job ${job.id} (${job.kind} ${job.queue}) in ${target.label}`)
        io.out(`  state      ${job.state}, attempt ${job.attempts} of ${job.maxAttempts}`)
        io.out(`  created    ${job.createdAt}`)
        io.out(`  updated    ${job.updatedAt}`)
        if (job.runAt !== null) io.out(`  runs at    ${job.runAt}`)
        if (job.startedAt !== null) io.out(`  started    ${job.startedAt}`)
        if (job.finishedAt !== null) io.out(`  finished   ${job.finishedAt}`)
        if (job.lastError !== null) io.out(`  last error${errorText(job)}`)
      })
      return 0
    }
  }
  throw usageError('service jobs: list, or get <jobId>', usageOf('jobs'))
}
