/**
 * `service`: the builder's and operator's command line. Talks to the platform through the
 * owner API; `validate` works offline with the platform's own manifest rules.
 *
 *   service validate <dir>
 *   service deploy <dir>
 *   service apps list
 *   service releases list <app>
 *   service login | logout
 *   service app access-token list|create|revoke|request <app> ...
 *   service access list|set|remove|audience <app> ...
 *   service integrations list|bind|unbind <app> ... | service connections list
 *   service operator create-user --email <email> --company <name> [--admin] [--platform-admin]
 *   service cron next "<expr>" [--tz <zone>] [--from <ISO>] [--count <n>]
 *   service cron list <app> | service cron run <app> <name>
 *   service secrets set <NAME> | list | unset <NAME> [--app <app>] [--dev <name>]
 *   service logs [--app <app>] [--dev <name>] [--function <name>] [--level <level>] [--from <ISO>] [--to <ISO>] [--limit <n>]
 *   service functions invoke <name> --dev <name> [--input '<json>'] [--as owner|anonymous] [--app <app>]
 *   service dev delete <name> [--app <app>] [--yes]
 *
 * The platform is --url, else SERVICE_URL, else the URL a platform started in this directory
 * (or above it) recorded in .service/url (SERVICE_DATA_DIR), else http://localhost:8787
 * (platform-url.ts).
 */
import { parseArgs } from 'node:util'
import { ApiError, createClient, type Client } from './client.ts'
import { validateCommand } from './commands/validate.ts'
import { deployCommand } from './commands/deploy.ts'
import { appsListCommand, releasesListCommand } from './commands/apps.ts'
import { createUserCommand } from './commands/operator.ts'
import {
  accessTokenCreateCommand, accessTokenListCommand, accessTokenRequestCommand, accessTokenRevokeCommand,
} from './commands/access-token.ts'
import { loginCommand, logoutCommand, pollOptions } from './commands/login.ts'
import { cronListCommand, cronNextCommand, cronRunCommand } from './commands/cron.ts'
import { readSecretFromProcess, secretsCommand } from './commands/secrets.ts'
import { devCommand } from './commands/dev.ts'
import { logsCommand } from './commands/logs.ts'
import { functionsInvokeCommand } from './commands/functions.ts'
import { accessCommand } from './commands/access.ts'
import { connectionsListCommand, integrationsCommand } from './commands/integrations.ts'
import { openCredentialStore, type CredentialStore } from './credentials.ts'
import type { Io } from './io.ts'
import { confirmOnTerminal } from './confirm.ts'
import { platformUrl, unreachableHint } from './platform-url.ts'

