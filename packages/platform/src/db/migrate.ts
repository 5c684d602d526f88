/**
 * Versioned migrations of the platform's own schema: numbered plain .sql files beside this
 * module, applied in order, each once, in one transaction under an advisory lock, so two
 * platform processes starting at the same time are safe (the second waits, then finds
 * nothing left to do).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Logger } from '../lib/logger.ts'
import type { Db } from './db.ts'

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url))
/** Arbitrary constant naming the platform-migration advisory lock. */
const MIGRATION_LOCK = 7_262_736_101

export interface Migration {
  version: number
  name: string
  sql: string
}

export function platformMigrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(MIGRATIONS_DIR + file, 'utf8'),
    }))
}

/**
 * Applies every pending platform migration; returns the versions applied now. With a
 * logger: one line per migration applied (after the commit), or one line when they fail.
 */
export async function migratePlatform(db: Db, options: { logger?: Logger } = {}): Promise<number[]> {
  const migrations = platformMigrations()
  const { logger } = options
  let applied: number[]
  try {
    applied = await applyPending(db, migrations)
  } catch (error) {
    logger?.error('platform migrations failed; nothing was applied', { error: error instanceof Error ? error.message : String(error) })
    throw error
  }
  for (const version of applied) {
    logger?.info('platform migration applied', { version, name: migrations.find((m) => m.version === version)?.name })
  }
  return applied
}

async function applyPending(db: Db, migrations: Migration[]): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await tx.query('create schema if not exists platform')
    await tx.query(`create table if not exists platform.schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`)
    const done = new Set(
      (await tx.query<{ version: number }>('select version from platform.schema_migrations')).map(
        (row) => row.version,
      ),
    )
    const applied: number[] = []
    for (const migration of migrations) {
      if (done.has(migration.version)) continue
      await tx.exec(migration.sql)
      await tx.query('insert into platform.schema_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ])
      applied.push(migration.version)
    }
    return applied
  })
}
