/**
 * The Functions host: runs an app's Functions from its active release. It keeps one warm
 * pool per (release, namespace), created on the first invocation.
 *
 * Pool lifecycle: releases are ordered by (activation time, version), never by the order
 * requests arrive. Once a newer release of an app namespace is seen, the older releases'
 * pools drain: they take no new work (a request that read the app before the deploy runs
 * the newer release) and close once their in-flight invocations end, or at the latest
 * when the longest of those invocations' timeouts has passed. A pool a late request needs
 * for a release already superseded is created draining, so it closes after that call. A
 * pool unused for `poolIdleMs` (5 minutes) is closed, and past `maxPools` live pools the
 * least recently used one drains first. `close` closes them all at once.
 * A release's files are written to `<bundlesDir>/<releaseId>/` once; its manifest gives
 * each Function's entrypoint, access and timeout. Context calls are answered here: `log`
 * and `data` under the invocation's identity (`data` only until `dataAuthorizationMs` after
 * the start when the caller sets it: a custom-domain session, spec 5.5), `secrets` for the
 * invocation's namespace (context-secrets.ts; a provider's integration invocation reads its
 * secrets overlay first, provider-invoker.ts), `integrations` by the broker
 * (integrations/broker.ts), `integration.emit` by integrations/events (a provider's
 * integration invocation that may emit only), `email` by email/send.ts for the invocation's
 * release and namespace, `notifications` by push/send.ts for the invocation's app
 * namespace, `files` by files/context.ts under the
 * invocation's identity and job (its delegated read grant; a `jobs.enqueue` with `files` is
 * checked here for SDK 2.4.0 and a non-anonymous producer first), every other member
 * NOT_IMPLEMENTED by name. Secret values of the
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
import { findNamespace, type Namespace } from '../namespaces/namespaces.ts'
import { activeReleaseOf } from '../namespaces/dev-names.ts'
import type { SecretStore } from '../secrets/index.ts'
import type { SchemaCache } from '../data-api/index.ts'
import type { NamespaceSql } from '../namespaces/namespace-sql.ts'
import type { FunctionDeclaration } from '../manifest/index.ts'
import { runSearch } from '../search/run.ts'
import type { Clock } from '../lib/clock.ts'
import type { AiContextCall } from '../ai/index.ts'
import { notImplemented, ServiceError } from '../lib/errors.ts'
import { checkGrantSdk, fileCallerOf, readGrantOption, type FilesContextCall } from '../files/index.ts'
import type { NotificationsContextCall } from '../push/index.ts'
import { withFields, type Logger } from '../lib/logger.ts'
import { materialiseRelease } from './bundle-files.ts'
import { runDataCall } from './context-data.ts'
import { checkDataAuthorization, type DataIdentity } from '../namespaces/data-identity.ts'
import { isLogLevel, LOG_BATCH_LINES, writeFunctionLogs } from './context-log.ts'
import { createSecretsContext } from './context-secrets.ts'
import { redactFailure } from './failures.ts'
import { compileRoutes, type RouteMatch, type RouteMiss, type RouteTable } from './http-routes.ts'
import { createFunctionPool, poolSandbox, type ContextCall, type FunctionPool, type InvocationMeta, type InvokeResult } from './pool.ts'
import { createSpareWorkers } from './spare-workers.ts'
import type { WireHttpRoute, WireIntegration } from './protocol.ts'

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
  /** The namespace login pools `ctx.data` runs through (the data API's); without, the wrapper. */
  readonly appSql?: NamespaceSql
  /** Release bundles are written below this directory (and Deno's cache in `.deno`). */
  readonly bundlesDir: string
  readonly sdkEntry?: string
  /** Workers per pool. Default 2. */
  readonly poolSize?: number
  /** V8 heap limit per worker in MiB (FUNCTION_HEAP_MB); the pool's default when left out, 0 for V8's own. */
  readonly maxHeapMb?: number
  /** Resident memory budget per worker in MiB (FUNCTION_MEMORY_MB); the pool's default when left out, 0 for no watch. */
  readonly memoryBudgetMb?: number
  /** Addresses opened in the sandbox's denied ranges (tests on loopback only; sandbox.ts). */
  readonly allowNet?: readonly string[]
  /** A pool unused this long (by `clock`) is closed. Default 5 minutes. */
  readonly poolIdleMs?: number
  /** Most live (not draining) pools; past it the least recently used drains. Default 64. */
  readonly maxPools?: number
  /**
   * Deno processes kept started for new pools (FUNCTION_SPARE_WORKERS, spare-workers.ts), so
   * a pool's first invocation does not wait for Deno to start. Default 0.
   */
  readonly spareWorkers?: number
  /** App secrets, for `ctx.secrets` and redaction. */
  readonly secrets: SecretStore
  /** Answers `ctx.jobs` (the jobs feature); without it `ctx.jobs` is NOT_IMPLEMENTED. */
  readonly jobs?: { answer(call: JobsContextCall): Promise<unknown> }
  /** Answers `ctx.integrations` (the broker, integrations/broker.ts); without it NOT_IMPLEMENTED. */
  readonly integrations?: { answer(call: IntegrationsContextCall): Promise<unknown> }
  /** Answers `ctx.integration.emit` (integrations/events/); without it NOT_IMPLEMENTED. */
  readonly events?: { emit(call: IntegrationEmitCall): Promise<number> }
  /** Answers `ctx.files` (files/context.ts); without it NOT_IMPLEMENTED. */
  readonly files?: { answer(call: FilesContextCall): Promise<unknown> }
  /** Answers `ctx.ai` (ai/, the platform calls the provider); without it NOT_IMPLEMENTED. */
  readonly ai?: { answer(call: AiContextCall<DataIdentity>): Promise<unknown> }
  /** Answers `ctx.email` (email/send.ts); without it NOT_IMPLEMENTED. */
  readonly email?: { answer(call: EmailContextCall): Promise<unknown> }
  /** Answers `ctx.notifications` (push/send.ts); without it NOT_IMPLEMENTED. */
  readonly notifications?: { answer(call: NotificationsContextCall): Promise<unknown> }
}

