/**
 * A bare Deno process that answers each JSON line on stdin with one JSON line on stdout:
 * the floor of a Function round trip (spawned the way the pool spawns workers, over a pipe,
 * with none of the platform's protocol, sandbox checks or SDK).
 */
import { spawn } from 'node:child_process'

export const ECHO_SCRIPT = `
const reader = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader()
const writer = Deno.stdout.writable.getWriter()
const encoder = new TextEncoder()
let pending = ''
for (;;) {
  const { value, done } = await reader.read()
  if (done) break
  pending += value
  let newline
  while ((newline = pending.indexOf('\\n')) !== -1) {
    const message = JSON.parse(pending.slice(0, newline))
    pending = pending.slice(newline + 1)
    writer.write(encoder.encode(JSON.stringify({ id: message.id, ok: true, value: message.input }) + '\\n'))
  }
}
`

export interface EchoChild {
  /** Sends one line and resolves with the answering line (calls must not overlap). */
  call(input: unknown): Promise<string>
  close(): void
}

export function startEchoChild(deno: string, script: string, denoDir: string): EchoChild {
  const child = spawn(deno, ['run', '--no-prompt', '--no-config', '--no-lock', script], { env: { DENO_DIR: denoDir, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'inherit'] })
  child.stdout.setEncoding('utf8')
  let pending = ''
  let waiter: ((line: string) => void) | undefined
  child.stdout.on('data', (chunk: string) => {
    pending += chunk
    const newline = pending.indexOf('\n')
    if (newline !== -1) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      waiter?.(line)
    }
  })
  let id = 0
  return {
    call: (input) => new Promise<string>((resolve) => {
      waiter = resolve
      id += 1
      child.stdin.write(JSON.stringify({ type: 'invoke', id: String(id), input }) + '\n')
    }),
    close: () => child.kill('SIGKILL'),
  }
}
