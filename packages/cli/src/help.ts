/**
 * The CLI's help: one entry per command, printed by `service <command> --help` (and
 * `service help <command>`), summarised by `service --help`. docs/cli.md repeats these
 * usages with the exit codes and `--json` shapes; a test keeps the two in step.
 * `service --version` prints `version()`.
 */
import { readFileSync } from 'node:fs'

/** The public CLI release whose commands this CLI has (spec 4.5 and 9: the app access-token commands). */
export const PUBLIC_CLI_VERSION = '3.10.3'

/**
 * `service --version`: this package's version and the public CLI version it matches.
 *
 * @example
 *   version() // { version: '0.1.0', publicCliVersion: '3.10.3', line: 'service 0.1.0 (commands of public CLI v3.10.3)' }
 */
export function version(): { version: string; publicCliVersion: string; line: string } {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return { version, publicCliVersion: PUBLIC_CLI_VERSION, line: `service ${version} (commands of public CLI v${PUBLIC_CLI_VERSION})` }
}

export interface CommandHelp {
  /** One line for `service --help`. */
  readonly summary: string
  /** The usage lines, each starting `service <command>`. */
  readonly usage: readonly string[]
  /** What it does and its options, for a person. */
  readonly details: string
  /** What `--json` prints on stdout. */
  readonly json: string
}