/** A `ctx.email` call with the invocation's app, release and namespace, as the host knows them. */
export interface EmailContextCall {
  readonly appId: string
  readonly releaseId: string
  /** The invocation's namespace id; null when the app has none yet. */
  readonly namespaceId: string | null
  /** '' for production, else the development namespace. */
  readonly devName: string
  readonly method: string
  readonly args: readonly unknown[]
}

/** A `ctx.integration.emit` call with the provider invocation as the host knows it. */
export interface IntegrationEmitCall {
  /** The provider app whose Function runs. */
  readonly appId: string
  readonly releaseId: string
  /** '' for production, else the development namespace. */
  readonly devName: string
  /** The invocation's `ctx.integration` (null outside an integration invocation). */
  readonly integration: WireIntegration | null
  /** Whether the invocation may emit (false for OAuth exchange and refresh, and outside integration invocations). */
  readonly mayEmit: boolean
  readonly args: readonly unknown[]
}

/** A `ctx.integrations` call with the invocation's app, release and person. */
export interface IntegrationsContextCall {
  readonly appId: string
  readonly releaseId: string
  /** '' for production, else the development namespace. */
  readonly devName: string
  readonly userId: string | null
  readonly requestId: string
  readonly method: string
  readonly args: readonly unknown[]
}

/**
 * A provider's integration invocation (provider-invocation.ts): `ctx.integration`, and the
 * values `ctx.secrets.get(NAME)` returns first for this invocation only, redacted like the
 * provider's own secrets.
 */
