/**
 * Adapter (Node child process): one Deno worker process and its newline-delimited JSON
 * channel. It frames stdout into messages, passes stderr lines on as diagnostics, and
 * reports the end of the process once, whatever ended it (exit, signal, spawn failure,
 * or output that breaks the protocol, after which it kills the process itself).
 *
 * The worker is untrusted (see protocol.ts): its first stdin line is `hello` with a fresh
 * nonce, and a stdout line is accepted only when it starts with that nonce and then
 * `{"type":"<type>"` of a known type within that type's size limit, all checked before the
 * line is parsed. Reading stdout pauses while the worker leaves more than
 * STDIN_BACKLOG_CHARS of our messages unread, or while the caller holds it (`hold`).
 */
import { randomBytes } from 'node:crypto'
import { spawn } from 'node:child_process'
import { BYTES_TAG, WORKER_MESSAGE_LIMITS, type PlatformMessage, type WorkerMessage } from './protocol.ts'

const TYPE_PREFIX = '{"type":"'
const LONGEST_TYPE = Math.max(...Object.keys(WORKER_MESSAGE_LIMITS).map((type) => type.length))
const LONGEST_MESSAGE = Math.max(...Object.values(WORKER_MESSAGE_LIMITS))
/** Unread characters queued for the worker's stdin above which its stdout is not read. */
const STDIN_BACKLOG_CHARS = 8 * 1024 * 1024
/** After the process exits, how long its last stderr lines may take to arrive before its end is reported. */
const STDERR_DRAIN_MS = 500

export interface WorkerProcessOptions {
  readonly denoPath: string
  readonly args: readonly string[]
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  /**
   * A message from the worker; `hasBytes` says whether it may hold tagged bytes, `chars`
   * is its length. Its fields are as the worker wrote them: check them.
   */
  onMessage(message: WorkerMessage, hasBytes: boolean, chars: number): void
  /** One line the worker wrote to stderr (Function console output, worker diagnostics). */
  onStderr(line: string): void
  /**
   * Called once when the process is gone or unusable, with a reason for the log. When the
   * process ended by itself, the stderr lines it wrote have reached `onStderr` first (unless
   * its stderr stays open STDERR_DRAIN_MS after it exited).
   */
  onEnd(reason: string): void
}

export interface WorkerProcess {
  readonly pid: number | undefined
  /** Writes one message; ignored once the process has ended. */
  send(message: PlatformMessage): void
  /** SIGKILLs the process (a Function may be stuck in a loop, so no gentler signal). */
  kill(reason: string): void
  /** Stops reading the worker's messages while `held` (the caller has too much of its work open). */
  hold(held: boolean): void
  /** Resolves when the OS process has exited (or never started). */
  readonly exited: Promise<void>
}

/**
 * Starts `deno` with `args` and wires its channel.
 *
 * @example
 * const worker = startWorkerProcess({ denoPath, args, env, cwd, maxMessageChars, onMessage, onStderr, onEnd })
 * worker.send({ type: 'load', id: '1', entrypoint: 'functions/a.ts' })
 */
