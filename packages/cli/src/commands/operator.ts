/**
 * `service operator create-user`: the operator creates a confirmed user in a company and
 * receives its owner API token once. The operator key comes from SERVICE_OPERATOR_KEY or
 * the platform's data directory (SERVICE_DATA_DIR, default ./.service), the directory the
 * CLI also finds the platform's URL in.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { dataDir } from '../platform-url.ts'

function operatorKey(io: Io): string | null {
  if (io.env.SERVICE_OPERATOR_KEY) return io.env.SERVICE_OPERATOR_KEY
  const path = join(dataDir(io.env), 'operator-key')
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : null
}

export async function createUserCommand(
  io: Io,
  client: Client,
  options: { email: string | undefined; company: string | undefined; admin: boolean; platformAdmin: boolean },
): Promise<number> {
  if (!options.email || !options.company) throw usageError('service operator create-user: --email and --company are needed', usageOf('operator'))
  const key = operatorKey(io)
  if (!key) {
    throw new CliError('OPERATOR_KEY_MISSING', `no operator key: SERVICE_OPERATOR_KEY is not set and ${join(dataDir(io.env), 'operator-key')} does not exist`, {
      next: 'run this in the platform\'s directory, or set SERVICE_DATA_DIR to its data directory (or SERVICE_OPERATOR_KEY to the key)',
    })
  }
  const result = await client.call<{ user: { id: string; email: string; organisationRole: string }; token: string }>(
    'POST', '/v1/operator/users',
    { email: options.email, company: options.company, admin: options.admin, platformAdmin: options.platformAdmin },
    key)
  printResult(io, { user: result.user, token: result.token }, () => {
    io.out(`created ${result.user.email} (${result.user.organisationRole} of ${options.company})`)
    io.out('owner API token (shown once; keep it in a secret manager):')
    io.out(result.token)
    io.out('use it with: export SERVICE_TOKEN=<the token above>')
  })
  return 0
}