export interface IntegrationRunOptions {
  readonly context: WireIntegration
  /** null: a credential the contract declares, left empty (optional): `get` gives null, `require` fails SECRET_NOT_SET. */
  readonly secrets: Readonly<Record<string, string | null>>
  /** Whether `ctx.integration.emit` may be called (provider-invocation.ts `mayEmit`); absent: unless the trigger is `oauth`. */
  readonly mayEmit?: boolean
  /** Secret values handed in the input (provider-invocation.ts `redact`): redacted, not readable. */
  readonly redact?: readonly string[]
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
   * `dataAuthorizationMs`: `ctx.data` fails AUTH_EXPIRED this long (by the clock) after the
   * invocation starts (a custom-domain session, spec 5.5); without it, data works throughout.
   */
  run(fn: ResolvedFunction, options: { input: unknown; user: InvocationUser | null; requestId?: string; http?: WireHttpRoute | null; bytes?: boolean; awaitLogs?: boolean; dataAuthorizationMs?: number; integration?: IntegrationRunOptions } & JobRunOptions): Promise<InvokeResult>
  /** Closes pools unused for `poolIdleMs` (a timer runs it every minute). */
  reapIdle(): void
  /** Drains the pools of a development namespace that was deleted. */
  forgetNamespace(appId: string, devName: string): void
  /** How many pools are live (taking work) and draining. */
  stats(): { live: number; draining: number }
  /** Closes every pool. */
  close(): Promise<void>
}

/** A queue consumer run: `ctx.job`, and the queue's timeout in place of the Function's. */
export interface JobRunOptions {
  readonly job?: { readonly id: string; readonly queue: string; readonly attempt: number } | null
  readonly timeoutMs?: number
}

const MAX_CACHED_RELEASES = 256
const DEFAULT_POOL_IDLE_MS = 5 * 60 * 1000
const DEFAULT_MAX_POOLS = 64
const REAP_INTERVAL_MS = 60 * 1000
/** A draining pool is closed this long after its last invocation's timeout at the latest. */
const DRAIN_GRACE_MS = 5 * 1000
/** `ctx.log` lines stored per invocation; past it lines are counted and one line says how many. */
export const MAX_LOG_LINES_PER_INVOCATION = 1000

/** What the host keeps of a release: its order among the namespace's releases and its Functions. */
interface ReleaseInfo {
  /** (activation time, version): a later release compares greater. */
  readonly order: readonly [number, number]
  readonly functions: Map<string, FunctionDeclaration>
}

interface PoolEntry {
  readonly key: string
  readonly appId: string
  readonly devName: string
  readonly releaseId: string
  readonly pool: Promise<FunctionPool<HostMeta>>
  /** Invocations in flight (a byte result until its stream ends). */
  running: number
  /** When the last of them times out at the latest (performance.now()). */
  deadline: number
  /** By `clock`, for idle reaping and least-recently-used order. */
  lastUsed: number
  draining: boolean
  drainTimer: ReturnType<typeof setTimeout> | undefined
}

/** An invocation's `ctx.log` state: lines waiting to be written, how many were taken and dropped. */
interface LogState {
  pending: { level: string; args: readonly unknown[] }[]
  flushing: Promise<unknown> | null
  taken: number
  dropped: number
  ended: boolean
}

function later(a: readonly [number, number], b: readonly [number, number]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1])
}

/**
 * @example
 * const host = createFunctionHost({ db, clock, logger, schemas, bundlesDir })
 * const fn = await host.resolve(app, 'createTask')
 * if (fn) await host.run(fn, { input: { title: 'Milk' }, user })
 */
