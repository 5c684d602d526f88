/**
 * Platform configuration: the only module that reads `process.env`. It is read once,
 * validated and frozen; every other part receives the values it needs from here.
 */
import { resolve } from 'node:path'

export interface Config {
  readonly port: number
  readonly host: string
  /** `{base_url}`, e.g. http://localhost:8787 */
  readonly baseUrl: URL
  /** Host name the app origins hang under, e.g. "localhost" for tasks.localhost. */
  readonly baseDomain: string
  readonly dataDir: string
  readonly databaseUrl: string | null
  readonly production: boolean
  readonly deployExamples: boolean
  readonly examplesDir: string
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error'
  /** SERVICE_OPERATOR_KEY; null means the key file in the data directory. */
  readonly operatorKey: string | null
  /** SERVICE_MASTER_KEY (base64, 32 bytes); null means the key file in the data directory. */
  readonly masterKey: string | null
  /** SMTP_URL (smtp:// or smtps://); null keeps mail in the development mailbox. */
  readonly smtpUrl: string | null
  /** SERVICE_MAIL_FROM, the From of every message. */
  readonly mailFrom: string
  /** SERVICE_REGISTRATION: whether an unknown address may create an account by signing in. */
  readonly registration: boolean
  /** Sign-in and password attempts allowed per 15 minutes, per address and per client. */
  readonly signInLimits: { readonly perAddress: number; readonly perClient: number }
  /** SERVICE_TRUST_PROXY: take the client address from the last X-Forwarded-For entry (the one the proxy appended). */
  readonly trustProxy: boolean
  /**
   * DATABASE_STATEMENT_TIMEOUT_MS: on PostgreSQL no statement runs longer (default 120 s); on
   * PGlite no statement of app SQL does (default 5 s: there it holds every other request).
   */
  readonly statementTimeoutMs: number
  /**
   * DATABASE_APP_CONNECTIONS: connections the data API's per-namespace login pools of this
   * process may hold together (PostgreSQL); 0 runs all app SQL through the shared wrapper.
   */
  readonly appConnections: number
  /** DATABASE_APP_POOL_SIZE: connections per namespace login pool. */
  readonly appPoolSize: number
  /** FUNCTION_MEMORY_MB: resident memory a Functions worker may hold (Linux); 0 turns the watch off. */
  readonly functionMemoryMb: number
  /** FUNCTION_HEAP_MB: V8 heap limit of a Functions worker; 0 leaves V8's own. */
  readonly functionHeapMb: number
  /** FUNCTION_SPARE_WORKERS: Deno processes kept started for new Functions pools (cold starts); 0 keeps none. */
  readonly functionSpareWorkers: number
  /** AI_*: the OpenAI-compatible provider `ctx.ai` calls (ai/, docs/operations.md); null fields are unset. */
  readonly ai: AiSettings
  /** FILES_*: managed files' size limit and storage (files/, docs/operations.md). */
  readonly files: FilesSettings
  /** EMAIL_*, INBOUND_*: app email out and in (email/, docs/operations.md). */
  readonly email: EmailSettings
  /** PUSH_*: web push notifications (push/, docs/operations.md). */
  readonly push: PushSettings
  /** REALTIME_*: the realtime sockets' limits (realtime/, docs/operations.md). */
  readonly realtime: RealtimeSettings
}