export const COMMAND_HELP: Readonly<Record<string, CommandHelp>> = {
  validate: {
    summary: 'check an app directory\'s service.yaml and bundle layout, offline',
    usage: ['service validate <dir>'],
    details: 'Checks service.yaml with the platform\'s own manifest rules and every file path of the bundle. Each problem is\n'
      + 'printed as file:line:column CODE message; exits 1 when there is an error (warnings alone exit 0).',
    json: '{"valid": boolean, "app": string|null, "files": number, "errors": [Problem], "warnings": [Problem]}\n'
      + 'with Problem = {"file", "line", "column", "code", "message"}; exit 1 when valid is false.',
  },
  init: {
    summary: 'create an app directory from the template: page, Function, migration, test',
    usage: ['service init <dir> [--private] [--app <id>] [--name <name>]'],
    details: 'Writes service.yaml (schema 3, the SDK pinned to the platform\'s), public/ (a page listing the signed-in\n'
      + 'person\'s notes), functions/add-note.ts (the addNote Function), database/migrations/0001_notes.sql (a notes table\n'
      + 'with row-level security) and test/app.test.mjs (deploys to the development namespace "test" and calls addNote;\n'
      + 'run it with node --test test/). Public by default; --private admits only the owner and people it is shared\n'
      + 'with. The app id is --app, else the directory\'s name; the directory must be new or empty.',
    json: '{"dir", "app": {"id", "name", "visibility"}, "sdkVersion", "files": [path], "next": [command]}',
  },
  deploy: {
    summary: 'deploy an app directory (creates the app on its first deploy)',
    usage: ['service deploy <dir> [--dev <name>]'],
    details: 'Uploads the bundle as a new release: production, or with --dev the development namespace <name> (its own\n'
      + 'schema, data, secrets and logs; created by its first deploy), production untouched. Prints the upload size and\n'
      + 'each migration applied on stderr as it goes.',
    json: '{"app": {"id", "slug", "url"}, "created": boolean, "dev": string|null, "release": {"version"},\n'
      + ' "upload": {"files": number, "bytes": number}, "migrationsApplied": [string], "warnings": [Problem]}',
  },
  apps: {
    summary: 'list your apps',
    usage: ['service apps list'],
    details: 'The apps you own or hold a role on: slug, visibility, status and URL.',
    json: '{"apps": [{"id", "slug", "visibility", "status", "url", ...}]}',
  },
  releases: {
    summary: 'list an app\'s releases',
    usage: ['service releases list <app> [--dev <name>]'],
    details: 'An app\'s releases, newest first: version, status, pinned SDK version and when it was made; --dev for a\n'
      + 'development namespace\'s.',
    json: '{"releases": [{"version", "status", "sdkVersion", "createdAt", ...}]}',
  },
  login: {
    summary: 'sign in through the browser; keeps the token in the OS credential store',
    usage: ['service login'],
    details: 'Prints a link and a code; open the link, check the code and approve. The owner API token the CLI receives goes to\n'
      + 'the OS credential store (Keychain, Credential Manager, Secret Service); where none answers, to a file readable by\n'
      + 'you alone (mode 0600) in your config directory, and the CLI says so on stderr. The token is never printed.',
    json: '{"approveUrl", "userCode"} first (a line), then {"user": {"email"}, "store": {"kind": "os"|"file", "location", "fallback"}}',
  },
  logout: {
    summary: 'revoke the CLI\'s token and remove it from the credential store',
    usage: ['service logout'],
    details: 'Revokes the stored token on the platform and removes it. SERVICE_TOKEN, when set, is neither revoked nor unset.',
    json: '{"signedOut": boolean}',
  },
  app: {
    summary: 'an app\'s access tokens (svc_app_…): list, create, revoke, request',
    usage: [
      'service app access-token list <app>',
      'service app access-token create <app> [--name <name>]',
      'service app access-token revoke <app> <tokenId>',
      'service app access-token request <app> [--name <name>]',
    ],
    details: 'An app access token acts as the app\'s owner on its runtime APIs. The CLI never prints one: create prints a\n'
      + 'one-time link that shows it to the owner in the browser (15 minutes); request, for an agent without owner\n'
      + 'credentials, prints a link for the owner to approve and waits.',
    json: 'list: {"tokens": [{"id", "name", "createdAt", "lastUsedAt"}]}; create: {"token": {...}, "revealUrl"};\n'
      + 'revoke: {"revoked": tokenId}; request: {"approveUrl", "expiresAt"} first (a line), then {"status": "approved", "tokenId"}',
  },
  access: {
    summary: 'who holds which role on an app (Use, Edit, Administer); a provider app\'s audiences',
    usage: [
      'service access list <app>',
      'service access set <app> <email|userId> use|edit|administer',
      'service access remove <app> <email|userId>',
      'service access audience <app> [organisation | people <email,...> | administer <email,...|none>]',
    ],
    details: 'Roles: Use (open the app), Edit (deploy, secrets, logs), Administer (roles). The owner holds all three.\n'
      + 'set gives a member of the app\'s organisation a role (Use also to a person of no company); the owner or\n'
      + 'Administer only. audience shows or sets who may use a provider app\'s integration and who may administer it.',
    json: 'list: {"owner": {"userId", "email", "role", "roles"}, "members": [Member]} with Member = {"userId", "email", "role",\n'
      + ' "roles", "createdAt", "updatedAt"};\n'
      + 'set: {"member": Member}; remove: {"removed": person}; audience: {"audience": {"useScope", "usePeople", "administerPeople"}}',
  },
  grants: {
    summary: 'who may use a private app (the Use role): list, add, remove',
    usage: ['service grants list <app>', 'service grants add <app> <email>', 'service grants remove <app> <email|userId>'],
    details: 'Shares a private app: add gives the person the Use role (they must have signed in once), remove takes it.\n'
      + 'The owner and Administer holders. service access manages every role (Use, Edit, Administer).',
    json: 'list: {"grants": [{"userId", "email", "createdAt"}]}; add: {"grant": {"userId", "email"}}; remove: {"removed": person}',
  },
  jobs: {
    summary: 'an app\'s background jobs: list them, or one job\'s state and latest error',
    usage: [
      'service jobs list [--app <app>] [--dev <name>] [--queue <queue>] [--state <state>] [--from <ISO>] [--to <ISO>] [--limit <n>] [--cursor <c>]',
      'service jobs get <jobId> [--app <app>] [--dev <name>]',
    ],
    details: 'list: jobs created in the range (default the 14 days kept), newest first, 50 a page (--limit at most 100;\n'
      + '--cursor pages on, the command to run is printed), with per-queue totals; --state is queued, running, retry_wait,\n'
      + 'succeeded or dead_lettered; a cron run\'s queue is cron:<name>. get: one job. Never payloads, idempotency keys or\n'
      + 'who enqueued a job. --app defaults to app.id of ./service.yaml. The owner and Edit holders.',
    json: 'list: {"from", "to", "jobs": [Job], "nextCursor", "totals": [{"queue", "created", "retried", "succeeded", "failed",\n'
      + ' "depth", "waiting", "running"}]} with Job = {"id", "queue", "kind", "state", "attempts", "maxAttempts", "createdAt",\n'
      + ' "updatedAt", "runAt", "startedAt", "finishedAt", "lastError": {"code", "message"}|null}; get: {"job": Job}',
  },
  integrations: {
    summary: 'an app\'s integration slots and their bindings; development mode for integrations',
    usage: [
      'service integrations list <app>',
      'service integrations bind <app> <slot> --connection <connectionId>',
      'service integrations unbind <app> <slot>',
      'service integrations catalog <app>',
      'service integrations deliveries <app> [--state waiting|running|delivered|failed] [--limit <n>] [--cursor <c>]',
      'service integrations dev list --dev <name> [--app <app>]',
      'service integrations dev mode <integration> live|fake --dev <name> [--app <app>]',
      'service integrations dev test-connection <integration> <connectionId>|none --dev <name> [--app <app>]',
      'service integrations dev inject <integration> <type> --dev <name> [--app <app>] [--data \'<json>\'] [--id <id>]',
    ],
    details: 'list: slot, integration, account (app or calling_user), binding state, bound connection. bind: Edit on the app.\n'
      + 'catalog: the integrations published in the app\'s organisation that you may use, with their operations and event\n'
      + 'types and the capability each needs. deliveries: the app\'s integration event deliveries, newest first, 50 a page\n'
      + '(--limit at most 100; --cursor pages on, the command is printed): type, slot, state, attempts, next attempt and\n'
      + 'last error, never the payload. All need Edit on the app.\n'
      + 'dev (Edit on the app; a development namespace with a release): list shows each integration\'s mode and test\n'
      + 'connection. mode: how the consumer namespace answers calls to the integration, fake (the default: the operations\'\n'
      + 'declared fakes) or live (the provider, through the app\'s real bindings). test-connection: the connection a provider\n'
      + 'namespace runs its operation, sync and webhook Functions on (none clears it). inject: delivers a made-up event of a\n'
      + 'declared type to every slot handler of the namespace that would receive it, at once (data defaults to the type\'s\n'
      + 'declared fake; nothing is stored or retried); handlers\' log lines go to stderr, their values to stdout, exit 1 when\n'
      + 'one fails. --app defaults to app.id of ./service.yaml.',
    json: 'list: {"slots": [...]}; bind: {"binding": {...}}; unbind: {"unbound": slot};\n'
      + 'catalog: {"integrations": [{"name", "title", "description", "provider": {"appId", "appSlug"}, "capabilities", "operations",\n'
      + ' "events", "credentials", "oauth", "sync", "webhook", "publishedAt"}]};\n'
      + 'deliveries: {"deliveries": [{"id", "eventId", "type", "slot", "provider", "integration", "providerAppId", "bindingId", "state",\n'
      + ' "attempts", "lastError", "occurredAt", "createdAt", "deliveredAt", "finishedAt", "nextAttemptAt"}], "nextCursor"};\n'
      + 'dev list: {"integrations": [Setting]}; dev mode and dev test-connection: {"integration": Setting} with\n'
      + 'Setting = {"integration", "mode", "testConnectionId", "updatedAt"}; dev inject: {"event": {"id", "type"}, "deliveries":\n'
      + ' [{"slot", "function", "requestId", "ok", "value"|"status" and "error", "logs": [LogLine]}]} (exit 1 when one failed)',
  },
  connections: {
    summary: 'your connections and your organisation\'s (never their values)',
    usage: ['service connections list'],
    details: 'id, integration, provider app, kind, status and label of every connection you can see.',
    json: '{"connections": [{"id", "integration", "providerApp", "kind", "status", "label"}]}',
  },
  operator: {
    summary: 'create a user and print an owner API token (operator key needed)',
    usage: ['service operator create-user --email <email> --company <name> [--admin] [--platform-admin]'],
    details: 'The operator key is SERVICE_OPERATOR_KEY, else the file operator-key in the platform\'s data directory.\n'
      + 'The token is printed once: keep it in a secret manager.',
    json: '{"user": {"id", "email", "organisationRole"}, "token"}',
  },
  cron: {
    summary: 'when a schedule runs next (offline); an app\'s cron entries; run one now',
    usage: [
      'service cron next "<expr>" [--tz <zone>] [--from <ISO 8601>] [--count <n>]',
      'service cron list <app>',
      'service cron run <app> <name>',
    ],
    details: 'next computes with the scheduler\'s own code: --tz (default UTC), --from (default now; without an offset it is\n'
      + 'local time in --tz), --count (default 5, at most 1000); exit 1 for a schedule or zone the platform rejects.\n'
      + 'list shows the active release\'s entries with their next run; run queues a run now with a scheduled run\'s input.',
    json: 'next: {"next": [ISO 8601 with offset]}; list: {"cron": [{"name", "schedule", "timezone", "function", "enabled", "nextRunAt",\n'
      + ' "nextRunAtLocal", "lastScheduledAt", "lastJobId"}]};\n'
      + 'run: {"run": {"jobId", "cron", "scheduledAt"}}',
  },
  secrets: {
    summary: 'set, list and remove an app\'s secret values (never printed)',
    usage: [
      'service secrets set <NAME> [--app <app>] [--dev <name>]',
      'service secrets list [--app <app>] [--dev <name>]',
      'service secrets unset <NAME> [--app <app>] [--dev <name>]',
    ],
    details: 'set reads the value from piped stdin or a hidden prompt, never the command line. list shows names, whether\n'
      + 'the active release declares and requires them, and when each was set. --app defaults to app.id of ./service.yaml.',
    json: 'set: {"secret": {"name", "declared", "required", "set", "updatedAt"}}; list: {"secrets": [that]}; unset: {"removed": NAME}',
  },
  logs: {
    summary: 'an app\'s stored Function log lines (ctx.log); --follow streams new ones',
    usage: ['service logs [--app <app>] [--dev <name>] [--function <name>] [--level debug|info|warn|error] [--from <ISO>] [--to <ISO>] [--limit <n>] [--follow]'],
    details: 'Newest last. Filters: --function, --level (that level and above), --from/--to, --limit (default 100, at most\n'
      + '1000). --follow keeps polling and prints new lines as they are stored, until Ctrl-C (SERVICE_POLL_INTERVAL_MS,\n'
      + 'default 2000). What a Function wrote is printed with control characters escaped.',
    json: '{"logs": [LogLine], "nextCursor": string|null} (LogLine = {"id", "time", "level", "function", "requestId", "message", "fields"});\n'
      + 'with --follow one LogLine a line, oldest first',
  },
  functions: {
    summary: 'run a Function of a development namespace',
    usage: ['service functions invoke <name> --dev <name> [--input \'<json>\'] [--as owner|anonymous] [--app <app>]'],
    details: 'Runs the Function in the namespace\'s active release as the owner (or --as anonymous). Its log lines go to\n'
      + 'stderr, the returned value to stdout; a failure prints the code, message and stack and exits 1.',
    json: '{"ok": true, "value", "requestId", "logs": [LogLine]} or, exit 1, {"ok": false, "status", "error": {"code", "message", "details"}, "requestId", "logs"}',
  },
  email: {
    summary: 'send a synthetic inbound email to a development namespace\'s email.inbound receiver',
    usage: [
      'service email inject --dev <name> [--app <app>] [--from <address>] [--to <address>] [--subject <text>] [--text <text>] [--html <html>] [--attach <path>]...',
      'service email inject --dev <name> [--app <app>] [--to <address>] --raw <file.eml>',
    ],
    details: 'Builds a MIME message (or takes --raw, a whole RFC 5322 message) and runs the namespace\'s email.inbound.function\n'
      + 'at once with the inbound email event, attachments stored as the namespace\'s files. --to is an address the app\n'
      + 'receives at (<alias>[+tag]@<app>.<EMAIL_DOMAIN>; default its first alias), --from defaults to sender@example.com,\n'
      + '--attach may be repeated. The receiver\'s log lines go to stderr, the event and its returned value to stdout;\n'
      + 'a failure prints the code and message and exits 1. Nothing is queued or retried.',
    json: '{"ok": true, "value", "requestId", "logs": [LogLine], "event": InboundEmail} or, exit 1, {"ok": false, "status", "error": {"code", "message"}, "requestId", "logs", "event"}',
  },
  dev: {
    summary: 'deploy to a development namespace, redeploy on save, stream its logs; delete one',
    usage: ['service dev <dir> --dev <name>', 'service dev delete <name> [--app <app>] [--yes]'],
    details: 'service dev <dir> --dev <name> deploys the directory to the development namespace <name> (its own schema,\n'
      + 'data, secrets and logs; production untouched), watches service.yaml, functions/, public/ and\n'
      + 'database/migrations/ and redeploys on save (changes within 300 ms deploy once), and prints the namespace\'s\n'
      + 'Function logs as they come, until Ctrl-C (exit 130). A failed deploy is printed and the loop goes on; the\n'
      + 'namespace keeps its last release until a save fixes it.\n'
      + 'delete removes a development namespace with its schema, data, releases, logs and secrets; it asks first on a\n'
      + 'terminal, --yes confirms without asking (needed in scripts).',
    json: 'dev <dir>: one event a line: {"event": "deployed", ...deploy\'s result}, {"event": "deploy-failed", "error": {"code",\n'
      + ' "message", "details"?}}, {"event": "log", ...LogLine}; delete: {"deleted": name, "app"}',
  },
}