export function createFunctionHost(deps: FunctionHostDeps): FunctionHost {
  const releases = new Map<string, Promise<ReleaseInfo>>()
  /** Route tables by the declarations they were compiled from, so one release compiles once. */
  const routeTables = new WeakMap<Map<string, FunctionDeclaration>, RouteTable>()
  const pools = new Map<string, PoolEntry>()
  /** Pools that take no new work and close when their invocations end. */
  const draining = new Set<PoolEntry>()
  /** The newest release seen per app namespace (`<appId>:<devName>`). */
  const newest = new Map<string, { releaseId: string; order: readonly [number, number] }>()
  /** A release's namespace (deploy creates it; it never changes after). */
  const namespaces = new Map<string, Promise<Namespace | null>>()
  const secrets = createSecretsContext({ db: deps.db, clock: deps.clock, store: deps.secrets })
  /** Each invocation's `ctx.log` lines: stored in batches, in call order, at most MAX_LOG_LINES_PER_INVOCATION. */
  const logs = new WeakMap<HostMeta, LogState>()
  /** An integration invocation's secrets overlay (connection values), read before the namespace's secrets. */
  const overlays = new WeakMap<HostMeta, Readonly<Record<string, string | null>>>()
  /** The integration invocations that may call `ctx.integration.emit`. */
  const emitters = new WeakSet<HostMeta>()
  const idleMs = deps.poolIdleMs ?? DEFAULT_POOL_IDLE_MS
  const maxPools = deps.maxPools ?? DEFAULT_MAX_POOLS
  const reaper = setInterval(() => reapIdle(), REAP_INTERVAL_MS)
  reaper.unref()
  const sandbox = {
    sdkEntry: deps.sdkEntry ?? DEFAULT_SDK_ENTRY,
    denoDir: join(deps.bundlesDir, '.deno'),
    ...(deps.maxHeapMb === undefined ? {} : { maxHeapMb: deps.maxHeapMb }),
    ...(deps.allowNet === undefined ? {} : { allowNet: deps.allowNet }),
  }
  const spares = (deps.spareWorkers ?? 0) === 0 ? undefined : createSpareWorkers({
    count: deps.spareWorkers ?? 0,
    directory: join(deps.bundlesDir, '.workers'),
    sandbox: poolSandbox(sandbox),
    logger: deps.logger,
  })
  let closed = false

  function releaseInfo(releaseId: string): Promise<ReleaseInfo> {
    let entry = releases.get(releaseId)
    if (entry === undefined) {
      if (releases.size >= MAX_CACHED_RELEASES) releases.delete(releases.keys().next().value!)
      entry = deps.db
        .query<{ functions: FunctionDeclaration[] | null; activated_at: Date | string; version: number }>(
          `select manifest -> 'functions' as functions, activated_at, version from platform.releases where id = $1`, [releaseId])
        .then((rows) => ({
          order: rows[0] === undefined ? [0, 0] as const : [new Date(rows[0].activated_at).getTime(), rows[0].version] as const,
          functions: new Map((rows[0]?.functions ?? []).map((declaration) => [declaration.name, declaration])),
        }))
      entry.catch(() => releases.delete(releaseId))
      releases.set(releaseId, entry)
    }
    return entry
  }

  /**
   * The release to run for a caller that found `releaseId` active: it, unless a newer
   * release of the namespace has been seen (the caller read the app before a deploy). A
   * newer release than any seen drains the namespace's other pools.
   */
  async function current(target: { appId: string; devName: string; releaseId: string }): Promise<{ releaseId: string; info: ReleaseInfo }> {
    const { appId, devName, releaseId } = target
    const info = await releaseInfo(releaseId)
    const key = `${appId}:${devName}`
    const known = newest.get(key)
    if (known === undefined || later(info.order, known.order)) {
      newest.set(key, { releaseId, order: info.order })
      for (const entry of pools.values()) {
        if (entry.appId === appId && entry.devName === devName && entry.releaseId !== releaseId) drain(entry)
      }
      return { releaseId, info }
    }
    if (known.releaseId === releaseId) return { releaseId, info }
    return { releaseId: known.releaseId, info: await releaseInfo(known.releaseId) }
  }

  /** True when a newer release of the namespace than `releaseId` has been seen. */
  function superseded(release: { appId: string; devName: string; releaseId: string }): boolean {
    const known = newest.get(`${release.appId}:${release.devName}`)
    return known !== undefined && known.releaseId !== release.releaseId
  }

  /** Stops routing work to a pool; it closes once idle, or when its last invocation's timeout has passed. */
  function drain(entry: PoolEntry): void {
    if (entry.draining) return
    entry.draining = true
    draining.add(entry)
    if (pools.get(entry.key) === entry) pools.delete(entry.key)
    if (entry.running === 0) return closeEntry(entry)
    entry.drainTimer = setTimeout(() => closeEntry(entry), Math.max(0, entry.deadline - performance.now()) + DRAIN_GRACE_MS)
    entry.drainTimer.unref()
  }

  function closeEntry(entry: PoolEntry): void {
    clearTimeout(entry.drainTimer)
    if (pools.get(entry.key) === entry) pools.delete(entry.key)
    draining.delete(entry)
    entry.pool.then((pool) => pool.close()).catch((error: unknown) => deps.logger.warn('functions: closing a pool failed', { error: String(error) }))
  }

  function reapIdle(): void {
    const now = deps.clock.now().getTime()
    for (const entry of [...pools.values()]) if (entry.running === 0 && now - entry.lastUsed >= idleMs) drain(entry)
  }

  /** The pool an invocation runs in, counted as in flight until `done` is called. */
  function poolFor(meta: HostMeta, timeoutMs: number): { entry: PoolEntry; done: () => void } {
    const key = `${meta.releaseId}:${meta.namespace?.id ?? 'none'}`
    let entry = pools.get(key)
    let late = false
    if (entry === undefined) {
      const pool = materialiseRelease(deps.db, { bundlesDir: deps.bundlesDir, releaseId: meta.releaseId }).then((bundleDir) =>
        createFunctionPool<HostMeta>({
          bundleDir,
          sdkEntry: deps.sdkEntry ?? DEFAULT_SDK_ENTRY,
          size: deps.poolSize ?? 2,
          ...(deps.maxHeapMb === undefined ? {} : { maxHeapMb: deps.maxHeapMb }),
          ...(deps.memoryBudgetMb === undefined ? {} : { memoryBudgetMb: deps.memoryBudgetMb }),
          denoDir: join(deps.bundlesDir, '.deno'),
          ...(deps.allowNet === undefined ? {} : { allowNet: deps.allowNet }),
          // Every pool line names its app, namespace and release.
          logger: redactingLogger(withFields(deps.logger, { appId: meta.appId, devName: meta.devName || null, releaseId: meta.releaseId }),
            (fields) => secrets.handedOut({ appId: meta.appId, devName: meta.devName }).value(fields)),
          onContextCall: answer,
          ...(spares === undefined ? {} : { spares }),
        }))
      const created: PoolEntry = {
        key, appId: meta.appId, devName: meta.devName, releaseId: meta.releaseId, pool,
        running: 0, deadline: 0, lastUsed: deps.clock.now().getTime(), draining: false, drainTimer: undefined,
      }
      pool.catch(() => {
        if (pools.get(key) === created) pools.delete(key)
      })
      entry = created
      // A late call for a release already replaced gets a pool that serves it and closes after.
      late = superseded(meta)
      if (!late) {
        pools.set(key, created)
        if (pools.size > maxPools) {
          let oldest: PoolEntry | undefined
          for (const other of pools.values()) if (other !== created && (oldest === undefined || other.lastUsed < oldest.lastUsed)) oldest = other
          if (oldest !== undefined) drain(oldest)
        }
      }
    }
    const used = entry
    used.running += 1
    used.deadline = Math.max(used.deadline, performance.now() + timeoutMs)
    used.lastUsed = deps.clock.now().getTime()
    if (late) drain(used)
    let finished = false
    return {
      entry: used,
      done: () => {
        if (finished) return
        finished = true
        used.running -= 1
        used.lastUsed = deps.clock.now().getTime()
        if (used.draining && used.running === 0) closeEntry(used)
      },
    }
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
        if (!isLogLevel(call.method)) throw new ServiceError('BAD_REQUEST', `ctx.log has no method ${call.method}`)
        const state = logState(meta)
        if (state.ended || call.signal.aborted) throw new ServiceError('BAD_REQUEST', 'ctx.log was called after the invocation ended')
        if (state.taken >= MAX_LOG_LINES_PER_INVOCATION) {
          state.dropped += 1
          return null
        }
        state.taken += 1
        state.pending.push({ level: call.method, args: call.args })
        return await flushLogs(meta, state)
      }
      case 'secrets': {
        const overlay = overlays.get(meta)
        const name = call.args[0]
        if (overlay !== undefined && (call.method === 'get' || call.method === 'require') && typeof name === 'string' && Object.hasOwn(overlay, name)) {
          const value = overlay[name]!
          if (value !== null || call.method === 'get') return value
          throw new ServiceError('SECRET_NOT_SET', `the connection has no value for its optional credential ${name}`, { details: { secret: name } })
        }
        return await secrets.answer({ scope: { appId: meta.appId, devName: meta.devName }, releaseId: meta.releaseId, method: call.method, args: call.args })
      }
      case 'integrations':
        if (deps.integrations === undefined) throw notImplemented('ctx.integrations')
        return await deps.integrations.answer({
          appId: meta.appId, releaseId: meta.releaseId, devName: meta.devName, userId: meta.user?.id ?? null, requestId: meta.requestId,
          method: call.method, args: call.args,
        })
      case 'integration':
        if (call.method !== 'emit') throw new ServiceError('BAD_REQUEST', `ctx.integration has no method ${call.method.slice(0, 64)}`)
        if (deps.events === undefined) throw notImplemented('ctx.integration.emit')
        return await deps.events.emit({
          appId: meta.appId, releaseId: meta.releaseId, devName: meta.devName, integration: meta.integration ?? null,
          mayEmit: emitters.has(meta), args: call.args,
        })
      case 'data': {
        checkDataAuthorization(meta.identity, deps.clock.now())
        if (meta.namespace === null) throw new ServiceError('NOT_FOUND', 'this app has no database yet')
        if (call.method === 'search') {
          return await runSearch({
            db: deps.db, ...(deps.appSql ? { sql: deps.appSql } : {}),
            namespace: meta.namespace, releaseId: meta.releaseId, identity: meta.identity, args: call.args,
          })
        }
        const schema = await deps.schemas.get(deps.db, { schemaName: meta.namespace.schemaName, releaseId: meta.releaseId })
        return await runDataCall({
          db: deps.db, ...(deps.appSql ? { sql: deps.appSql } : {}),
          namespace: meta.namespace, schema, identity: meta.identity, method: call.method, args: call.args,
        })
      }
      case 'files':
        if (deps.files === undefined) throw notImplemented('ctx.files')
        return await deps.files.answer({ caller: fileCallerOf(meta), invocation: meta, method: call.method, args: call.args })
      case 'jobs':
        if (deps.jobs === undefined) throw notImplemented('ctx.jobs')
        // A delegated read grant (SDK 2.4.0) is given by a person or the app, never by an anonymous caller (files/grants.ts).
        if (call.method === 'enqueue' && hasFileGrant(call.args)) {
          readGrantOption((call.args[2] as { files: unknown }).files)
          await checkGrantSdk(deps.db, meta.releaseId)
          if (meta.identity.role !== 'system' && meta.user === null) {
            throw new ServiceError('AUTH_REQUIRED', 'Granting file reads to a job needs a signed-in user or a system Function (spec 5.5)')
          }
        }
        return await deps.jobs.answer({
          appId: meta.appId, namespace: meta.namespace, devName: meta.devName, userId: meta.user?.id ?? null, method: call.method, args: call.args,
        })
      case 'ai':
        if (deps.ai === undefined) throw notImplemented('ctx.ai')
        return await deps.ai.answer({
          appId: meta.appId, devName: meta.devName, identity: meta.identity, user: meta.user, job: meta.job,
          method: call.method, args: call.args, signal: call.signal, invocation: meta, releaseId: meta.releaseId,
        })
      case 'email':
        if (deps.email === undefined) throw notImplemented('ctx.email')
        return await deps.email.answer({
          appId: meta.appId, releaseId: meta.releaseId, namespaceId: meta.namespace?.id ?? null, devName: meta.devName, method: call.method, args: call.args,
        })
      case 'notifications':
        if (deps.notifications === undefined) throw notImplemented('ctx.notifications')
        return await deps.notifications.answer({ appId: meta.appId, namespaceId: meta.namespace?.id ?? null, method: call.method, args: call.args })
      default:
        throw notImplemented(`ctx.${call.member}`)
    }
  }

  function logState(meta: HostMeta): LogState {
    let state = logs.get(meta)
    if (state === undefined) logs.set(meta, (state = { pending: [], flushing: null, taken: 0, dropped: 0, ended: false }))
    return state
  }

  /** Writes the invocation's waiting lines, a batch at a time; resolves once the batch holding the last line is stored. */
  function flushLogs(meta: HostMeta, state: LogState): Promise<unknown> {
    if (state.flushing !== null) return state.flushing
    const source = { appId: meta.appId, devName: meta.devName, releaseId: meta.releaseId, functionName: meta.functionName, requestId: meta.requestId }
    const flushing = (async () => {
      while (state.pending.length > 0) {
        const batch = state.pending.splice(0, LOG_BATCH_LINES)
        const redactor = await secrets.redactorFor({ appId: meta.appId, devName: meta.devName })
        await writeFunctionLogs(deps.db, { clock: deps.clock, source, lines: batch, redactor })
      }
      return null
    })()
    state.flushing = flushing
    const clear = () => {
      if (state.flushing === flushing) state.flushing = null
    }
    flushing.then(clear, (error: unknown) => {
      clear()
      deps.logger.warn('functions: storing log lines failed', { error: String(error) })
    })
    return flushing
  }

  /** After an invocation: no more lines, one line for those over the limit, and its lines stored if asked. */
  async function endLogs(meta: HostMeta, wait: boolean): Promise<void> {
    const state = logs.get(meta)
    if (state === undefined) return
    state.ended = true
    if (state.dropped > 0) {
      state.pending.push({
        level: 'warn',
        args: [`${state.dropped} more log line${state.dropped === 1 ? ' was' : 's were'} dropped: an invocation stores at most ${MAX_LOG_LINES_PER_INVOCATION}`, { dropped: state.dropped }],
      })
      state.dropped = 0
      void flushLogs(meta, state).catch(() => {})
    }
    if (wait) await state.flushing?.catch(() => {})
  }

  async function resolveIn(app: App, target: { devName: string; releaseId: string; name: string }): Promise<ResolvedFunction | null> {
    const { devName, name } = target
    const chosen = await current({ appId: app.id, devName, releaseId: target.releaseId })
    const declaration = chosen.info.functions.get(name)
    if (declaration === undefined) return null
    return devName === '' ? { app, releaseId: chosen.releaseId, declaration } : { app, releaseId: chosen.releaseId, declaration, devName }
  }

  return {
    async resolve(app, name) {
      if (app.activeReleaseId === null) return null
      return await resolveIn(app, { devName: '', releaseId: app.activeReleaseId, name })
    },

    async resolveDev(app, devName, name) {
      const releaseId = await activeReleaseOf(deps.db, app.id, devName)
      if (releaseId === null) return null
      return await resolveIn(app, { devName, releaseId, name })
    },

    async route(app, request) {
      if (app.activeReleaseId === null) return { matched: false, methods: [] }
      const chosen = await current({ appId: app.id, devName: '', releaseId: app.activeReleaseId })
      const byName = chosen.info.functions
      let table = routeTables.get(byName)
      if (table === undefined) routeTables.set(byName, (table = compileRoutes(byName.values())))
      const match = table.match(request.method, request.pathname)
      if (!match.matched) return match
      return { ...match, fn: { app, releaseId: chosen.releaseId, declaration: match.declaration } }
    },

    reapIdle,

    forgetNamespace(appId, devName) {
      newest.delete(`${appId}:${devName}`)
      for (const entry of [...pools.values()]) {
        if (entry.appId !== appId || entry.devName !== devName) continue
        namespaces.delete(entry.releaseId)
        drain(entry)
      }
    },

    stats() {
      return { live: pools.size, draining: draining.size }
    },

    async run(fn, options) {
      if (closed) return { ok: false, error: { kind: 'crashed', message: 'the Functions host is closed' } }
      const system = fn.declaration.access === 'system'
      const user = system ? null : options.user
      const aud = fn.app.id
      const expiry = options.dataAuthorizationMs === undefined ? {} : { expiresAt: deps.clock.now().getTime() + options.dataAuthorizationMs }
      const identity: DataIdentity = system
        ? { role: 'system', claims: { role: 'system', aud }, canWrite: true, ...expiry }
        : {
          role: 'user',
          claims: user ? { sub: user.id, role: 'authenticated', aud, ...(user.email ? { email: user.email } : {}) } : { role: 'anon', aud },
          canWrite: user !== null,
          ...expiry,
        }
      const devName = fn.devName ?? ''
      const meta: HostMeta = {
        requestId: options.requestId ?? randomUUID(),
        environment: devName === '' ? 'production' : 'development',
        user: user ? { id: user.id } : null,
        job: options.job ?? null,
        http: options.http ?? null,
        integration: options.integration?.context ?? null,
        appId: fn.app.id,
        releaseId: fn.releaseId,
        functionName: fn.declaration.name,
        namespace: await namespaceOf(fn),
        devName,
        identity,
      }
      if (options.integration !== undefined) {
        overlays.set(meta, options.integration.secrets)
        // Absent: as the trigger allows (operation, sync, webhook; never OAuth exchange or refresh).
        if (options.integration.mayEmit ?? options.integration.context.trigger !== 'oauth') emitters.add(meta)
        const handed = [...Object.values(options.integration.secrets), ...(options.integration.redact ?? [])]
        secrets.rememberHanded({ appId: meta.appId, devName }, handed.filter((value): value is string => value !== null))
      }
      const timeoutMs = options.timeoutMs ?? fn.declaration.timeoutSeconds * 1000
      const { entry, done } = poolFor(meta, timeoutMs)
      let result: InvokeResult
      try {
        const pool = await entry.pool
        result = await pool.invoke({
          entrypoint: fn.declaration.entrypoint,
          input: options.input,
          meta,
          timeoutMs,
          ...(options.bytes === true ? { bytes: true } : {}),
        })
      } catch (error) {
        done()
        throw error
      }
      if (result.ok && 'bytes' in result) {
        // The invocation runs until its stream ends: the pool stays until then, and so do its logs.
        const body = untilEnded(result.bytes.body, () => {
          done()
          void endLogs(meta, false)
        })
        return { ...result, bytes: { ...result.bytes, body } }
      }
      done()
      await endLogs(meta, options.awaitLogs === true)
      if (result.ok) return result
      const redactor = await secrets.redactorFor({ appId: meta.appId, devName })
      return { ok: false, error: redactFailure(result.error, redactor) }
    },

    async close() {
      closed = true
      clearInterval(reaper)
      const entries = [...pools.values(), ...draining]
      pools.clear()
      draining.clear()
      for (const entry of entries) clearTimeout(entry.drainTimer)
      await Promise.all([
        ...entries.map((entry) => entry.pool.then((pool) => pool.close(), () => {})),
        secrets.close(),
        spares?.close(),
      ])
    },
  }
}

/** Whether `jobs.enqueue` arguments carry a `files` option. */
function hasFileGrant(args: readonly unknown[]): boolean {
  const options = args[2]
  return typeof options === 'object' && options !== null && (options as Record<string, unknown>).files !== undefined
}

/** `body`, calling `ended` once when it is read to its end, errors or is cancelled. */
function untilEnded(body: ReadableStream<Uint8Array>, ended: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await reader.read()
        if (next.done) {
          controller.close()
          ended()
        } else {
          controller.enqueue(next.value)
        }
      } catch (error) {
        ended()
        throw error
      }
    },
    async cancel(reason) {
      try {
        await reader.cancel(reason)
      } finally {
        ended()
      }
    },
  }, { highWaterMark: 0 })
}

/** The pool's logger with the namespace's handed-out secret values redacted from every field. */
function redactingLogger(logger: Logger, redact: (fields: Record<string, unknown>) => Record<string, unknown>): Logger {
  const at = (level: keyof Logger) => (message: string, fields?: Record<string, unknown>) =>
    logger[level](message, fields === undefined ? undefined : redact(fields))
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}