/** Realtime (`{app_url}/_service/realtime`, the browser SDK's `service.realtime`). */
export interface RealtimeSettings {
  /** REALTIME_MAX_MESSAGE_BYTES: the largest frame a client may send (default 6000, at most 6000: broadcasts cross processes in a NOTIFY). */
  readonly maxMessageBytes: number
  /** REALTIME_MESSAGES_PER_SECOND: frames one socket may send a second, in a burst of as many (default 50). */
  readonly messagesPerSecond: number
  /** REALTIME_MAX_BUFFERED_KB: bytes waiting to be sent to one socket before it is closed as too slow (default 1024 KiB). */
  readonly maxBufferedBytes: number
  /** REALTIME_REVALIDATE_SECONDS: how often each socket's session or token is checked again (default 30). */
  readonly revalidateSeconds: number
  /** REALTIME_RESUME_SECONDS: how long row changes are kept for a reconnecting subscriber to resume from (default 300). */
  readonly resumeSeconds: number
  /** REALTIME_MAX_CONNECTIONS: sockets one process holds; handshakes beyond are refused with 503 (default 10000). */
  readonly maxConnections: number
  /**
   * REALTIME_MAX_CONNECTIONS_PER_CLIENT: sockets one client address holds on one process;
   * handshakes beyond are refused with 429 (default 1000), so one client cannot take them all.
   */
  readonly maxConnectionsPerClient: number
}

/** Web push (`ctx.notifications`, the browser SDK's `service.notifications`). */
export interface PushSettings {
  /** PUSH_SUBJECT: the VAPID `sub` push services may contact, mailto: or https: (default mailto: SERVICE_MAIL_FROM's address). */
  readonly subject: string
  /** PUSH_MAX_SUBSCRIPTIONS_PER_USER: subscriptions a person keeps per app namespace, the oldest dropped past it (default 10). */
  readonly maxSubscriptionsPerUser: number
  /** PUSH_ALLOW_LOOPBACK_HTTP: accept http push endpoints on loopback (local push servers, tests); refused in production. */
  readonly allowLoopbackHttp: boolean
}

/** App email (`ctx.email`, inbound SMTP); the sign-in mail uses SMTP_URL and SERVICE_MAIL_FROM only. */
export interface EmailSettings {
  /** EMAIL_DOMAIN: an app's addresses are `<alias>@<app slug>.<domain>` (default the base domain). */
  readonly domain: string
  /** EMAIL_MAX_RECIPIENTS: recipients of one message (default 50). */
  readonly maxRecipients: number
  /** EMAIL_MAX_MESSAGE_KB: subject, text and html of one message together, UTF-8 (default 512 KiB). */
  readonly maxMessageBytes: number
  /** EMAIL_RECIPIENTS_PER_HOUR: recipients an app may send to per clock hour, all namespaces together (default 1000). */
  readonly recipientsPerHour: number
  /** INBOUND_SMTP_PORT: the inbound SMTP listener's port; null (unset) keeps it off. */
  readonly inboundPort: number | null
  /** INBOUND_SMTP_HOST: the address it listens on (default HOST). */
  readonly inboundHost: string
  /** INBOUND_EMAIL_MAX_KB: the largest inbound message (default 10 MiB). */
  readonly inboundMaxBytes: number
  /**
   * INBOUND_EMAIL_PER_HOUR: recipients an app accepts per clock hour (a message to two of its
   * addresses counts two); past it RCPT TO answers 452, and the sender tries again later
   * (default 1000).
   */
  readonly inboundPerHour: number
}

/** Managed files: local disk under SERVICE_DATA_DIR unless FILES_S3_BUCKET is set. */
export interface FilesSettings {
  /** FILES_MAX_FILE_MB: the largest file (default 128 MiB). */
  readonly maxFileBytes: number
  /** FILES_S3_*: S3-compatible object storage, or null for local disk. */
  readonly s3: {
    readonly bucket: string
    readonly prefix: string
    readonly region: string
    readonly endpoint: string | null
    readonly accessKeyId: string
    readonly secretAccessKey: string
    readonly forcePathStyle: boolean
  } | null
}

