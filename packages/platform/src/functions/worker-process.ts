/**
 * Adapter (Node child process): one Deno worker process and its newline-delimited JSON
 * channel. It frames stdout into messages, passes stderr lines on as diagnostics, and
 * reports the end of the process once, whatever ended it (exit, signal, spawn failure,
 * or output that breaks the protocol, after which it kills the process itself).
 */
import { spawn } from 'node:child_process'
import { BYTES_TAG, type PlatformMessage, type WorkerMessage } from './protocol.ts'

const MESSAGE_TYPES = new Set(['ready', 'result', 'call', 'loaded', 'head', 'chunk'])

export interface WorkerProcessOptions {
  readonly denoPath: string
  readonly args: readonly string[]
  readonly env: Readonly<Record<string, string>>
  readonly cwd: string
  /** Longest stdout line accepted, in characters; a longer one breaks the protocol and ends the worker. */
  readonly maxMessageChars: number
  /** A message from the worker; `hasBytes` says whether it may hold tagged bytes. */
  onMessage(message: WorkerMessage, hasBytes: boolean): void
  /** One line the worker wrote to stderr (Function console output, worker diagnostics). */
  onStderr(line: string): void
  /** Called once when the process is gone or unusable, with a reason for the log. */
  onEnd(reason: string): void
}

export interface WorkerProcess {
  readonly pid: number | undefined
  /** Writes one message; ignored once the process has ended. */
  send(message: PlatformMessage): void
  /** SIGKILLs the process (a Function may be stuck in a loop, so no gentler signal). */
  kill(reason: string): void
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
    end(signal ? `the Deno process was killed by ${signal}` : `the Deno process exited with code ${code}`)
  })
  child.on('close', () => resolveExited())
  child.stdin.on('error', () => {
    // EPIPE after the process died; the exit handler reports it.
  })

  child.stdout.setEncoding('utf8')
  readLines(child.stdout, options.maxMessageChars, {
    line(line) {
      if (ended) return
      let message: WorkerMessage
      try {
        message = JSON.parse(line) as WorkerMessage
      } catch {
        kill('the worker wrote a line to stdout that is not JSON')
        return
      }
      if (typeof message !== 'object' || message === null || !MESSAGE_TYPES.has(message.type) || (message.type !== 'ready' && typeof message.id !== 'string')) {
        kill('the worker wrote a message the protocol does not have')
        return
      }
      options.onMessage(message, line.includes(BYTES_TAG))
    },
    overflow() {
      kill(`the worker wrote a message over ${options.maxMessageChars} characters`)
    },
  })
  child.stderr.setEncoding('utf8')
  readLines(child.stderr, 64 * 1024, {
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
    },
    kill,
    exited,
  }
}

/** Splits a text stream into lines, scanning each chunk once. */
function readLines(
  stream: NodeJS.ReadableStream,
  maxLength: number,
  handlers: { line(line: string): void; overflow(): void },
): void {
  let pending: string[] = []
  let pendingLength = 0
  let skipping = false
  stream.on('data', (chunk: string) => {
    let start = 0
    let newline = chunk.indexOf('\n')
    while (newline !== -1) {
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
  })
}
