/**
 * Child platform processes over a PostgreSQL test harness's database, for the tests that
 * kill one mid-work (jobs/processes, events/fault, push/processes) or need separate processes to compete
 * (sync/processes): each runs platform-process.ts with the harness's master key and one
 * worker, and is ready once it says so.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Harness } from './harness.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const SCRIPT = fileURLToPath(new URL('./platform-process.ts', import.meta.url))

export interface PlatformProcess {
  readonly process: ChildProcess
  readonly exited: Promise<void>
}

export interface PlatformProcesses {
  /**
   * Starts a process running `worker` with `capacity` attempts at once; resolves once it is
   * ready. `realtime` serves HTTP on `options.httpPort`.
   */
  start(worker: 'jobs' | 'events' | 'sync' | 'push' | 'email' | 'realtime', capacity: number, options?: { httpPort?: number }): Promise<PlatformProcess>
  /** Kills what still runs and removes the processes' bundles. */
  close(): Promise<void>
}

/**
 * @example
 * const processes = await platformProcesses(h)
 * const doomed = await processes.start('jobs', 8)
 * doomed.process.kill('SIGKILL')
 * // Processes whose clock reads 11:59:50 now (real time shifted), for a schedule's noon occurrence.
 * const shifted = await platformProcesses(h, { clockOffsetMs: Date.parse('2026-11-21T11:59:50Z') - Date.now() })
 */
export async function platformProcesses(h: Harness, options: { clockOffsetMs?: number; smtpUrl?: string } = {}): Promise<PlatformProcesses> {
  // The harness's own database on its server.
  const [{ name }] = (await h.t.db.query<{ name: string }>('select current_database() as name')) as [{ name: string }]
  const target = new URL(process.env.DATABASE_URL!)
  target.pathname = `/${name}`
  const url = target.toString()
  const bundlesDir = mkdtempSync(join(tmpdir(), 'service-processes-'))
  const children: PlatformProcess[] = []
  return {
    async start(worker, capacity, startOptions = {}) {
      const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT, url, bundlesDir, worker, String(capacity)], {
        cwd: REPO,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: {
          ...process.env,
          SERVICE_TEST_MASTER_KEY: Buffer.from(h.masterKey).toString('hex'),
          SERVICE_TEST_CLOCK_OFFSET_MS: String(Math.round(options.clockOffsetMs ?? 0)),
          // The email worker's SMTP server (a test server on loopback); unset: the development mailbox.
          SERVICE_TEST_SMTP_URL: options.smtpUrl ?? '',
          // The realtime worker's HTTP port.
          SERVICE_TEST_HTTP_PORT: String(startOptions.httpPort ?? ''),
        },
      })
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      const record = { process: child, exited }
      children.push(record)
      await new Promise<void>((resolve, reject) => {
        let out = ''
        child.stdout!.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          if (out.includes('ready\n')) resolve()
        })
        child.once('exit', (code) => reject(new Error(`the platform process exited (${code}) before it was ready`)))
      })
      return record
    },
    async close() {
      for (const child of children) {
        if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL')
        await child.exited
      }
      rmSync(bundlesDir, { recursive: true, force: true })
    },
  }
}