export function startWorkerProcess(options: WorkerProcessOptions): WorkerProcess {
  const child = spawn(options.denoPath, [...options.args], {
    cwd: options.cwd,
    env: { ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let ended = false
  let resolveExited: () => void = () => {}
  const exited = new Promise<void>((resolve) => {
    resolveExited = resolve
  })

  const end = (reason: string) => {
    if (ended) return
    ended = true
    options.onEnd(reason)
  }
  const kill = (reason: string) => {
    end(reason)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }

  child.on('error', (error) => {
    end(`the Deno process failed: ${error.message}`)
    resolveExited()
  })
  child.on('exit', (code, signal) => {
    const reason = signal ? `the Deno process was killed by ${signal}` : `the Deno process exited with code ${code}`
    // What the process wrote just before it ended (V8's "out of memory" report) is read
    // before its end is reported; the stream ends at once unless something holds it open.
    if (child.stderr.readableEnded || child.stderr.destroyed) {
      end(reason)
      return
    }
    const fallback = setTimeout(() => end(reason), STDERR_DRAIN_MS)
    fallback.unref()
    child.stderr.once('close', () => {
      clearTimeout(fallback)
      end(reason)
    })
  })
  child.on('close', () => resolveExited())
  child.stdin.on('error', () => {
    // EPIPE after the process died; the exit handler reports it.
  })

  const nonce = randomBytes(24).toString('base64url')
  child.stdout.setEncoding('utf8')
  let held = false
  let backlogged = false
  const stdout = readLines(child.stdout, nonce.length + LONGEST_MESSAGE, {
    paused: () => held || backlogged,
    line(line) {
      if (ended) return
      const problem = lineProblem(line, nonce)
      if (problem !== null) {
        kill(`the worker broke the protocol: ${problem}`)
        return
      }
      let message: WorkerMessage
      try {
        message = JSON.parse(line.slice(nonce.length)) as WorkerMessage
      } catch {
        kill('the worker broke the protocol: a line that is not JSON')
        return
      }
      const chars = line.length - nonce.length
      // The type is checked again as parsed: JSON keeps the last of repeated keys.
      if (typeof message !== 'object' || message === null || !Object.hasOwn(WORKER_MESSAGE_LIMITS, message.type) || chars > WORKER_MESSAGE_LIMITS[message.type]) {
        kill('the worker broke the protocol: a message the protocol does not have')
        return
      }
      if (message.type !== 'ready' && typeof message.id !== 'string') {
        kill('the worker broke the protocol: a message without an id')
        return
      }
      options.onMessage(message, line.includes(BYTES_TAG), chars)
    },
    overflow() {
      kill(`the worker broke the protocol: a line over ${LONGEST_MESSAGE} characters`)
    },
  })
  const updateReading = () => {
    if (held || backlogged) {
      child.stdout.pause()
    } else {
      child.stdout.resume()
      stdout.resume()
    }
  }
  child.stdin.on('drain', () => {
    backlogged = false
    updateReading()
  })
  // Before anything else reaches the worker, so it knows the nonce before any Function loads.
  child.stdin.write(JSON.stringify({ type: 'hello', nonce } satisfies PlatformMessage) + '\n')
  child.stderr.setEncoding('utf8')
  void readLines(child.stderr, 64 * 1024, {
    line: (line) => options.onStderr(line),
    overflow: () => options.onStderr('[a stderr line over 64 KiB was cut]'),
  })

  return {
    get pid() {
      return child.pid
    },
    send(message) {
      if (ended || !child.stdin.writable) return
      child.stdin.write(JSON.stringify(message) + '\n')
      if (!backlogged && child.stdin.writableLength > STDIN_BACKLOG_CHARS) {
        backlogged = true
        updateReading()
      }
    },
    kill,
    hold(hold) {
      if (held === hold) return
      held = hold
      updateReading()
    },
    exited,
  }
}

/**
 * Why a worker's stdout line is not a message, or null: it must start with the nonce
 * (compared in constant time) and `{"type":"<known type>"`, within that type's limit.
 */
function lineProblem(line: string, nonce: string): string | null {
  let difference = line.length < nonce.length ? 1 : 0
  for (let index = 0; index < nonce.length; index += 1) difference |= line.charCodeAt(index) ^ nonce.charCodeAt(index)
  if (difference !== 0) return 'a line without its nonce (written by Function code?)'
  if (!line.startsWith(TYPE_PREFIX, nonce.length)) return 'a message that does not start with its type'
  const typeStart = nonce.length + TYPE_PREFIX.length
  const typeEnd = line.indexOf('"', typeStart)
  const type = typeEnd === -1 || typeEnd - typeStart > LONGEST_TYPE ? '' : line.slice(typeStart, typeEnd)
  const limit = Object.hasOwn(WORKER_MESSAGE_LIMITS, type) ? WORKER_MESSAGE_LIMITS[type as WorkerMessage['type']] : undefined
  if (limit === undefined) return 'a message type the protocol does not have'
  if (line.length - nonce.length > limit) return `a ${type} message of ${line.length - nonce.length} characters (at most ${limit})`
  return null
}

/**
 * Splits a text stream into lines, scanning each chunk once. While `paused()` says so, no
 * further line is handled (the rest of the chunk waits for `resume`).
 */
function readLines(
  stream: NodeJS.ReadableStream,
  maxLength: number,
  handlers: { line(line: string): void; overflow(): void; paused?(): boolean },
): { resume(): void } {
  let pending: string[] = []
  let pendingLength = 0
  let skipping = false
  let waiting = ''
  const feed = (chunk: string) => {
    if (waiting !== '') {
      waiting += chunk
      return
    }
    let start = 0
    let newline = chunk.indexOf('\n')
    while (newline !== -1) {
      if (handlers.paused?.() === true) {
        waiting = chunk.slice(start)
        return
      }
      if (skipping) {
        skipping = false
      } else {
        pending.push(chunk.slice(start, newline))
        const line = pending.length === 1 ? pending[0] ?? '' : pending.join('')
        if (line.length > 0) handlers.line(line)
      }
      pending = []
      pendingLength = 0
      start = newline + 1
      newline = chunk.indexOf('\n', start)
    }
    if (start < chunk.length && !skipping) {
      pending.push(chunk.slice(start))
      pendingLength += chunk.length - start
      if (pendingLength > maxLength) {
        pending = []
        pendingLength = 0
        skipping = true
        handlers.overflow()
      }
    }
  }
  stream.on('data', feed)
  return {
    resume() {
      const rest = waiting
      waiting = ''
      if (rest !== '') feed(rest)
    },
  }
}
