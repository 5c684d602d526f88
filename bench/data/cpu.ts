/**
 * CPU time per request, split by process: this process (the load generator and the driver
 * workers), the server under test, and PostgreSQL (the postmaster and every backend). Linux
 * only (/proc); PostgreSQL only when it runs on this machine. Where a figure cannot be read
 * the meter returns null and the report leaves it out.
 */
import { readdirSync, readFileSync } from 'node:fs'

const TICKS_PER_SECOND = 100

/** utime + stime of one process, in seconds, or null when it cannot be read. */
export function processSeconds(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

function parentOf(pid: number): number | null {
  try {
    return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1])
  } catch {
    return null
  }
}

/** The postmaster and its children (backends, background workers). */
function postgresSeconds(postmaster: number): number {
  let total = processSeconds(postmaster) ?? 0
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const pid = Number(name)
    if (parentOf(pid) === postmaster) total += processSeconds(pid) ?? 0
  }
  return total
}

/** The postmaster of a local server, from one backend's parent; null when not local. */
export function postmasterOf(backendPid: number): number | null {
  const parent = parentOf(backendPid)
  return parent && processSeconds(parent) !== null ? parent : null
}

export interface CpuPerRequest {
  /** Microseconds of CPU per completed request. */
  client: number
  server: number | null
  postgres: number | null
}

export interface CpuReading {
  client: number
  server: number | null
  postgres: number | null
  /** Busy seconds of the whole machine, all processes (null without /proc/stat). */
  machine: number | null
}

function machineSeconds(): number | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields
    return (user + nice + system + irq + softirq + steal) / TICKS_PER_SECOND
  } catch {
    return null
  }
}

export function readCpu(serverPid: number | null, postmaster: number | null): CpuReading {
  const usage = process.cpuUsage()
  return {
    client: (usage.user + usage.system) / 1e6,
    server: serverPid === null ? null : processSeconds(serverPid),
    postgres: postmaster === null ? null : postgresSeconds(postmaster),
    machine: machineSeconds(),
  }
}

/**
 * CPU seconds that processes other than the measured ones used between two readings: work
 * from elsewhere sharing the CPUs during a measurement.
 */
export function otherSeconds(before: CpuReading, after: CpuReading): number | null {
  if (before.machine === null || after.machine === null) return null
  const mine = (after.client - before.client) + ((after.server ?? 0) - (before.server ?? 0)) +
    ((after.postgres ?? 0) - (before.postgres ?? 0))
  return Math.max(0, after.machine - before.machine - mine)
}

export function perRequest(before: CpuReading, after: CpuReading, requests: number): CpuPerRequest {
  const micro = (a: number | null, b: number | null) => (a === null || b === null ? null : ((b - a) / requests) * 1e6)
  return {
    client: ((after.client - before.client) / requests) * 1e6,
    server: micro(before.server, after.server),
    postgres: micro(before.postgres, after.postgres),
  }
}
