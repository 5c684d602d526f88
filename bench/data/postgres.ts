/**
 * The PostgreSQL the benchmark runs on: DATABASE_URL when set, else a throwaway server from
 * scripts/postgres-test-server.sh (stopped and removed at the end). Either way the run gets
 * its own database, dropped afterwards with the roles the app's namespace created.
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

const ROOT = new URL('../../', import.meta.url).pathname

export interface Server {
  adminUrl: string
  /** True when this run started the server (and may reconfigure or stop it). */
  throwaway: boolean
  stop(): void
}

export function startServer(databaseUrl: string | undefined): Server {
  if (databaseUrl) return { adminUrl: databaseUrl, throwaway: false, stop() {} }
  const out = execFileSync('bash', ['scripts/postgres-test-server.sh'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  const value = (name: string) => {
    const match = new RegExp(`^export ${name}=(.+)$`, 'm').exec(out)
    if (!match?.[1]) throw new Error(`postgres-test-server.sh printed no ${name}`)
    return match[1].trim()
  }
  const dir = value('PG_TEST_DIR')
  return {
    adminUrl: value('DATABASE_URL'),
    throwaway: true,
    stop() {
      execFileSync('bash', ['scripts/postgres-test-server-stop.sh'], { cwd: ROOT, stdio: 'inherit', env: { ...process.env, PG_TEST_DIR: dir } })
    },
  }
}

export interface Database {
  url: string
  version: string
  drop(): Promise<void>
}

export async function createDatabase(adminUrl: string): Promise<Database> {
  const name = `bench_data_${randomBytes(4).toString('hex')}`
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const [row] = await admin.unsafe<{ server_version: string }[]>('show server_version')
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    version: row?.server_version ?? 'unknown',
    async drop() {
      const db = postgres(url.toString(), { max: 1, onnotice: () => {} })
      const prefixes = await db.unsafe<{ role_prefix: string }[]>('select role_prefix from platform.namespaces').catch(() => [])
      await db.end()
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      for (const { role_prefix } of prefixes) {
        for (const role of ['owner', 'user', 'system']) await admin.unsafe(`drop role if exists "${role_prefix}_${role}"`)
      }
      await admin.end()
    },
  }
}