const USAGE = `usage: service <command>

  validate <dir>                 check an app directory's service.yaml and bundle layout
  deploy <dir> [--dev <name>]    deploy an app directory (creates the app on first deploy);
                                 --dev: into that development namespace, production untouched
  apps list                      list your apps
  releases list <app>            list an app's releases
  login                          sign in through the browser; the token goes to the OS credential store
  logout                         revoke the CLI's token and remove it from the credential store
  app access-token list <app>    list an app's access tokens (svc_app_…)
  app access-token create <app> [--name <name>]
                                 create one; prints a one-time link that shows it to the owner
  app access-token revoke <app> <tokenId>
                                 revoke one; it stops working on the next request
  app access-token request <app> [--name <name>]
                                 without owner credentials: ask the owner to approve a token
  access list <app>              who holds which role on an app (Use, Edit, Administer)
  access set <app> <email|userId> use|edit|administer
                                 give a member of the app's organisation that role (Use also
                                 to a person of no company); owner or Administer only
  access remove <app> <email|userId>
                                 take every role a person holds on the app
  access audience <app> [organisation | people <email,...> | administer <email,...|none>]
                                 show or set who may use (the organisation, or named people)
                                 and who may administer a provider app's integration
  integrations list <app>        an app's integration slots: integration, account (app or
                                 calling_user), binding state, bound connection
  integrations bind <app> <slot> --connection <connectionId>
                                 bind an account: app slot to a connection (Edit on the app)
  integrations unbind <app> <slot>
                                 remove the slot's binding
  connections list               your connections and your organisation's: id, integration,
                                 provider app, kind, status, label (never values)
  operator create-user --email <email> --company <name> [--admin] [--platform-admin]
                                 create a user and print an owner API token (operator key needed)
  cron next "<expr>" [--tz <zone>] [--from <ISO 8601>] [--count <n>]
                                 print when a schedule runs next (default 5 times, UTC, from now),
                                 one ISO 8601 instant with offset a line; offline
  cron list <app>                list an app's cron entries with their next run
  cron run <app> <name>          run a cron entry now (same input as a scheduled run)
  secrets set <NAME>             set a secret's value, read from piped stdin or a hidden prompt
  secrets list                   names, declared/required, set, last update (never values)
  secrets unset <NAME>           remove a secret's value
                                 (secrets, logs, functions: --app <app>, default app.id of
                                 ./service.yaml; --dev <name> for a development namespace)
  logs [--function <name>] [--level debug|info|warn|error] [--from <ISO>] [--to <ISO>] [--limit <n>]
                                 stored ctx.log lines, newest last
  functions invoke <name> --dev <name> [--input '<json>'] [--as owner|anonymous]
                                 run a Function of a development namespace; logs to stderr
  dev delete <name> [--app <app>] [--yes]
                                 delete a development namespace: its schema, data, releases,
                                 logs and secrets (an app has at most 10); asks first on a
                                 terminal, --yes confirms without asking (needed in scripts)

the platform: --url <url>, else SERVICE_URL, else the URL a platform started in this
             directory (or above it) recorded in .service/url, else http://localhost:8787
environment: SERVICE_URL, SERVICE_TOKEN (owner API token; otherwise the one service login
             stored), SERVICE_CREDENTIALS_FILE (keep tokens in this file instead of the OS
             credential store), SERVICE_DATA_DIR (the platform's data directory with its url
             and operator-key; default the nearest .service from here up), SERVICE_OPERATOR_KEY`

/** The process's own Io; questions are asked only when stdin is a terminal. */
function processIo(): Io {
  return {
    out: (line) => process.stdout.write(line + '\n'),
    err: (line) => process.stderr.write(line + '\n'),
    env: process.env,
    readSecret: readSecretFromProcess,
    ...(process.stdin.isTTY ? { confirm: confirmOnTerminal } : {}),
  }
}

