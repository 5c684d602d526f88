/**
 * `service`: the builder's and operator's command line. Talks to the platform through the
 * owner API; `validate` works offline with the platform's own manifest rules.
 *
 *   service validate <dir>
 *   service init <dir> [--private] [--app <id>] [--name <name>]
 *   service deploy <dir>
 *   service apps list
 *   service releases list <app> [--dev <name>]
 *   service login | logout
 *   service app access-token list|create|revoke|request <app> ...
 *   service access list|set|remove|audience <app> ...
 *   service grants list|add|remove <app> ...
 *   service jobs list|get [<jobId>] [--app <app>] [--dev <name>] [--queue <q>] [--state <s>] ...
 *   service integrations list|bind|unbind|catalog|deliveries <app> ... | service connections list
 *   service integrations dev list|mode|test-connection|inject ... --dev <name> [--app <app>]
 *   service operator create-user --email <email> --company <name> [--admin] [--platform-admin]
 *   service cron next "<expr>" [--tz <zone>] [--from <ISO>] [--count <n>]
 *   service cron list <app> | service cron run <app> <name>
 *   service secrets set <NAME> | list | unset <NAME> [--app <app>] [--dev <name>]
 *   service logs [--app <app>] [--dev <name>] [--function <name>] [--level <level>] [--from <ISO>] [--to <ISO>] [--limit <n>] [--follow]
 *   service functions invoke <name> --dev <name> [--input '<json>'] [--as owner|anonymous] [--app <app>]
 *   service email inject --dev <name> [--app <app>] [--from <address>] [--to <address>] [--subject <text>] [--text <text>] [--html <html>] [--attach <path>]... | --raw <file.eml>
 *   service dev <dir> --dev <name>
 *   service dev delete <name> [--app <app>] [--yes]
 *   service --version
 *
 * The platform is --url, else SERVICE_URL, else the URL a platform started in this directory
 * (or above it) recorded in .service/url (SERVICE_DATA_DIR), else http://localhost:8787
 * (platform-url.ts). SERVICE_TOKEN and SERVICE_OPERATOR_KEY go to a .service/url only when
 * it is loopback: one found from here up may have come with a cloned repository.
 */
import { parseArgs } from 'node:util'
import { createClient, type Client } from './client.ts'
import { validateCommand } from './commands/validate.ts'
import { deployCommand } from './commands/deploy.ts'
import { initCommand } from './commands/init.ts'
import { appsListCommand, releasesListCommand } from './commands/apps.ts'
import { createUserCommand } from './commands/operator.ts'
import {
  accessTokenCreateCommand, accessTokenListCommand, accessTokenRequestCommand, accessTokenRevokeCommand,
} from './commands/access-token.ts'
import { loginCommand, logoutCommand, pollOptions } from './commands/login.ts'
import { cronListCommand, cronNextCommand, cronRunCommand } from './commands/cron.ts'
import { readSecretFromProcess, secretsCommand } from './commands/secrets.ts'
import { devCommand, devWatchCommand } from './commands/dev.ts'
import { logsCommand } from './commands/logs.ts'
import { functionsInvokeCommand } from './commands/functions.ts'
import { emailInjectCommand } from './commands/email.ts'
import { accessCommand } from './commands/access.ts'
import { grantsCommand } from './commands/grants.ts'
import { jobsCommand } from './commands/jobs.ts'
import { connectionsListCommand, integrationsCommand } from './commands/integrations.ts'
import { devIntegrationsCommand } from './commands/dev-integrations.ts'
import { openCredentialStore, type CredentialStore, type OpenKeyring } from './credentials.ts'
import type { Io } from './io.ts'
import { confirmOnTerminal } from './confirm.ts'
import { mayReceiveEnvCredentials, platformUrl, unreachableHint, type PlatformUrl } from './platform-url.ts'
import { CliError, EXIT, toCliError, usageError, type ErrorContext } from './errors.ts'
import { commandHelp, generalHelp, usageOf, version } from './help.ts'
import { jsonIo, printError, printResult } from './output.ts'

