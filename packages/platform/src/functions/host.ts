/**
 * The Functions host: runs an app's Functions from its active release. It keeps one warm
 * pool per (release, namespace), created on the first invocation, and closes an app's
 * pools for older releases once a newer release is active (and all of them on `close`).
 * A release's files are written to `<bundlesDir>/<releaseId>/` once; its manifest gives
 * each Function's entrypoint, access and timeout. Context calls are answered here: `log`
 * and `data` under the invocation's identity, `secrets` for the invocation's namespace
 * (context-secrets.ts), every other member NOT_IMPLEMENTED by name. Secret values of the
 * namespace are redacted from stored log lines, failures and worker diagnostics here, so
 * no caller sees an unredacted one. A development namespace (`resolveDev`) runs its own
 * active release in its own pools, schema and secrets.
 *
 * Access is not checked here: the HTTP route checks it (access.ts) and trusted in-process
 * callers (jobs, cron) may run any Function, `system` ones included.
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Db } from '../db/db.ts'
import type { App } from '../apps/apps.ts'
import { findNamespace, type Namespace } from '../deploy/namespaces.ts'
import { activeReleaseOf } from '../deploy/dev-names.ts'
import type { SecretStore } from '../secrets/index.ts'
import type { SchemaCache } from '../data-api/index.ts'
import type { FunctionDeclaration } from '../manifest/index.ts'
import type { Clock } from '../lib/clock.ts'
import { notImplemented, ServiceError } from '../lib/errors.ts'
import type { Logger } from '../lib/logger.ts'
import { materialiseRelease } from './bundle-files.ts'
import { runDataCall, type DataIdentity } from './context-data.ts'
import { writeFunctionLog } from './context-log.ts'
import { createSecretsContext } from './context-secrets.ts'
import { redactFailure } from './failures.ts'
import { compileRoutes, type RouteMatch, type RouteMiss, type RouteTable } from './http-routes.ts'
import { createFunctionPool, type ContextCall, type FunctionPool, type InvocationMeta, type InvokeResult } from './pool.ts'
import type { WireHttpRoute } from './protocol.ts'

/** Where `@service/server` resolves inside a worker. */
export const DEFAULT_SDK_ENTRY = fileURLToPath(new URL('../../../server-sdk/src/index.ts', import.meta.url))

/** The person an invocation runs for, or null (anonymous, or a system Function). */
export interface InvocationUser {
  readonly id: string
  readonly email?: string
}

/** What the platform keeps about an invocation besides what the worker sees. */
export interface HostMeta extends InvocationMeta {
  readonly appId: string
  readonly releaseId: string
  readonly functionName: string
  readonly namespace: Namespace | null
  /** '' for production, else the development namespace. */
  readonly devName: string
  readonly identity: DataIdentity
}

/** A Function of an app's active release, found by name. */
export interface ResolvedFunction {
  readonly app: App
  readonly releaseId: string
  readonly declaration: FunctionDeclaration
  /** The development namespace the release belongs to; '' or absent for production. */
  readonly devName?: string
}

export interface FunctionHostDeps {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly schemas: SchemaCache
  /** Release bundles are written below this directory (and Deno's cache in `.deno`). */
  readonly bundlesDir: string
  readonly sdkEntry?: string
  /** Workers per pool. Default 2. */
  readonly poolSize?: number
  /** App secrets, for `ctx.secrets` and redaction. */
  readonly secrets: SecretStore
  /** Answers `ctx.jobs` (the jobs feature); without it `ctx.jobs` is NOT_IMPLEMENTED. */
  readonly jobs?: { answer(call: JobsContextCall): Promise<unknown> }
}

/** A `ctx.jobs` call with the invocation's namespace and caller, as the host knows them. */
export interface JobsContextCall {
  readonly appId: string
  readonly namespace: Namespace | null
  readonly devName: string
  readonly userId: string | null
  readonly method: string
  readonly args: readonly unknown[]
}

export interface FunctionHost {
  /** The active release's Function `name`, or null when the app has none by that name. */
  resolve(app: App, name: string): Promise<ResolvedFunction | null>
  /** The Function `name` of a development namespace's active release, or null (no release, no Function). */
  resolveDev(app: App, devName: string, name: string): Promise<ResolvedFunction | null>
  /** The active release's Function route for a request (the table is compiled once per release). */
  route(app: App, request: { method: string; pathname: string }): Promise<({ matched: true; fn: ResolvedFunction } & RouteMatch) | RouteMiss>
  /**
   * Runs a resolved Function for `user` (null: anonymous, or no one for a system Function).
   * `http`: the route facts of a route invocation (`ctx.http`); `bytes`: the caller (HTTP)
   * takes a byte result. Without `bytes` the result is always a FunctionResult.
   * `awaitLogs`: resolve only once the invocation's `ctx.log` lines are stored.
   */
  run(fn: ResolvedFunction, options: { input: unknown; user: InvocationUser | null; requestId?: string; http?: WireHttpRoute | null; bytes?: boolean; awaitLogs?: boolean } & JobRunOptions): Promise<InvokeResult>
  /** Closes every pool. */
  close(): Promise<void>
}

