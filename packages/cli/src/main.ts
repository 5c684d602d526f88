/**
 * `service`: the builder's and operator's command line. Talks to the platform through the
 * owner API; `validate` works offline with the platform's own manifest rules.
 *
 *   service validate <dir>
 *   service deploy <dir>
 *   service apps list
 *   service releases list <app>
 *   service operator create-user --email <email> --company <name> [--admin] [--platform-admin]
 */
import { parseArgs } from 'node:util'
import { ApiError, createClient } from './client.ts'
import { validateCommand } from './commands/validate.ts'
import { deployCommand } from './commands/deploy.ts'
import { appsListCommand, releasesListCommand } from './commands/apps.ts'
import { createUserCommand } from './commands/operator.ts'

export interface Io {
  out(line: string): void
  err(line: string): void
  env: Record<string, string | undefined>
}

const USAGE = `usage: service <command>

  validate <dir>                 check an app directory's service.yaml and bundle layout
  deploy <dir>                   deploy an app directory (creates the app on first deploy)
  apps list                      list your apps
  releases list <app>            list an app's releases
  operator create-user --email <email> --company <name> [--admin] [--platform-admin]
                                 create a user and print an owner API token (operator key needed)

environment: SERVICE_URL (default http://localhost:8787), SERVICE_TOKEN (owner API token),
             SERVICE_OPERATOR_KEY or SERVICE_DATA_DIR (operator commands)`

const defaultIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  env: process.env,
}

export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        email: { type: 'string' },
        company: { type: 'string' },
        admin: { type: 'boolean' },
        'platform-admin': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    io.err(`service: ${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  const [command, sub, arg] = positionals
  if (values.help || !command) {
    io.out(USAGE)
    return command ? 0 : 2
  }
  const client = createClient({ baseUrl: values.url ?? io.env.SERVICE_URL ?? 'http://localhost:8787', token: io.env.SERVICE_TOKEN })
  try {
    switch (command) {
      case 'validate':
        return await validateCommand(io, sub)
      case 'deploy':
        return await deployCommand(io, client, sub)
      case 'apps':
        if (sub === 'list') return await appsListCommand(io, client)
        break
      case 'releases':
        if (sub === 'list') return await releasesListCommand(io, client, arg)
        break
      case 'operator':
        if (sub === 'create-user') {
          return await createUserCommand(io, client, {
            email: values.email,
            company: values.company,
            admin: values.admin ?? false,
            platformAdmin: values['platform-admin'] ?? false,
          })
        }
        break
    }
    io.err(`service: unknown command "${positionals.join(' ')}"\n\n${USAGE}`)
    return 2
  } catch (error) {
    if (error instanceof ApiError) {
      io.err(`error ${error.code}: ${error.message}`)
      printDetails(io, error.details)
      return 1
    }
    throw error
  }
}

function printDetails(io: Io, details: unknown) {
  const problems = (details as { problems?: { path: string; message: string }[] } | undefined)?.problems
  for (const p of problems ?? []) io.err(`  ${p.path}: ${p.message}`)
  const errors = (details as { errors?: { line: number; column: number; code: string; message: string }[] } | undefined)?.errors
  for (const p of errors ?? []) io.err(`  service.yaml:${p.line}:${p.column} ${p.code} ${p.message}`)
  const migration = details as { migration?: string; line?: number; column?: number; sqlState?: string } | undefined
  if (migration?.migration) {
    io.err(`  ${migration.migration}${migration.line ? `:${migration.line}:${migration.column}` : ''} SQLSTATE ${migration.sqlState}`)
  }
}