/** Every flag of every command (a flag a command does not read is ignored by it). */
const OPTIONS = {
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
  data: { type: 'string' },
  id: { type: 'string' },
  subject: { type: 'string' },
  text: { type: 'string' },
  html: { type: 'string' },
  attach: { type: 'string', multiple: true },
  raw: { type: 'string' },
  private: { type: 'boolean' },
  queue: { type: 'string' },
  state: { type: 'string' },
  cursor: { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  yes: { type: 'boolean', short: 'y' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const

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

/**
 * The Io of a long-running command: stopped by the first Ctrl-C (SIGINT), which then stops
 * being caught, so a second one ends the process as usual. Tests pass their own signal.
 */
function untilInterrupted(io: Io, longRunning: boolean): Io {
  if (!longRunning || io.signal !== undefined) return io
  const controller = new AbortController()
  process.once('SIGINT', () => controller.abort())
  return { ...io, signal: controller.signal }
}

/** What tests replace: the OS credential store (default @napi-rs/keyring). */
export interface MainOptions {
  readonly openKeyring?: OpenKeyring
}

export async function main(argv: string[], io: Io = processIo(), options: MainOptions = {}): Promise<number> {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: OPTIONS,
    })
  } catch (error) {
    const json = argv.includes('--json')
    printError(io, { error: usageError(`service: ${(error as Error).message}`, 'service --help'), json })
    return EXIT.usage
  }
  const { values, positionals } = parsed
  const json = values.json ?? false
  const [command, sub, arg, arg2] = positionals
  if (values.version) {
    const { line, ...document } = version()
    printResult(json ? jsonIo(io) : io, document, () => io.out(line))
    return EXIT.ok
  }
  if (command === 'help' || values.help) {
    const name = command === 'help' ? sub : command
    io.out(name === undefined ? generalHelp() : (commandHelp(name) ?? generalHelp()))
    return EXIT.ok
  }
  if (!command) {
    io.err(generalHelp())
    return EXIT.usage
  }
  // Under --json every line is JSON: plain stderr lines become notices, and a failing
  // command that printed no error of its own gets one (fallback below).
  const cio = json ? jsonIo(io) : io
  const context = errorContext({ command, values, sub, arg, arg2 })
  const target = platformUrl({ flag: values.url, env: io.env })
  let code: number
  try {
    if ('error' in target) throw usageError(`service: ${target.error}`, 'service --help')
    code = await run(cio, { values, positionals, command, sub, arg, arg2, target, openKeyring: options.openKeyring })
  } catch (error) {
    const failure = toCliError(error, context)
    const hint = failure.code === 'PLATFORM_UNREACHABLE' && !('error' in target) ? unreachableHint(target) : null
    printError(io, { error: failure, json, hint })
    return failure.exitCode
  }
  if (json && code !== EXIT.ok && code !== EXIT.interrupted) {
    printError(io, { error: new CliError(code === EXIT.usage ? 'USAGE' : 'FAILED', `service ${command} exited ${code}; see the notices above`), json })
  }
  return code
}

/** What the command acts on, for the next command an error names. */
function errorContext(options: { command: string; values: Values; sub: string | undefined; arg: string | undefined; arg2: string | undefined }): ErrorContext {
  const { command, values, sub, arg, arg2 } = options
  const positionalApp = command === 'app' ? arg2
    : command === 'integrations' && sub === 'dev' ? undefined
      : ['releases', 'cron', 'access', 'integrations', 'grants', 'jobs'].includes(command) ? arg : undefined
  const dir = ['deploy', 'validate', 'init'].includes(command) || (command === 'dev' && sub !== 'delete') ? sub : undefined
  return { command, app: values.app ?? positionalApp, dev: values.dev, dir }
}

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values']

interface Invocation {
  readonly values: Values
  readonly positionals: string[]
  readonly command: string
  readonly sub: string | undefined
  readonly arg: string | undefined
  readonly arg2: string | undefined
  readonly target: PlatformUrl
  readonly openKeyring: OpenKeyring | undefined
}

/**
 * The usage error for a credential from the environment that would go to a URL the person
 * did not name (a non-loopback .service/url): nothing is sent.
 */
function envCredentialRefused(name: 'SERVICE_TOKEN' | 'SERVICE_OPERATOR_KEY', target: PlatformUrl, command: string): CliError {
  return usageError(
    `service: ${name} is not sent to ${target.url}, the URL in ${target.source}: only a loopback URL there gets credentials`
      + ' from the environment (a .service directory found from here up may have come with a cloned repository)',
    usageOf(command),
    'to use that platform, name it: set SERVICE_URL or pass --url')
}