/** A queue consumer run: `ctx.job`, and the queue's timeout in place of the Function's. */
export interface JobRunOptions {
  readonly job?: { readonly id: string; readonly queue: string; readonly attempt: number } | null
  readonly timeoutMs?: number
}

const MAX_CACHED_RELEASES = 256

/**
 * @example
 * const host = createFunctionHost({ db, clock, logger, schemas, bundlesDir })
 * const fn = await host.resolve(app, 'createTask')
 * if (fn) await host.run(fn, { input: { title: 'Milk' }, user })
 */
export function createFunctionHost(deps: FunctionHostDeps): FunctionHost {
  const declarations = new Map<string, Promise<Map<string, FunctionDeclaration>>>()
  /** Route tables by the declarations they were compiled from, so one release compiles once. */
  const routeTables = new WeakMap<Map<string, FunctionDeclaration>, RouteTable>()
  const pools = new Map<string, { appId: string; devName: string; releaseId: string; pool: Promise<FunctionPool<HostMeta>> }>()
  /** The active release per app namespace (`<appId>:<devName>`). */
  const activeRelease = new Map<string, string>()
  /** A release's namespace (deploy creates it; it never changes after). */
  const namespaces = new Map<string, Promise<Namespace | null>>()
  const secrets = createSecretsContext({ db: deps.db, store: deps.secrets })
  /** Each invocation's last log write: its lines are stored one after another, in call order. */
  const logTails = new WeakMap<HostMeta, Promise<unknown>>()
  let closed = false

  function declarationsOf(releaseId: string): Promise<Map<string, FunctionDeclaration>> {
    let entry = declarations.get(releaseId)
    if (entry === undefined) {
      if (declarations.size >= MAX_CACHED_RELEASES) declarations.delete(declarations.keys().next().value!)
      entry = deps.db
        .query<{ functions: FunctionDeclaration[] | null }>(`select manifest -> 'functions' as functions from platform.releases where id = $1`, [releaseId])
        .then((rows) => new Map((rows[0]?.functions ?? []).map((declaration) => [declaration.name, declaration])))
      entry.catch(() => declarations.delete(releaseId))
      declarations.set(releaseId, entry)
    }
    return entry
  }

  /** Closes the app namespace's pools of releases other than `releaseId`, the one now active. */
  function retireOlderPools(appId: string, releaseId: string, devName = ''): void {
    if (activeRelease.get(`${appId}:${devName}`) === releaseId) return
    activeRelease.set(`${appId}:${devName}`, releaseId)
    for (const [key, entry] of pools) {
      if (entry.appId !== appId || entry.devName !== devName || entry.releaseId === releaseId) continue
      pools.delete(key)
      namespaces.delete(entry.releaseId)
      entry.pool.then((pool) => pool.close()).catch((error: unknown) => deps.logger.warn('functions: closing a pool failed', { error: String(error) }))
    }
  }

  function poolFor(meta: HostMeta): Promise<FunctionPool<HostMeta>> {
    const key = `${meta.releaseId}:${meta.namespace?.id ?? 'none'}`
    let entry = pools.get(key)
    if (entry === undefined) {
      const pool = materialiseRelease(deps.db, { bundlesDir: deps.bundlesDir, releaseId: meta.releaseId }).then((bundleDir) =>
        createFunctionPool<HostMeta>({
          bundleDir,
          sdkEntry: deps.sdkEntry ?? DEFAULT_SDK_ENTRY,
          size: deps.poolSize ?? 2,
          denoDir: join(deps.bundlesDir, '.deno'),
          logger: redactingLogger(deps.logger, (fields) => secrets.handedOut({ appId: meta.appId, devName: meta.devName }).value(fields)),
          onContextCall: answer,
        }))
      entry = { appId: meta.appId, devName: meta.devName, releaseId: meta.releaseId, pool }
      pool.catch(() => pools.delete(key))
      pools.set(key, entry)
    }
    return entry.pool
  }

  function namespaceOf(fn: ResolvedFunction): Promise<Namespace | null> {
    let entry = namespaces.get(fn.releaseId)
    if (entry === undefined) {
      if (namespaces.size >= MAX_CACHED_RELEASES) namespaces.delete(namespaces.keys().next().value!)
      entry = fn.devName ? findNamespace(deps.db, fn.app.id, 'development', fn.devName) : findNamespace(deps.db, fn.app.id)
      entry.catch(() => namespaces.delete(fn.releaseId))
      namespaces.set(fn.releaseId, entry)
    }
    return entry
  }

  async function answer(call: ContextCall<HostMeta>): Promise<unknown> {
    const meta = call.meta
    switch (call.member) {
      case 'log': {
        const previous = logTails.get(meta) ?? Promise.resolve()
        const written = previous.catch(() => {}).then(async () =>
          writeFunctionLog(deps.db, deps.clock, {
            source: { appId: meta.appId, devName: meta.devName, releaseId: meta.releaseId, functionName: meta.functionName, requestId: meta.requestId },
            level: call.method,
            args: call.args,
            redactor: await secrets.redactorFor({ appId: meta.appId, devName: meta.devName }),
          }))
        logTails.set(meta, written)
        return await written
      }
      case 'secrets':
        return await secrets.answer({ scope: { appId: meta.appId, devName: meta.devName }, releaseId: meta.releaseId, method: call.method, args: call.args })
      case 'data': {
        if (meta.namespace === null) throw new ServiceError('NOT_FOUND', 'this app has no database yet')
        const schema = await deps.schemas.get(deps.db, { schemaName: meta.namespace.schemaName, releaseId: meta.releaseId })
        return await runDataCall({ db: deps.db, namespace: meta.namespace, schema, identity: meta.identity, method: call.method, args: call.args })
      }
      case 'jobs':
        if (deps.jobs === undefined) throw notImplemented('ctx.jobs')
        return await deps.jobs.answer({
          appId: meta.appId, namespace: meta.namespace, devName: meta.devName, userId: meta.user?.id ?? null, method: call.method, args: call.args,
        })
      default:
        throw notImplemented(`ctx.${call.member}`)
    }
  }

  return {
    async resolve(app, name) {
      if (app.activeReleaseId === null) return null
      retireOlderPools(app.id, app.activeReleaseId)
      const declaration = (await declarationsOf(app.activeReleaseId)).get(name)
      return declaration === undefined ? null : { app, releaseId: app.activeReleaseId, declaration }
    },

    async resolveDev(app, devName, name) {
      const releaseId = await activeReleaseOf(deps.db, app.id, devName)
      if (releaseId === null) return null
      retireOlderPools(app.id, releaseId, devName)
      const declaration = (await declarationsOf(releaseId)).get(name)
      return declaration === undefined ? null : { app, releaseId, declaration, devName }
    },

    async route(app, request) {
      if (app.activeReleaseId === null) return { matched: false, methods: [] }
      const byName = await declarationsOf(app.activeReleaseId)
      let table = routeTables.get(byName)
      if (table === undefined) routeTables.set(byName, (table = compileRoutes(byName.values())))
      const match = table.match(request.method, request.pathname)
      if (!match.matched) return match
      retireOlderPools(app.id, app.activeReleaseId)
      return { ...match, fn: { app, releaseId: app.activeReleaseId, declaration: match.declaration } }
    },

    async run(fn, options) {
      if (closed) return { ok: false, error: { kind: 'crashed', message: 'the Functions host is closed' } }
      const system = fn.declaration.access === 'system'
      const user = system ? null : options.user
      const aud = fn.app.id
      const identity: DataIdentity = system
        ? { role: 'system', claims: { role: 'system', aud }, canWrite: true }
        : {
          role: 'user',
          claims: user ? { sub: user.id, role: 'authenticated', aud, ...(user.email ? { email: user.email } : {}) } : { role: 'anon', aud },
          canWrite: user !== null,
        }
      const devName = fn.devName ?? ''
      const meta: HostMeta = {
        requestId: options.requestId ?? randomUUID(),
        environment: devName === '' ? 'production' : 'development',
        user: user ? { id: user.id } : null,
        job: options.job ?? null,
        http: options.http ?? null,
        appId: fn.app.id,
        releaseId: fn.releaseId,
        functionName: fn.declaration.name,
        namespace: await namespaceOf(fn),
        devName,
        identity,
      }
      const pool = await poolFor(meta)
      const result = await pool.invoke({
        entrypoint: fn.declaration.entrypoint,
        input: options.input,
        meta,
        timeoutMs: options.timeoutMs ?? fn.declaration.timeoutSeconds * 1000,
        ...(options.bytes === true ? { bytes: true } : {}),
      })
      if (options.awaitLogs === true) await logTails.get(meta)?.catch(() => {})
      if (result.ok) return result
      const redactor = await secrets.redactorFor({ appId: meta.appId, devName })
      return { ok: false, error: redactFailure(result.error, redactor) }
    },

    async close() {
      closed = true
      const entries = [...pools.values()]
      pools.clear()
      await Promise.all(entries.map((entry) => entry.pool.then((pool) => pool.close(), () => {})))
    },
  }
}

/** The pool's logger with the namespace's handed-out secret values redacted from every field. */
function redactingLogger(logger: Logger, redact: (fields: Record<string, unknown>) => Record<string, unknown>): Logger {
  const at = (level: keyof Logger) => (message: string, fields?: Record<string, unknown>) =>
    logger[level](message, fields === undefined ? undefined : redact(fields))
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}
