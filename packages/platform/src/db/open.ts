/** Opens the configured storage: PostgreSQL when DATABASE_URL is set, else PGlite on disk. */
import { join } from 'node:path'
import type { Config } from '../config.ts'
import type { Logger } from '../lib/logger.ts'
import type { Db } from './db.ts'
import { openPglite } from './pglite.ts'
import { openPostgres } from './postgres.ts'

export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'statementTimeoutMs'>,
  options: { logger?: Logger } = {},
): Promise<Db> {
  if (config.databaseUrl) return openPostgres({ url: config.databaseUrl, statementTimeoutMs: config.statementTimeoutMs })
  return openPglite({
    dataDir: join(config.dataDir, 'pgdata'),
    statementTimeoutMs: config.statementTimeoutMs,
    ...(options.logger ? { logger: options.logger } : {}),
  })
}
