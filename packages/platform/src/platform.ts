/**
 * The composition root: builds every feature from (config, db, clock, logger, keys) and wires
 * them into the HTTP application. Nothing here connects or listens; `main.ts` does that.
 */
import { Hono } from 'hono'
import { searchHealth } from './search/declarations.ts'
import { searchRoutes } from './search/routes.ts'
import type { Config, EmailSettings } from './config.ts'
import type { Db } from './db/db.ts'
import type { Clock } from './lib/clock.ts'
import type { Logger } from './lib/logger.ts'
import { deriveKey } from './lib/master-key.ts'
import { appRoutes } from './apps/routes.ts'
import type { AppAccess } from './apps/apps.ts'
import { APP_CHANGED, createAppDirectory } from './apps/apps.ts'
import { domainRoutes } from './apps/domain-routes.ts'
import { deployRoutes } from './deploy/routes.ts'
import { createAppEmail, createMailer, devMailRoutes, type AppEmail, type AppEmailOptions, type Mailer } from './email/index.ts'
import { createFrontend } from './frontend/serve.ts'
import { appEdge } from './edge/app-edge.ts'
import { classifyHost, hostUrls } from './http/hosts.ts'
import {
  appForRole, appTokenPages, appTokenRequestRoutes, appTokenRoutes, authRoutes, cliLoginPages, cliLoginRoutes, grantRoutes,
  mcpConsentPages, mcpOAuthRoutes, meRoutes, meTokenRoutes, onboardingRoutes, operatorRoutes, organisationRoutes, requireOwner, roleFrom, verifyAppToken,
  type AppSessionDeps, type OwnerEnv, type User,
} from './identity/index.ts'
import { createHttpApp, renderError } from './http/server.ts'
import { PLATFORM_SDK_VERSION } from './manifest/index.ts'
import { devInvokeRoutes, logRoutes } from './functions/index.ts'
import { createSecretStore, secretRoutes } from './secrets/index.ts'
import { connectionKeyring, connectionPages, connectionRoutes, type ConnectionKeyring } from './integrations/connections/index.ts'
import { customIntegrationRoutes } from './integrations/index.ts'
import { createOAuth, refuseOAuthFunction, type OAuth } from './integrations/oauth/index.ts'
import type { InvokeProvider } from './integrations/provider-invocation.ts'
import { bindAfterConnect, bindPages, bindingRoutes } from './integrations/bindings/index.ts'
import { providerPages } from './integrations/provider-page/index.ts'
import { createBroker } from './integrations/broker.ts'
import { devIntegrationRoutes, devProviderRun } from './integrations/dev/index.ts'
import { WEBHOOK_PATH_PREFIX, webhookRoutes } from './integrations/webhooks/index.ts'
import { createIntegrationEvents, type DeliveryWorkerOptions, type IntegrationEvents } from './integrations/events/index.ts'
import { createProviderInvoker } from './integrations/provider-invoker.ts'
import { createDataApi, createSchemaCache } from './data-api/index.ts'
import { createNamespaceSql, type NamespaceSql } from './namespaces/namespace-sql.ts'
import { FILE_INLINE_BYTES, FILE_PIECE_BYTES, callFunction, callRoute, createFunctionHost, type FunctionHost } from './functions/index.ts'
import { createAi, createReleaseModels } from './ai/index.ts'
import { createFileStorage, createFiles, createFilesContext, filesRoutes, readManagedFile, type FileStorage, type FilesDeps, type ManagedFiles } from './files/index.ts'
import { createPush, type Push, type PushOptions } from './push/index.ts'
import { join } from 'node:path'
import { createJobs, jobRoutes, type Jobs, type JobsOptions } from './jobs/index.ts'
import { createCronScheduler, cronRoutes, type CronScheduler, type CronSchedulerOptions } from './cron/index.ts'
import { createSyncScheduler, type SyncScheduler, type SyncSchedulerOptions } from './integrations/sync/index.ts'
import { dashboardPages, dashboardRedirects } from './dashboard/index.ts'
import { mcpResourceMetadataRoutes, mcpRoutes } from './mcp/index.ts'
import { createRealtime, DEFAULT_REALTIME_SETTINGS, type Realtime, type RealtimeDeps, type RealtimeSettings } from './realtime/index.ts'

