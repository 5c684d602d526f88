/** The platform server under test as a child process (server.ts), driven over IPC; and the floor server. */
import { fork, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import type { Fixture, FromServer, Profile, Storage, ToServer } from './protocol.ts'

export interface Child {
  pid: number
  fixture: Fixture
  profile(on: boolean): Promise<Profile | null>
  stop(): Promise<void>
}

function request(child: ChildProcess, message: ToServer): void {
  child.send(message)
}

function nextMessage(child: ChildProcess, type: FromServer['type']): Promise<FromServer> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: FromServer) => {
      if (message.type !== type && message.type !== 'failed') return
      child.off('message', onMessage)
      child.off('exit', onExit)
      if (message.type === 'failed') reject(new Error(`the platform server failed:\n${message.message}`))
      else resolve(message)
    }
    const onExit = (code: number | null) => reject(new Error(`the platform server exited (${code}) before answering ${type}`))
    child.on('message', onMessage)
    child.once('exit', onExit)
  })
}

/** The V8 flags `npm start` runs the platform with (package.json), so the bench's servers run as it does. */
const START_FLAGS: string[] = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } })
  .scripts.start.split(' ').filter((arg) => arg.startsWith('--max-'))

/** tsx, and with BENCH_CPU_PROF (a directory) a V8 CPU profile written there on exit. */
function execArgv(): string[] {
  const profileDir = process.env.BENCH_CPU_PROF
  return [...START_FLAGS, '--import', 'tsx', ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])]
}

/**
 * Forks server.ts, sets up the platform and the bench app, and resolves when it listens.
 * BENCH_CPU_PROF (a directory) makes the server write a V8 CPU profile there on exit.
 */
export async function startChild(options: Omit<Extract<ToServer, { type: 'start' }>, 'type'>): Promise<Child> {
  const child = fork(new URL('./server.ts', import.meta.url).pathname, [], {
    execArgv: execArgv(),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = nextMessage(child, 'ready')
  request(child, { type: 'start', ...options })
  let fixture: Fixture
  try {
    fixture = (await ready as Extract<FromServer, { type: 'ready' }>).fixture
  } catch (error) {
    child.kill()
    throw error
  }
  return {
    pid: child.pid ?? 0,
    fixture,
    async profile(on) {
      if (on) {
        request(child, { type: 'profile', on })
        return null
      }
      const answer = nextMessage(child, 'profile')
      request(child, { type: 'profile', on })
      return (await answer as Extract<FromServer, { type: 'profile' }>).profile
    },
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      request(child, { type: 'stop' })
      await exited
    },
  }
}

/**
 * The bare Hono + driver server (floor-server.ts): the best a Node HTTP layer can do here.
 * BENCH_CPU_PROF makes it write a profile too, to compare with the platform server's.
 */
export async function startFloor(databaseUrl: string, table: string, connections: number): Promise<{ pid: number; port: number; stop(): Promise<void> }> {
  const child = fork(new URL('./floor-server.ts', import.meta.url).pathname, [], {
    execArgv: execArgv(),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port))
    child.once('exit', (code) => reject(new Error(`the floor server exited (${code})`)))
    child.send({ databaseUrl, table, connections })
  })
  return {
    pid: child.pid ?? 0,
    port,
    async stop() {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      child.send('stop')
      await exited
    },
  }
}