/** The AI provider settings; a call needing an unset one fails AI_NOT_CONFIGURED naming it. */
export interface AiSettings {
  /** AI_BASE_URL, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama). */
  readonly baseUrl: string | null
  /** AI_API_KEY, sent as a bearer token; local servers may need none. Never logged. */
  readonly apiKey: string | null
  /** AI_TEXT_MODEL: generateText, streamText and generateObject. */
  readonly textModel: string | null
  /** AI_IMAGE_MODEL: generateImage. */
  readonly imageModel: string | null
  /**
   * AI_TEXT_MODELS: further text models an app may choose in its manifest (`ai.textModel`),
   * comma-separated; AI_TEXT_MODEL is always allowed. Absent: none.
   */
  readonly textModels?: readonly string[]
  /** AI_IMAGE_MODELS: likewise for `ai.imageModel` beside AI_IMAGE_MODEL. */
  readonly imageModels?: readonly string[]
  /** AI_TIMEOUT_MS: longest wait for the provider's answer (for streams, for each next piece). */
  readonly timeoutMs: number
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

function integer(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new ConfigError(`${name} must be a whole number from 0 to 65535, got "${raw}"`)
  }
  return value
}

function positive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > 1_000_000) {
    throw new ConfigError(`${name} must be a whole number from 1 to 1000000, got "${raw}"`)
  }
  return value
}

/** A size in MiB: 0 (off) or from `min` to 1048576 (1 TiB). */
function mebibytes(name: string, raw: string | undefined, options: { fallback: number; min: number }): number {
  if (raw === undefined || raw === '') return options.fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || (value !== 0 && value < options.min) || value > 1_048_576) {
    throw new ConfigError(`${name} must be 0 (off) or a whole number of MiB from ${options.min} to 1048576, got "${raw}"`)
  }
  return value
}

function flag(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback
  if (['1', 'true', 'yes'].includes(raw)) return true
  if (['0', 'false', 'no'].includes(raw)) return false
  throw new ConfigError(`${name} must be true or false, got "${raw}"`)
}