export interface PlatformDeps {
  config: Pick<Config, 'baseUrl' | 'production' | 'smtpUrl' | 'mailFrom' | 'registration'> &
    Partial<Pick<Config, 'signInLimits' | 'trustProxy' | 'dataDir' | 'statementTimeoutMs' | 'appConnections' | 'appPoolSize' | 'functionMemoryMb' | 'functionHeapMb' | 'functionSpareWorkers' | 'ai' | 'files' | 'push' | 'email' | 'realtime'>>
  db: Db
  clock: Clock
  logger: Logger
  operatorKey: string
  masterKey: Uint8Array
  /** Replaces the mailer (tests that inspect or fail delivery). */
  mailer?: Mailer
  /** Overrides how app sessions reach the central auth (tests of refresh failures). */
  sessions?: Partial<Pick<AppSessionDeps, 'refresh' | 'refreshTimeoutMs'>>
  /** Where release bundles are written for the Functions runtime. Default `<dataDir>/bundles`. */
  bundlesDir?: string
  /** Dispatcher tuning (capacity, lease grace, poll interval); tests shorten them. */
  jobs?: JobsOptions
  /** Cron scheduler tuning (tick interval, lease length). */
  cron?: CronSchedulerOptions
  /** Integration sync scheduler tuning (tick interval, capacity, lease grace). */
  sync?: SyncSchedulerOptions
  /** Event delivery worker tuning (capacity, lease grace, poll interval, retry schedule); tests shorten them. */
  events?: DeliveryWorkerOptions
  /** Replaces how OAuth runs a provider's exchange and refresh Functions (tests). */
  invokeProvider?: InvokeProvider
  /** Addresses Functions may reach inside the denied private ranges: tests on loopback only. */
  functionsAllowNet?: readonly string[]
  /** Web push: delivery worker tuning and, for tests, loopback http endpoints (a local push service). */
  push?: PushOptions
  /** App email: worker tuning (tests shorten it) and, for tests, an SMTP URL for app mail only (null: the development mailbox) and settings. */
  email?: AppEmailOptions & { smtpUrl?: string | null; settings?: Partial<EmailSettings> }
  /** Managed files: another storage adapter (tests on S3), smaller limits, a shorter sweep age. */
  files?: { storage?: FileStorage; options?: Pick<FilesDeps, 'maxFileBytes' | 'sweepAgeMs' | 'sweepIntervalMs'> }
  /** Realtime: other limits (tests: a small send buffer, a fast rate), change feed and ping tuning. */
  realtime?: { settings?: Partial<RealtimeSettings> } & Partial<Pick<RealtimeDeps, 'feed' | 'pingMs' | 'slowGraceMs'>>
}

export interface Platform {
  /** Handles one HTTP request (any host). */
  fetch(request: Request, env?: unknown): Promise<Response>
  urls: ReturnType<typeof hostUrls>
  /** The Functions runtime (jobs and cron run Functions through it in-process). */
  functions: FunctionHost
  /** How the data API's SQL reaches the database (login pools or the wrapper). */
  appSql: NamespaceSql
  /** The keys connection credentials are sealed under (the broker reads them with it). */
  connectionKeyring: ConnectionKeyring
  /** OAuth connections: `accessTokenFor` for the broker, sync and webhooks. */
  oauth: OAuth
  /** Managed files (`ctx.files`, the browser SDK's `service.files`); its orphan sweep runs from creation until close. */
  files: ManagedFiles
  /** Background jobs: `start()` runs the dispatcher and retention purge (main.ts does). */
  jobs: Jobs
  /** The cron scheduler: `start()` runs its loop (main.ts does); tests call `tick()`. */
  cron: CronScheduler
  /** The integration sync scheduler: `start()` runs its loop in every process (main.ts does); tests call `tick()`. */
  sync: SyncScheduler
  /** Integration events: `start()` runs the delivery worker and retention purge (main.ts does); tests call `runDue()`. */
  events: IntegrationEvents
  /** Web push: `worker.start()` runs the delivery worker (main.ts does; it makes the VAPID keys first); tests call `worker.runDue()`. */
  push: Push
  /**
   * App email: `start()` runs the delivery and inbound workers, the retention purge and the
   * inbound SMTP listener when INBOUND_SMTP_PORT is set (main.ts does); tests call
   * `deliverDue()`, `listen()` and `receiveDue()`.
   */
  email: AppEmail
  /**
   * Realtime sockets at `{app_url}/_service/realtime`: main.ts hands the HTTP server's
   * `upgrade` events to `upgrade` and calls `start()`; `close()` stops it.
   */
  realtime: Realtime
  /**
   * Resolves once the app edge's caches listen for change notices; they start on first use
   * otherwise, and read through until then.
   */
  ready(): Promise<void>
  /** Stops every Functions worker and the edge caches' change subscriptions. */
  close(): Promise<void>
}

