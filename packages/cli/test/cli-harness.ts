/**
 * Shared pieces of the CLI tests: the in-process platform served over real HTTP on a random
 * loopback port (the CLI talks HTTP; requests are re-addressed to the harness's base host),
 * and an `Io` that captures what the CLI prints.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { serve, type ServerType } from '@hono/node-server'
import { startHarness, type Harness } from '../../platform/test/harness.ts'
import type { Io } from '../src/io.ts'

export function capture(env: Record<string, string | undefined>) {
  const out: string[] = []
  const err: string[] = []
  const io: Io = { out: (l) => out.push(l), err: (l) => err.push(l), env }
  return { io, out, err }
}

/** Serves the harness platform on 127.0.0.1; returns the server and its URL. */
export async function serveHarness(h: Harness): Promise<{ server: ServerType; url: string }> {
  const base = new URL(h.platform.urls.base)
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({
      fetch: (req) => {
        const url = new URL(req.url)
        url.host = base.host
        const headers = new Headers(req.headers)
        headers.set('host', url.host)
        return h.platform.fetch(new Request(url, { method: req.method, headers, body: req.body, duplex: 'half' } as RequestInit))
      },
      port: 0,
      hostname: '127.0.0.1',
    }, () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  return { server, url: `http://127.0.0.1:${port}` }
}

/**
 * Waits until the CLI has printed a line matching `pattern` (it polls, up to 30 s: a deploy
 * behind the line can take seconds on a loaded machine); returns the match.
 */
export async function printed(lines: string[], pattern: RegExp): Promise<string> {
  for (const end = Date.now() + 30_000; Date.now() < end;) {
    const line = lines.find((l) => pattern.test(l))
    if (line) return pattern.exec(line)![0]
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`the CLI never printed ${pattern}`)
}

/** A served harness with one owner whose token the CLI uses, and an app directory written from `files`. */
export interface OwnerCli {
  h: Harness
  server: ServerType
  env: Record<string, string>
  dir: string
  ownerToken: string
  close(): Promise<void>
}

export async function startOwnerCli(files: Readonly<Record<string, string>>, dirPrefix: string): Promise<OwnerCli> {
  const dir = mkdtempSync(join(tmpdir(), dirPrefix))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  const h = await startHarness()
  const owner = await h.createOwner('owner@acme.test')
  const { server, url } = await serveHarness(h)
  return {
    h, server, dir, ownerToken: owner.token,
    env: { SERVICE_URL: url, SERVICE_TOKEN: owner.token },
    async close() {
      server.close()
      await h.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The real `service` command. */
export const BIN = fileURLToPath(new URL('../bin/service.mjs', import.meta.url))

/**
 * Runs the real `service` command in a child process, `input` written to its stdin. With
 * `terminal` its stdin and stderr are a pseudo-terminal (util-linux `script`), so the
 * input is what a person types; without, stdin is a pipe. Returns the exit code and
 * everything it printed.
 */
export async function runService(args: readonly string[], options: {
  env: Record<string, string | undefined>
  input?: string
  terminal?: boolean
  cwd?: string
}): Promise<{ code: number | null; output: string }> {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`
  const [command, argv] = options.terminal
    ? ['script', ['-qec', [process.execPath, BIN, ...args].map(quote).join(' '), '/dev/null']]
    : [process.execPath, [BIN, ...args]]
  const child = spawn(command, argv, {
    env: { ...process.env, ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.cwd ? { cwd: options.cwd } : {}),
  })
  let output = ''
  child.stdout.on('data', (chunk) => (output += chunk))
  child.stderr.on('data', (chunk) => (output += chunk))
  child.stdin.end(options.input ?? '')
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, output }
}