/** Builds the configuration from an environment (defaults: `process.env`). */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = integer('PORT', env.PORT, 8787)
  const rawBase = env.SERVICE_BASE_URL ?? `http://localhost:${port}`
  let baseUrl: URL
  try {
    baseUrl = new URL(rawBase)
  } catch {
    throw new ConfigError(`SERVICE_BASE_URL must be an absolute URL, got "${rawBase}"`)
  }
  if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') {
    throw new ConfigError('SERVICE_BASE_URL must use http or https')
  }
  if (baseUrl.pathname !== '/' || baseUrl.search || baseUrl.hash) {
    throw new ConfigError('SERVICE_BASE_URL must be an origin without a path, e.g. https://example.com')
  }
  const databaseUrl = env.DATABASE_URL && env.DATABASE_URL.length > 0 ? env.DATABASE_URL : null
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://')
  }
  const smtpUrl = env.SMTP_URL && env.SMTP_URL.length > 0 ? env.SMTP_URL : null
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) throw new ConfigError('SMTP_URL must start with smtp:// or smtps://')
  const production = env.NODE_ENV === 'production'
  if (production && !smtpUrl) {
    throw new ConfigError('production mode needs SMTP_URL: sign-in links are sent by email and the development mailbox is off')
  }
  // Without SMTP_URL every sign-in link is readable at {base_url}/_dev/mail: only where the
  // base URL is this machine's, unless the operator says the network is private.
  if (!production && !smtpUrl && !isLoopbackHost(baseUrl.hostname) && env.SERVICE_DEV_MAILBOX !== 'public') {
    throw new ConfigError(`SMTP_URL is unset, so sign-in links would stay in the development mailbox, readable by anyone who reaches ${baseUrl.origin}/_dev/mail: `
      + 'set SMTP_URL (and NODE_ENV=production for a public platform), or SERVICE_DEV_MAILBOX=public on a private network where that is acceptable')
  }
  const logLevel = env.LOG_LEVEL ?? 'info'
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be debug, info, warn or error, got "${logLevel}"`)
  }
  return Object.freeze({
    port,
    host: env.HOST ?? '127.0.0.1',
    baseUrl,
    baseDomain: baseUrl.hostname,
    dataDir: resolve(env.SERVICE_DATA_DIR ?? '.service'),
    databaseUrl,
    production,
    deployExamples: flag('SERVICE_DEPLOY_EXAMPLES', env.SERVICE_DEPLOY_EXAMPLES, true),
    examplesDir: resolve(env.SERVICE_EXAMPLES_DIR ?? 'examples'),
    logLevel: logLevel as Config['logLevel'],
    operatorKey: env.SERVICE_OPERATOR_KEY || null,
    masterKey: env.SERVICE_MASTER_KEY || null,
    smtpUrl,
    mailFrom: env.SERVICE_MAIL_FROM || `Service <no-reply@${baseUrl.hostname}>`,
    registration: flag('SERVICE_REGISTRATION', env.SERVICE_REGISTRATION, true),
    signInLimits: Object.freeze({
      perAddress: positive('SERVICE_SIGNIN_LIMIT_PER_ADDRESS', env.SERVICE_SIGNIN_LIMIT_PER_ADDRESS, 10),
      perClient: positive('SERVICE_SIGNIN_LIMIT_PER_CLIENT', env.SERVICE_SIGNIN_LIMIT_PER_CLIENT, 100),
    }),
    trustProxy: flag('SERVICE_TRUST_PROXY', env.SERVICE_TRUST_PROXY, false),
    statementTimeoutMs: positive('DATABASE_STATEMENT_TIMEOUT_MS', env.DATABASE_STATEMENT_TIMEOUT_MS, databaseUrl ? 120_000 : 5_000),
    appConnections: integer('DATABASE_APP_CONNECTIONS', env.DATABASE_APP_CONNECTIONS, 32),
    appPoolSize: positive('DATABASE_APP_POOL_SIZE', env.DATABASE_APP_POOL_SIZE, 4),
    // The defaults are the Functions pool's own (DEFAULT_MEMORY_BUDGET_MB, DEFAULT_MAX_HEAP_MB).
    functionMemoryMb: mebibytes('FUNCTION_MEMORY_MB', env.FUNCTION_MEMORY_MB, { fallback: 512, min: 64 }),
    functionHeapMb: mebibytes('FUNCTION_HEAP_MB', env.FUNCTION_HEAP_MB, { fallback: 256, min: 16 }),
    functionSpareWorkers: integer('FUNCTION_SPARE_WORKERS', env.FUNCTION_SPARE_WORKERS, 1),
    ai: aiSettings(env),
    files: filesSettings(env),
    email: emailSettings(env, { baseDomain: baseUrl.hostname, host: env.HOST ?? '127.0.0.1' }),
    push: pushSettings(env, { production, mailFrom: env.SERVICE_MAIL_FROM || `Service <no-reply@${baseUrl.hostname}>` }),
    realtime: realtimeSettings(env),
  })
}

function realtimeSettings(env: Record<string, string | undefined>): RealtimeSettings {
  const maxMessageBytes = positive('REALTIME_MAX_MESSAGE_BYTES', env.REALTIME_MAX_MESSAGE_BYTES, 6000)
  // A broadcast reaches the other processes in one NOTIFY, whose payload is under 8,000 bytes with its envelope.
  if (maxMessageBytes > 6000 || maxMessageBytes < 256) {
    throw new ConfigError(`REALTIME_MAX_MESSAGE_BYTES must be from 256 to 6000 (broadcasts cross processes in a PostgreSQL NOTIFY), got "${maxMessageBytes}"`)
  }
  return Object.freeze({
    maxMessageBytes,
    messagesPerSecond: positive('REALTIME_MESSAGES_PER_SECOND', env.REALTIME_MESSAGES_PER_SECOND, 50),
    maxBufferedBytes: positive('REALTIME_MAX_BUFFERED_KB', env.REALTIME_MAX_BUFFERED_KB, 1024) * 1024,
    revalidateSeconds: positive('REALTIME_REVALIDATE_SECONDS', env.REALTIME_REVALIDATE_SECONDS, 30),
    resumeSeconds: positive('REALTIME_RESUME_SECONDS', env.REALTIME_RESUME_SECONDS, 300),
    maxConnections: positive('REALTIME_MAX_CONNECTIONS', env.REALTIME_MAX_CONNECTIONS, 10_000),
    maxConnectionsPerClient: positive('REALTIME_MAX_CONNECTIONS_PER_CLIENT', env.REALTIME_MAX_CONNECTIONS_PER_CLIENT, 1000),
  })
}

function pushSettings(env: Record<string, string | undefined>, context: { production: boolean; mailFrom: string }): PushSettings {
  const address = /<([^<>\s]+@[^<>\s]+)>/.exec(context.mailFrom)?.[1] ?? context.mailFrom.trim()
  const subject = env.PUSH_SUBJECT || `mailto:${address}`
  if (!/^(mailto:[^\s@]+@[^\s@]+|https:\/\/\S+)$/.test(subject)) {
    throw new ConfigError(`PUSH_SUBJECT must be a mailto: address or an https: URL push services may contact, got "${subject}"`)
  }
  const maxSubscriptionsPerUser = positive('PUSH_MAX_SUBSCRIPTIONS_PER_USER', env.PUSH_MAX_SUBSCRIPTIONS_PER_USER, 10)
  if (maxSubscriptionsPerUser > 100) throw new ConfigError(`PUSH_MAX_SUBSCRIPTIONS_PER_USER must be at most 100, got "${maxSubscriptionsPerUser}"`)
  const allowLoopbackHttp = flag('PUSH_ALLOW_LOOPBACK_HTTP', env.PUSH_ALLOW_LOOPBACK_HTTP, false)
  if (allowLoopbackHttp && context.production) throw new ConfigError('PUSH_ALLOW_LOOPBACK_HTTP is for local push servers and tests; production posts to https push services only')
  return Object.freeze({ subject, maxSubscriptionsPerUser, allowLoopbackHttp })
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/

function emailSettings(env: Record<string, string | undefined>, defaults: { baseDomain: string; host: string }): EmailSettings {
  const domain = (env.EMAIL_DOMAIN || defaults.baseDomain).toLowerCase()
  if (!HOST_NAME.test(domain)) throw new ConfigError(`EMAIL_DOMAIN must be a host name such as mail.example.com, got "${domain}"`)
  const maxRecipients = positive('EMAIL_MAX_RECIPIENTS', env.EMAIL_MAX_RECIPIENTS, 50)
  if (maxRecipients > 1000) throw new ConfigError(`EMAIL_MAX_RECIPIENTS must be at most 1000, got "${maxRecipients}"`)
  const recipientsPerHour = positive('EMAIL_RECIPIENTS_PER_HOUR', env.EMAIL_RECIPIENTS_PER_HOUR, 1000)
  if (recipientsPerHour < maxRecipients) {
    throw new ConfigError(`EMAIL_RECIPIENTS_PER_HOUR (${recipientsPerHour}) must be at least EMAIL_MAX_RECIPIENTS (${maxRecipients}), or no message could reach them all`)
  }
  const messageKb = positive('EMAIL_MAX_MESSAGE_KB', env.EMAIL_MAX_MESSAGE_KB, 512)
  // A ctx.email.send call crosses the worker pipe as one message of at most 1 MiB of JSON.
  if (messageKb > 900) throw new ConfigError(`EMAIL_MAX_MESSAGE_KB must be at most 900 (a Function's call to the platform is at most 1 MiB), got "${messageKb}"`)
  const inboundPort = env.INBOUND_SMTP_PORT ? integer('INBOUND_SMTP_PORT', env.INBOUND_SMTP_PORT, 0) : null
  if (inboundPort === 0) throw new ConfigError('INBOUND_SMTP_PORT must be a port from 1 to 65535; leave it unset to keep inbound email off')
  const inboundKb = positive('INBOUND_EMAIL_MAX_KB', env.INBOUND_EMAIL_MAX_KB, 10 * 1024)
  // A message is held in memory while it is parsed and stored whole in one row.
  if (inboundKb > 50 * 1024) throw new ConfigError(`INBOUND_EMAIL_MAX_KB must be at most 51200 (50 MiB), got "${inboundKb}"`)
  return Object.freeze({
    domain,
    maxRecipients,
    maxMessageBytes: messageKb * 1024,
    recipientsPerHour,
    inboundPort,
    inboundHost: env.INBOUND_SMTP_HOST || defaults.host,
    inboundMaxBytes: inboundKb * 1024,
    inboundPerHour: positive('INBOUND_EMAIL_PER_HOUR', env.INBOUND_EMAIL_PER_HOUR, 1000),
  })
}

