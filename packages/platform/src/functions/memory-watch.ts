/**
 * The resident-memory watch of a pool's workers. V8's heap limit (`--max-old-space-size`)
 * does not count ArrayBuffers, WebAssembly memory or native allocations, so a Function can
 * hold gigabytes outside it; the watch samples each worker's resident set and reports one
 * over its budget, which the pool then kills.
 *
 * Sampling is one timer per pool: every `busyIntervalMs` while any worker runs something,
 * else every `idleIntervalMs` (a Function can leave a timer allocating after it returned),
 * and none once the pool has no worker. The budget is a watch, not a hard cap: a worker can
 * grow past it for up to one interval before it is seen (45 to 85 MiB past a 128 MiB budget
 * when a test Function fills fresh memory as fast as it can). A hard cap is the operating
 * system's (a cgroup or container memory limit around the platform); see docs/operations.md.
 */
import { readResidentBytes, residentMemoryReadable } from './resident-memory.ts'

export interface MemoryWatchOptions<W> {
  /** Resident memory a worker may hold, in MiB. */
  readonly budgetMb: number
  /** Sampling interval while a worker runs something. Default 100 ms. */
  readonly busyIntervalMs?: number
  /** Sampling interval while every worker is idle. Default 1 s. */
  readonly idleIntervalMs?: number
  /** The pool's live workers. */
  workers(): Iterable<W>
  pid(worker: W): number | undefined
  busy(worker: W): boolean
  /** A worker's resident memory is over the budget; called once per sample that sees it. */
  over(worker: W, residentBytes: number): void
}

export interface MemoryWatch {
  /** Work started on a worker (or a worker started): sample at the busy interval from now on. */
  wake(): void
  stop(): void
}

const DEFAULT_BUSY_INTERVAL_MS = 100
const DEFAULT_IDLE_INTERVAL_MS = 1000

/**
 * Starts watching; a no-op watch when the platform cannot read resident memory.
 *
 * @example
 * const watch = createMemoryWatch({ budgetMb: 512, workers: () => workers, pid: (w) => w.process.pid, busy: (w) => w.running.size > 0, over: (w) => w.process.kill('over budget') })
 * watch.wake() // an invocation started
 */
export function createMemoryWatch<W>(options: MemoryWatchOptions<W>): MemoryWatch {
  if (!residentMemoryReadable()) return { wake() {}, stop() {} }
  const budgetBytes = options.budgetMb * 1024 * 1024
  const busyIntervalMs = options.busyIntervalMs ?? DEFAULT_BUSY_INTERVAL_MS
  const idleIntervalMs = options.idleIntervalMs ?? DEFAULT_IDLE_INTERVAL_MS
  let timer: ReturnType<typeof setTimeout> | undefined
  let mode: 'off' | 'busy' | 'idle' = 'off'
  let stopped = false

  function schedule(next: 'busy' | 'idle'): void {
    clearTimeout(timer)
    mode = next
    timer = setTimeout(sample, next === 'busy' ? busyIntervalMs : idleIntervalMs)
    timer.unref()
  }

  function sample(): void {
    timer = undefined
    mode = 'off'
    if (stopped) return
    let any = false
    let anyBusy = false
    for (const worker of [...options.workers()]) {
      any = true
      const pid = options.pid(worker)
      if (pid === undefined) continue
      anyBusy ||= options.busy(worker)
      const bytes = readResidentBytes(pid)
      if (bytes !== null && bytes > budgetBytes) options.over(worker, bytes)
    }
    if (any) schedule(anyBusy ? 'busy' : 'idle')
  }

  return {
    wake() {
      if (!stopped && mode !== 'busy') schedule('busy')
    },
    stop() {
      stopped = true
      clearTimeout(timer)
      timer = undefined
    },
  }
}
