/**
 * Adapter (Linux `/proc`): the resident memory of a process, read from the `VmRSS` line of
 * `/proc/<pid>/status` (in kB, so no page size is assumed). One read costs about 25 µs.
 * Elsewhere (macOS, Windows) there is no `/proc`: `residentMemoryReadable` says so and the
 * Functions pool watches nothing, leaving the V8 heap limit as the only memory bound.
 */
import { readFileSync } from 'node:fs'

let readable: boolean | undefined

/**
 * Whether this platform exposes processes' resident memory (checked once, on this process).
 *
 * @example
 * if (!residentMemoryReadable()) logger.info('functions: no /proc; only the heap limit applies')
 */
export function residentMemoryReadable(): boolean {
  readable ??= readResidentBytes(process.pid) !== null
  return readable
}

/**
 * The resident set size of `pid` in bytes, or null when it cannot be read (the process is
 * gone, or the platform has no `/proc`).
 *
 * @example
 * const bytes = readResidentBytes(worker.pid) // 52428800
 */
export function readResidentBytes(pid: number): number | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/status`, 'latin1')
  } catch {
    return null
  }
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(text)
  return match === null ? null : Number(match[1]) * 1024
}