/** No AI provider: every `ctx.ai` call fails AI_NOT_CONFIGURED naming AI_BASE_URL. */
const NO_AI = Object.freeze({ baseUrl: null, apiKey: null, textModel: null, imageModel: null, timeoutMs: 120_000 })

/** config.ts's defaults, for callers (tests) that give no email settings. */
function defaultEmailSettings(baseUrl: URL): EmailSettings {
  return { domain: baseUrl.hostname, maxRecipients: 50, maxMessageBytes: 512 * 1024, recipientsPerHour: 1000, inboundPort: null, inboundHost: '127.0.0.1', inboundMaxBytes: 10 * 1024 * 1024, inboundPerHour: 1000 }
}

export function createPlatform(deps: PlatformDeps): Platform {
  const { db, clock, logger } = deps
  const urls = hostUrls(deps.config.baseUrl)
  const cookies = { secure: deps.config.baseUrl.protocol === 'https:' }
  const mailer = deps.mailer ?? createMailer({ db, clock, logger, smtpUrl: deps.config.smtpUrl, from: deps.config.mailFrom })
  const jwtKey = deriveKey(deps.masterKey, 'access-token-jwt')
  const sessions: AppSessionDeps = { db, clock, key: deriveKey(deps.masterKey, 'encryption'), ...deps.sessions }
  const revealKey = deriveKey(deps.masterKey, 'app-token-reveal')
  const trustProxy = deps.config.trustProxy ?? false
  const secrets = createSecretStore({ db, clock, key: deriveKey(deps.masterKey, 'app-secrets') })
  const keyring = connectionKeyring(deps.masterKey)
  const appSql = createNamespaceSql({
    db, logger, loginKey: deriveKey(deps.masterKey, 'namespace-logins'),
    connections: deps.config.appConnections ?? 32,
    poolSize: deps.config.appPoolSize ?? 4,
    statementTimeoutMs: deps.config.statementTimeoutMs ?? 120_000,
  })

  const oauth = createOAuth({
    db, clock, logger, urls, cookies, keyring,
    bindAfterConnect: (input) => bindAfterConnect({ db, clock }, input),
    invokeProvider: deps.invokeProvider ?? createProviderInvoker({ db, host: () => functions }),
  })

  // The Functions host is built below (its routes are mounted first).
  const events = createIntegrationEvents({ db, clock, logger, host: () => functions, production: deps.config.production, ...deps.events })
  const { smtpUrl: emailSmtpUrl, settings: emailSettings, ...emailOptions } = deps.email ?? {}
  const email = createAppEmail({
    db, clock, logger, settings: { ...(deps.config.email ?? defaultEmailSettings(deps.config.baseUrl)), ...emailSettings },
    smtpUrl: emailSmtpUrl === undefined ? deps.config.smtpUrl : emailSmtpUrl, ...emailOptions,
    host: () => functions, files: () => files, production: deps.config.production,
  })

  const base = new Hono()
  base.get('/v1/health', async (c) =>
    c.json({ status: 'ok', storage: { kind: db.kind, location: db.describe() }, sdkVersion: PLATFORM_SDK_VERSION, search: await searchHealth(db) }))
  base.route('/v1/operator', operatorRoutes({ db, clock, operatorKey: deps.operatorKey }))
  base.route('/v1/me/token', meTokenRoutes({ db, clock }))
  base.route('/v1/me', meRoutes({ db, clock }))
  base.route('/v1/cli/logins', cliLoginRoutes({ db, clock, urls, trustProxy }))
  base.route('/v1/app-token-requests', appTokenRequestRoutes({ db, clock, urls, trustProxy, mailer }))
  base.route('/_dev/mail', devMailRoutes({ db, production: deps.config.production }))
  base.route('/v1/onboarding', onboardingRoutes({ db, clock, mailer, urls, registration: deps.config.registration, trustProxy }))
  base.route('/v1/organisation', organisationRoutes({ db, clock, mailer, urls }))
  base.route('/v1/connections', connectionRoutes({ db, clock, logger, urls }))
  base.route('/', oauth.callbackRoutes)
  base.route(WEBHOOK_PATH_PREFIX, webhookRoutes({
    db, clock, logger, keyring,
    invokeProvider: createProviderInvoker({ db, host: () => functions }),
    accessToken: (input) => oauth.accessTokenFor(input),
  }))
  const owner = new Hono<OwnerEnv>()
  owner.use('*', requireOwner({ db, clock }))
  // Identity's role rules, for the owner API over apps (apps stand below identity).
  const appAccess: AppAccess<User> = {
    appForRole: (user, idOrSlug, role) => appForRole(db, user, idOrSlug, role),
    roleFrom,
  }
  owner.route('/', appRoutes({ db, urls, access: appAccess }))
  owner.route('/', deployRoutes({ db, clock, logger, secrets, ai: deps.config.ai ?? NO_AI, onDevDeleted: (appId, devName) => functions.forgetNamespace(appId, devName) }))
  owner.route('/', secretRoutes({ db, store: secrets }))
  owner.route('/', logRoutes({ db }))
  // The host is built below; its routes are mounted here, before /v1/apps is.
  owner.route('/', devInvokeRoutes({
    db, host: () => functions,
    integrations: {
      refuseOAuthFunction: (input) => refuseOAuthFunction(db, input),
      providerRun: (input) => devProviderRun({ db, urls, keyring, accessToken: (token) => oauth.accessTokenFor(token) }, input),
    },
  }))
  owner.route('/', devIntegrationRoutes({ db, clock, host: () => functions }))
  owner.route('/', grantRoutes({ db }))
  owner.route('/', domainRoutes({ db, clock, urls, baseUrl: deps.config.baseUrl, access: appAccess }))
  owner.route('/', jobRoutes({ db, clock }))
  owner.route('/', cronRoutes({ db, clock }))
  owner.route('/', customIntegrationRoutes({ db }))
  owner.route('/', oauth.adminRoutes)
  owner.route('/', bindingRoutes({ db, clock }))
  owner.route('/', events.routes)
  owner.route('/', email.routes)
  owner.route('/', appTokenRoutes({ db, clock, urls, revealKey }))
  base.route('/v1/apps', owner)
  // The owner dashboard lives on {auth_url}, beside the person's session; {base_url}/ sends people there.
  base.route('/', dashboardRedirects({ urls }))
  // The MCP server for coding agents: the same domain functions as the owner API routes above.
  base.route('/', mcpResourceMetadataRoutes({ urls }))
  base.route('/', mcpOAuthRoutes({ db, clock, urls, trustProxy }))
  base.route('/mcp', mcpRoutes({
    db, clock, logger, urls, mailer, secrets, revealKey, trustProxy, ai: deps.config.ai ?? NO_AI,
    registration: deps.config.registration,
    host: () => functions,
    devInvoke: {
      refuseOAuthFunction: (input) => refuseOAuthFunction(db, input),
      providerRun: (input) => devProviderRun({ db, urls, keyring, accessToken: (token) => oauth.accessTokenFor(token) }, input),
    },
  }))

  const auth = authRoutes({
    db, clock, logger, mailer, urls, cookies, registration: deps.config.registration,
    ...(deps.config.signInLimits ? { limits: deps.config.signInLimits } : {}),
    trustProxy,
  })
  auth.route('/', appTokenPages({ db, clock, logger, urls, cookies, revealKey }))
  auth.route('/', cliLoginPages({ db, clock, logger, urls, cookies }))
  auth.route('/', mcpConsentPages({ db, clock, logger, urls, cookies }))
  auth.route('/', bindPages({ db, clock, logger, urls, cookies, keyring, oauth: oauth.pageHooks }))
  auth.route('/', oauth.pages)
  auth.route('/', connectionPages({ db, clock, logger, urls, cookies, keyring, oauth: oauth.pageHooks }))
  auth.route('/', providerPages({ db, clock, logger, urls, cookies }))
  auth.route('/', dashboardPages({ db, clock, logger, urls, cookies, secrets, revealKey, mailer }))

  // Without a data directory (tests give only a bundles directory) files are kept beside the bundles.
  const filesRoot = deps.config.dataDir !== undefined ? join(deps.config.dataDir, 'files') : join(deps.bundlesDir ?? '.service', '.files')
  const push = createPush({
    db, clock, logger, sealKey: deriveKey(deps.masterKey, 'push-vapid'), appOrigin: (slug) => urls.app(slug),
    settings: deps.config.push ?? { subject: `mailto:no-reply@${deps.config.baseUrl.hostname}`, maxSubscriptionsPerUser: 10, allowLoopbackHttp: false },
    ...(deps.push === undefined ? {} : { options: deps.push }),
  })
  const files = createFiles({
    db, clock, logger,
    storage: deps.files?.storage ?? createFileStorage({ root: filesRoot, s3: deps.config.files?.s3 ?? null }),
    ...(deps.config.files === undefined ? {} : { maxFileBytes: deps.config.files.maxFileBytes }),
    ...deps.files?.options,
  })
  files.start()
  const functions = createFunctionHost({
    db, clock, logger, schemas: createSchemaCache(), secrets, appSql,
    bundlesDir: deps.bundlesDir ?? join(deps.config.dataDir ?? '.service', 'bundles'),
    jobs: { answer: (call) => jobs.answer(call) },
    integrations: { answer: (call) => broker.answer(call) },
    events: { emit: (call) => events.emit(call) },
    files: createFilesContext(files, { pipe: { inlineBytes: FILE_INLINE_BYTES, pieceBytes: FILE_PIECE_BYTES } }),
    email: { answer: (call) => email.answer(call) },
    notifications: { answer: (call) => push.answer(call) },
    ai: createAi({
      settings: deps.config.ai ?? NO_AI, logger, releaseModels: createReleaseModels(db),
      readFile: (input) => readManagedFile({ db, files }, input),
    }),
    ...(deps.config.functionMemoryMb === undefined ? {} : { memoryBudgetMb: deps.config.functionMemoryMb }),
    ...(deps.config.functionHeapMb === undefined ? {} : { maxHeapMb: deps.config.functionHeapMb }),
    ...(deps.config.functionSpareWorkers === undefined ? {} : { spareWorkers: deps.config.functionSpareWorkers }),
    ...(deps.functionsAllowNet === undefined ? {} : { allowNet: deps.functionsAllowNet }),
  })
  const broker = createBroker({
    db, clock, keyring, urls,
    invokeProvider: createProviderInvoker({ db, host: () => functions }),
    accessToken: (input) => oauth.accessTokenFor(input),
  })
  const jobs = createJobs({ db, clock, logger, functions, production: deps.config.production, ...deps.jobs })
  const cron = createCronScheduler({ db, clock, logger, ...deps.cron })
  const sync = createSyncScheduler({
    db, clock, logger, keyring,
    invokeProvider: createProviderInvoker({ db, host: () => functions }),
    accessToken: (input) => oauth.accessTokenFor(input),
    ...deps.sync,
  })

  // Listens for change notices from its first use until close().
  const appDirectory = createAppDirectory({ db, clock })
  const functionCalls = { host: functions, production: deps.config.production }
  const app = appEdge({
    db,
    clock,
    apps: appDirectory,
    appTokens: { verify: (token) => verifyAppToken(db, clock, token) },
    frontend: createFrontend({ db }),
    urls,
    cookies,
    jwtKey,
    sessions,
    dataApi: createDataApi({ db, schemas: createSchemaCache(), sql: appSql }),
    callFunction: (c, target) => callFunction(functionCalls, c, target),
    callRoute: (c, target) => callRoute(functionCalls, c, target),
    files: filesRoutes({ db, files }),
    search: searchRoutes({ db, sql: appSql }),
    push: push.routes,
    realtime: (request, target) => realtime.handle(request, target),
    hostOf: (request) => classifyHost(request.headers.get('host') ?? new URL(request.url).host, deps.config.baseUrl),
  })

  const http = createHttpApp({ baseUrl: deps.config.baseUrl, hosts: { base, auth, app }, logger, production: deps.config.production })
  // A realtime socket's credentials are re-checked by the edge as a new handshake would be,
  // without a request log line each time.
  const recheckApp = new Hono()
  recheckApp.onError(renderError(logger, deps.config.production))
  recheckApp.route('/', app)
  const { settings: realtimeSettings, ...realtimeOptions } = deps.realtime ?? {}
  const realtime = createRealtime({
    db, clock, logger, sql: appSql,
    settings: { ...(deps.config.realtime ?? DEFAULT_REALTIME_SETTINGS), ...realtimeSettings },
    protocol: deps.config.baseUrl.protocol,
    admit: async (request, env) => http.fetch(request, env),
    recheck: async (request) => recheckApp.fetch(request),
    appChangedChannel: APP_CHANGED,
    relayKey: deriveKey(deps.masterKey, 'realtime-relay'),
    trustProxy,
    ...realtimeOptions,
  })
  return {
    fetch: async (request, env) => http.fetch(request, env),
    urls,
    functions,
    appSql,
    connectionKeyring: keyring,
    oauth,
    files,
    jobs,
    cron,
    sync,
    events,
    push,
    email,
    realtime,
    ready: async () => {
      await appDirectory.listening()
    },
    close: async () => {
      await realtime.stop()
      await cron.stop()
      await sync.stop()
      await jobs.stop()
      await events.stop()
      await push.worker.stop()
      await email.stop()
      await Promise.all([functions.close(), appDirectory.close(), appSql.close()])
      await files.stop()
    },
  }
}