export async function main(argv: string[], io: Io = processIo()): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        email: { type: 'string' },
        company: { type: 'string' },
        name: { type: 'string' },
        admin: { type: 'boolean' },
        'platform-admin': { type: 'boolean' },
        tz: { type: 'string' },
        from: { type: 'string' },
        count: { type: 'string' },
        json: { type: 'boolean' },
        app: { type: 'string' },
        dev: { type: 'string' },
        value: { type: 'string' },
        function: { type: 'string' },
        level: { type: 'string' },
        to: { type: 'string' },
        limit: { type: 'string' },
        input: { type: 'string' },
        as: { type: 'string' },
        connection: { type: 'string' },
        yes: { type: 'boolean', short: 'y' },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    io.err(`service: ${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  const { values, positionals } = parsed
  const [command, sub, arg, arg2] = positionals
  if (values.help || !command) {
    io.out(USAGE)
    return command ? 0 : 2
  }
  const target = platformUrl({ flag: values.url, env: io.env })
  if ('error' in target) {
    io.err(`service: ${target.error}`)
    return 2
  }
  const baseUrl = target.url
  let credentials: CredentialStore | undefined
  const store = async () => (credentials ??= await openCredentialStore({ env: io.env }))
  // The owner token: SERVICE_TOKEN, else the one `service login` stored (looked up only by
  // commands that call the owner API).
  const needsToken = ['deploy', 'apps', 'releases', 'app', 'access', 'integrations', 'connections', 'secrets', 'logs', 'functions', 'cron', 'dev'].includes(command) && !(command === 'app' && arg === 'request')
    && !(command === 'cron' && sub === 'next')
  let token = io.env.SERVICE_TOKEN || undefined
  if (!token && needsToken) {
    try {
      token = (await (await store()).get(baseUrl)) ?? undefined
    } catch (error) {
      io.err(`warning: cannot read the stored token (${(error as Error).message}); set SERVICE_TOKEN or run service login`)
    }
  }
  const client = createClient({ baseUrl, token })
  try {
    switch (command) {
      case 'validate':
        return await validateCommand(io, sub)
      case 'deploy':
        return await deployCommand(io, client, sub, { dev: values.dev })
      case 'secrets':
        return await secretsCommand(io, client, { action: sub, name: arg, extra: positionals.slice(3), app: values.app, dev: values.dev, value: values.value, json: values.json ?? false })
      case 'logs':
        return await logsCommand(io, client, {
          app: values.app, dev: values.dev, function: values.function, level: values.level,
          from: values.from, to: values.to, limit: values.limit, json: values.json ?? false,
        })
      case 'dev':
        return await devCommand(io, client, { action: sub, name: arg, app: values.app, yes: values.yes ?? false })
      case 'functions':
        if (sub === 'invoke') return await functionsInvokeCommand(io, client, { name: arg, app: values.app, dev: values.dev, input: values.input, as: values.as })
        break
      case 'apps':
        if (sub === 'list') return await appsListCommand(io, client)
        break
      case 'releases':
        if (sub === 'list') return await releasesListCommand(io, client, arg)
        break
      case 'login':
        return await loginCommand(io, client, { store: await store(), poll: pollOptions(io.env, 11 * 60 * 1000) })
      case 'logout':
        return await logoutCommand(io, client, { store: await store() })
      case 'app':
        if (sub === 'access-token') return await accessTokenCommand(io, client, { action: arg, app: arg2, rest: positionals.slice(4), name: values.name })
        break
      case 'access':
        return await accessCommand(io, client, { action: sub, app: arg, rest: positionals.slice(3) })
      case 'integrations':
        return await integrationsCommand(io, client, { action: sub, app: arg, rest: positionals.slice(3), connection: values.connection })
      case 'connections':
        if (sub === 'list' && positionals.length === 2) return await connectionsListCommand(io, client)
        break
      case 'cron':
        if (sub === 'next') {
          if (positionals.length > 3) {
            io.err('service cron next: quote the schedule so it is one argument: service cron next "0 9 * * MON-FRI"')
            return 2
          }
          return cronNextCommand(io, { expression: arg, tz: values.tz, from: values.from, count: values.count, now: new Date() })
        }
        if (sub === 'list') return await cronListCommand(io, client, arg)
        if (sub === 'run') return await cronRunCommand(io, client, { app: arg, name: arg2 })
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
      const hint = error.code === 'PLATFORM_UNREACHABLE' ? unreachableHint(target) : null
      if (hint) io.err(hint)
      printDetails(io, error.details)
      return 1
    }
    throw error
  }
}

async function accessTokenCommand(
  io: Io,
  client: Client,
  options: { action: string | undefined; app: string | undefined; rest: string[]; name: string | undefined },
): Promise<number> {
  const { action, app, rest, name } = options
  const usage = (line: string) => {
    io.err(`usage: service app access-token ${line}`)
    return 2
  }
  switch (action) {
    case 'list':
      return app ? accessTokenListCommand(io, client, app) : usage('list <app>')
    case 'create':
      return app ? accessTokenCreateCommand(io, client, app, name) : usage('create <app> [--name <name>]')
    case 'revoke':
      return app && rest[0] ? accessTokenRevokeCommand(io, client, app, rest[0]) : usage('revoke <app> <tokenId>')
    case 'request':
      return app
        ? accessTokenRequestCommand(io, client, { app, name, poll: pollOptions(io.env, 16 * 60 * 1000) })
        : usage('request <app> [--name <name>]')
    default:
      return usage('list|create|revoke|request <app> ...')
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