async function run(io: Io, invocation: Invocation): Promise<number> {
  const { values, positionals, command, sub, arg, arg2, target, openKeyring } = invocation
  const baseUrl = target.url
  let credentials: CredentialStore | undefined
  const store = async () => (credentials ??= await openCredentialStore({ env: io.env, ...(openKeyring ? { openKeyring } : {}) }))
  // The owner token: SERVICE_TOKEN, else the one `service login` stored (looked up only by
  // commands that call the owner API). SERVICE_TOKEN goes only to a URL the person named or a
  // loopback one (platform-url.ts); a stored token is kept per origin.
  const needsToken = ['deploy', 'apps', 'releases', 'app', 'access', 'grants', 'integrations', 'connections', 'secrets', 'logs', 'functions', 'email', 'cron', 'dev', 'jobs'].includes(command) && !(command === 'app' && arg === 'request')
    && !(command === 'cron' && sub === 'next')
  let token = needsToken ? io.env.SERVICE_TOKEN || undefined : undefined
  if (token && !mayReceiveEnvCredentials(target)) throw envCredentialRefused('SERVICE_TOKEN', target, command)
  if (!token && needsToken) {
    try {
      token = (await (await store()).get(baseUrl)) ?? undefined
    } catch (error) {
      io.err(`warning: cannot read the stored token (${(error as Error).message}); set SERVICE_TOKEN or run service login`)
    }
  }
  const client = createClient({ baseUrl, token })
  switch (command) {
    case 'validate':
      return await validateCommand(io, sub)
    case 'init':
      if (positionals.length > 2) throw usageError('service init: one directory', usageOf('init'))
      return await initCommand(io, { dir: sub, private: values.private ?? false, app: values.app, name: values.name })
    case 'deploy':
      return await deployCommand(io, client, sub, { dev: values.dev })
    case 'secrets':
      return await secretsCommand(io, client, { action: sub, name: arg, extra: positionals.slice(3), app: values.app, dev: values.dev, value: values.value })
    case 'jobs':
      return await jobsCommand(io, client, {
        action: sub, id: arg, extra: positionals.slice(3), app: values.app, dev: values.dev,
        queue: values.queue, state: values.state, from: values.from, to: values.to, limit: values.limit, cursor: values.cursor,
      })
    case 'logs':
      if (positionals.length > 1) throw usageError('service logs: takes no positional arguments (name the app with --app <app>)', usageOf('logs'))
      return await logsCommand(untilInterrupted(io, values.follow ?? false), client, {
        app: values.app, dev: values.dev, function: values.function, level: values.level,
        from: values.from, to: values.to, limit: values.limit, follow: values.follow ?? false,
      })
    case 'dev':
      if (sub === 'delete') return await devCommand(io, client, { action: sub, name: arg, app: values.app, yes: values.yes ?? false })
      if (positionals.length > 2) throw usageError('service dev: one app directory', usageOf('dev'))
      return await devWatchCommand(untilInterrupted(io, true), client, { dir: sub, dev: values.dev })
    case 'functions':
      if (sub === 'invoke') return await functionsInvokeCommand(io, client, { name: arg, app: values.app, dev: values.dev, input: values.input, as: values.as })
      break
    case 'email':
      if (sub === 'inject') {
        return await emailInjectCommand(io, client, {
          app: values.app, dev: values.dev, from: values.from, to: values.to, subject: values.subject, text: values.text, html: values.html,
          attach: values.attach, raw: values.raw,
        })
      }
      break
    case 'apps':
      if (sub === 'list' && positionals.length === 2) return await appsListCommand(io, client)
      break
    case 'releases':
      if (sub === 'list' && positionals.length <= 3) return await releasesListCommand(io, client, { app: arg, dev: values.dev })
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
    case 'grants':
      return await grantsCommand(io, client, { action: sub, app: arg, rest: positionals.slice(3) })
    case 'integrations':
      if (sub === 'dev') {
        return await devIntegrationsCommand(io, client, {
          action: arg, rest: positionals.slice(3), app: values.app, dev: values.dev, data: values.data, id: values.id,
        })
      }
      return await integrationsCommand(io, client, {
        action: sub, app: arg, rest: positionals.slice(3), connection: values.connection, state: values.state, limit: values.limit, cursor: values.cursor,
      })
    case 'connections':
      if (sub === 'list' && positionals.length === 2) return await connectionsListCommand(io, client)
      break
    case 'cron':
      if (sub === 'next') {
        if (positionals.length > 3) throw usageError('service cron next: quote the schedule so it is one argument: service cron next "0 9 * * MON-FRI"', usageOf('cron'))
        return cronNextCommand(io, { expression: arg, tz: values.tz, from: values.from, count: values.count, now: new Date() })
      }
      if (sub === 'list') return await cronListCommand(io, client, arg)
      if (sub === 'run') return await cronRunCommand(io, client, { app: arg, name: arg2 })
      break
    case 'operator':
      if (sub === 'create-user') {
        if (io.env.SERVICE_OPERATOR_KEY && !mayReceiveEnvCredentials(target)) throw envCredentialRefused('SERVICE_OPERATOR_KEY', target, command)
        return await createUserCommand(io, client, {
          email: values.email,
          company: values.company,
          admin: values.admin ?? false,
          platformAdmin: values['platform-admin'] ?? false,
        })
      }
      break
  }
  throw usageError(`service: unknown command "${positionals.join(' ')}"`, commandHelp(command) === null ? 'service --help' : usageOf(command))
}

async function accessTokenCommand(
  io: Io,
  client: Client,
  options: { action: string | undefined; app: string | undefined; rest: string[]; name: string | undefined },
): Promise<number> {
  const { action, app, rest, name } = options
  const usage = (line: string): never => {
    throw usageError(`service app access-token: ${line}`, usageOf('app'))
  }
  switch (action) {
    case 'list':
      return app ? accessTokenListCommand(io, client, app) : usage('name the app')
    case 'create':
      return app ? accessTokenCreateCommand(io, client, app, name) : usage('name the app')
    case 'revoke':
      return app && rest[0] ? accessTokenRevokeCommand(io, client, app, rest[0]) : usage('name the app and the token id (service app access-token list <app> shows them)')
    case 'request':
      return app
        ? accessTokenRequestCommand(io, client, { app, name, poll: pollOptions(io.env, 16 * 60 * 1000) })
        : usage('name the app')
    default:
      return usage('list, create, revoke or request?')
  }
}