const ENVIRONMENT = `the platform: --url <url>, else SERVICE_URL, else the URL a platform started in this
             directory (or above it) recorded in .service/url, else http://localhost:8787
environment: SERVICE_URL, SERVICE_TOKEN (owner API token; otherwise the one service login
             stored), SERVICE_CREDENTIALS_FILE (keep tokens in this file instead of the OS
             credential store), SERVICE_DATA_DIR (the platform's data directory with its url
             and operator-key; default the nearest .service from here up), SERVICE_OPERATOR_KEY;
             SERVICE_TOKEN and SERVICE_OPERATOR_KEY go to a .service/url only when it is loopback
every command: --json (machine-readable output: docs/cli.md), --help; service --version (-V)
exit codes:  0 ok, 1 failed (the platform refused, problems found), 2 usage error,
             3 not signed in or token refused, 4 platform unreachable, 130 stopped (Ctrl-C)`

/** `service --help`: every command's summary. */
export function generalHelp(): string {
  const width = Math.max(...Object.keys(COMMAND_HELP).map((name) => name.length)) + 2
  const lines = Object.entries(COMMAND_HELP).map(([name, help]) => `  ${name.padEnd(width)} ${help.summary}`)
  return `usage: service <command> [options]\n\n${lines.join('\n')}\n\nservice <command> --help shows a command's usage and options.\n\n${ENVIRONMENT}`
}

/** `service <command> --help`, or null for a command without help. */
export function commandHelp(name: string): string | null {
  const help = Object.hasOwn(COMMAND_HELP, name) ? COMMAND_HELP[name] : undefined
  if (help === undefined) return null
  const usage = help.usage.map((line, i) => `${i === 0 ? 'usage: ' : '       '}${line}`).join('\n')
  return `${usage}\n\n${help.details}\n\n--json prints: ${help.json}\n\n${ENVIRONMENT}`
}

/** The usage lines of a command, for a usage error. */
export function usageOf(name: string): string {
  const help = COMMAND_HELP[name]
  return help === undefined ? 'service --help' : help.usage.map((line, i) => `${i === 0 ? 'usage: ' : '       '}${line}`).join('\n')
}