function filesSettings(env: Record<string, string | undefined>): FilesSettings {
  const maxMb = positive('FILES_MAX_FILE_MB', env.FILES_MAX_FILE_MB, 128)
  const bucket = env.FILES_S3_BUCKET || null
  if (bucket === null) return Object.freeze({ maxFileBytes: maxMb * 1024 * 1024, s3: null })
  const endpoint = env.FILES_S3_ENDPOINT || null
  if (endpoint !== null && !/^https?:\/\//.test(endpoint)) throw new ConfigError(`FILES_S3_ENDPOINT must be an http or https URL, got "${endpoint}"`)
  const accessKeyId = env.FILES_S3_ACCESS_KEY_ID || ''
  const secretAccessKey = env.FILES_S3_SECRET_ACCESS_KEY || ''
  if (accessKeyId === '' || secretAccessKey === '') {
    throw new ConfigError('FILES_S3_BUCKET needs FILES_S3_ACCESS_KEY_ID and FILES_S3_SECRET_ACCESS_KEY')
  }
  return Object.freeze({
    maxFileBytes: maxMb * 1024 * 1024,
    s3: Object.freeze({
      bucket,
      prefix: env.FILES_S3_PREFIX ?? '',
      region: env.FILES_S3_REGION || 'us-east-1',
      endpoint,
      accessKeyId,
      secretAccessKey,
      // Most S3-compatible servers (MinIO, Ceph) need path-style addressing; AWS itself takes both.
      forcePathStyle: flag('FILES_S3_FORCE_PATH_STYLE', env.FILES_S3_FORCE_PATH_STYLE, endpoint !== null),
    }),
  })
}

function aiSettings(env: Record<string, string | undefined>): AiSettings {
  const baseUrl = env.AI_BASE_URL || null
  if (baseUrl !== null) {
    let url: URL
    try {
      url = new URL(baseUrl)
    } catch {
      throw new ConfigError(`AI_BASE_URL must be an absolute URL, got "${baseUrl}"`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('AI_BASE_URL must use http or https')
  }
  return Object.freeze({
    baseUrl,
    apiKey: env.AI_API_KEY || null,
    textModel: env.AI_TEXT_MODEL || null,
    imageModel: env.AI_IMAGE_MODEL || null,
    textModels: modelList('AI_TEXT_MODELS', env.AI_TEXT_MODELS),
    imageModels: modelList('AI_IMAGE_MODELS', env.AI_IMAGE_MODELS),
    timeoutMs: positive('AI_TIMEOUT_MS', env.AI_TIMEOUT_MS, 120_000),
  })
}

/** A provider's model name as the manifest's `ai` section accepts it (manifest/names.ts AI_MODEL). */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$/

/** A comma-separated list of model names (spaces around commas allowed), frozen; [] when unset. */
function modelList(name: string, value: string | undefined): readonly string[] {
  if (value === undefined || value.trim() === '') return Object.freeze([])
  const models = value.split(',').map((model) => model.trim())
  for (const model of models) {
    if (!MODEL_NAME.test(model)) {
      throw new ConfigError(`${name} is a comma-separated list of model names (letters, digits and . _ : / @ + -, at most 200 each); "${model.slice(0, 64)}" is not one`)
    }
  }
  return Object.freeze([...new Set(models)])
}

/** Whether `hostname` (a URL's) names this machine: localhost, *.localhost, 127.0.0.0/8 or ::1. */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase()
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}
