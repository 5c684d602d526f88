/**
 * Deploys: validate a bundle, then in ONE transaction create the app's namespace when it is
 * new, run the bundle's new SQL migrations in order as the app's owner role, store the
 * release and its files, and make it the active release. Any failure rolls all of it back:
 * the previous release stays active and serving, and no half-applied migration remains.
 */
import type { Db, Queryable } from '../db/db.ts'
import { lockPlatform } from '../db/platform-lock.ts'
import { databaseError, lineAndColumn } from '../db/errors.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import { APP_CHANGED, type App } from '../apps/apps.ts'
import { announceChange, dropLocal } from '../db/notified-cache.ts'
import type { User } from '../identity/index.ts'
import { PLATFORM_SDK_VERSION, validateManifest } from '../manifest/index.ts'
import { missingSecretWarnings, type SecretStore } from '../secrets/index.ts'
import { deadLetterRemovedQueues } from '../jobs/index.ts'
import { publishContract, publishedIntegrationsFor } from '../integrations/index.ts'
import { readBundle, type Bundle, type Migration } from './bundle.ts'
import { createNamespace, findNamespace, runAsRole, type Namespace } from '../namespaces/namespaces.ts'
import { MAX_DEV_NAMESPACES } from '../namespaces/dev-names.ts'
import { checkSearchDeclarations } from '../search/declarations.ts'
import { checkAiDeclaration } from '../ai/index.ts'
import type { AiSettings } from '../config.ts'

export interface Release {
  id: string
  appId: string
  version: number
  status: 'active' | 'superseded'
  sdkVersion: string
  bundleSha256: string
  bundleSize: number
  createdAt: Date
  activatedAt: Date
}

export interface DeployResult {
  release: Release
  migrationsApplied: string[]
  warnings: unknown[]
}

interface ReleaseRow extends Record<string, unknown> {
  id: string
  app_id: string
  version: number
  status: 'active' | 'superseded'
  sdk_version: string
  bundle_sha256: string
  bundle_size: number
  created_at: Date
  activated_at: Date
}

const RELEASE_COLUMNS = 'id, app_id, version, status, sdk_version, bundle_sha256, bundle_size, created_at, activated_at'

function releaseFromRow(row: ReleaseRow): Release {
  return {
    id: row.id,
    appId: row.app_id,
    version: row.version,
    status: row.status,
    sdkVersion: row.sdk_version,
    bundleSha256: row.bundle_sha256,
    bundleSize: row.bundle_size,
    createdAt: row.created_at,
    activatedAt: row.activated_at,
  }
}

export function releaseView(release: Release) {
  return {
    id: release.id,
    version: release.version,
    status: release.status,
    sdkVersion: release.sdkVersion,
    bundleSha256: release.bundleSha256,
    bundleSize: release.bundleSize,
    createdAt: release.createdAt.toISOString(),
    activatedAt: release.activatedAt.toISOString(),
  }
}

/** Checks the bundle and its manifest without touching anything. */
export async function checkBundle(db: Queryable, app: App, body: unknown) {
  const bundle = readBundle(body)
  const result = validateManifest(bundle.manifestText, {
    files: new Set(bundle.files.map((f) => f.path)),
    publishedIntegrations: await publishedIntegrationsFor(db, app),
    platformSdkVersion: PLATFORM_SDK_VERSION,
  })
  if (!result.manifest || result.errors.length > 0) {
    throw new ServiceError('MANIFEST_INVALID',
      `service.yaml has ${result.errors.length} problem${result.errors.length === 1 ? '' : 's'}`, {
        details: { errors: result.errors, warnings: result.warnings },
      })
  }
  if (result.manifest.app.id !== app.slug) {
    throw new ServiceError('MANIFEST_APP_MISMATCH',
      `service.yaml declares app.id "${result.manifest.app.id}" but this deploy targets "${app.slug}"`)
  }
  return { bundle, manifest: result.manifest, warnings: result.warnings }
}

async function applyMigrations(tx: Queryable, namespace: Namespace, migrations: Migration[], releaseId: string) {
  const applied = new Map(
    (await tx.query<{ name: string; sha256: string }>(
      'select name, sha256 from platform.app_migrations where namespace_id = $1', [namespace.id],
    )).map((row) => [row.name, row.sha256]),
  )
  const ran: string[] = []
  for (const migration of migrations) {
    const key = `${String(migration.version).padStart(4, '0')}_${migration.name}`
    const previous = applied.get(key)
    if (previous !== undefined) {
      if (previous !== migration.sha256) {
        throw new ServiceError('MIGRATION_MODIFIED',
          `migration ${key}.sql was already applied and has changed since; add a new migration instead`,
          { details: { migration: `${key}.sql` } })
      }
      continue
    }
    try {
      await runAsRole(tx, { namespace, role: 'owner' }, migration.sql)
    } catch (error) {
      const info = databaseError(error)
      if (!info) throw error
      const offset = info.internalPosition ?? info.position
      throw new ServiceError('MIGRATION_FAILED', `migration ${key}.sql failed: ${info.message}`, {
        cause: error,
        details: {
          migration: `database/migrations/${key}.sql`,
          sqlState: info.sqlState,
          message: info.message,
          ...(info.detail ? { detail: info.detail } : {}),
          ...(info.hint ? { hint: info.hint } : {}),
          ...(offset && info.internalPosition ? lineAndColumn(migration.sql, offset) : {}),
        },
      })
    }
    await tx.query(
      'insert into platform.app_migrations (namespace_id, name, sha256, release_id) values ($1, $2, $3, $4)',
      [namespace.id, key, migration.sha256, releaseId],
    )
    ran.push(`${key}.sql`)
  }
  return ran
}

export interface DeployDeps {
  db: Db
  clock: Clock
  /** Required secrets without a value in the target namespace become deploy warnings. */
  secrets?: SecretStore
  /** Gets one line per deploy (succeeded or failed) and per app migration applied. */
  logger?: Logger
  /** The platform's AI models: a manifest's `ai` section naming one it does not offer is refused. */
  ai?: AiSettings
}

/** A bundle's manifest warnings plus the required secrets the target namespace has no value for. */
export async function deployWarnings(
  deps: DeployDeps,
  checked: { app: App; devName: string; manifest: Awaited<ReturnType<typeof checkBundle>>['manifest']; manifestText: string; warnings: unknown[] },
): Promise<unknown[]> {
  if (deps.secrets === undefined) return checked.warnings
  const missing = await missingSecretWarnings(deps.secrets, {
    scope: { appId: checked.app.id, devName: checked.devName },
    manifest: checked.manifest,
    manifestText: checked.manifestText,
  })
  return [...checked.warnings, ...missing]
}

/**
 * A dry run: the bundle checked as a deploy to the namespace `devName` ('' is production)
 * would check it, with every warning, touching nothing. The owner API's `?dryRun=true` and
 * the MCP tool `validate_app` answer this.
 *
 * @example
 * const report = await validateDeploy(deps, { app, devName: '', body }) // { valid: true, files: 3, sdkVersion: '2.6.0', warnings: [] }
 */
export async function validateDeploy(deps: DeployDeps, input: { app: App; devName: string; body: unknown }) {
  const { bundle, manifest, warnings } = await checkBundle(deps.db, input.app, input.body)
  if (deps.ai !== undefined) checkAiDeclaration(deps.ai, manifest.ai)
  const all = await deployWarnings(deps, { app: input.app, devName: input.devName, manifest, manifestText: bundle.manifestText, warnings })
  return { valid: true as const, files: bundle.files.length, sdkVersion: manifest.runtime.sdk.version, warnings: all }
}

/**
 * Validates and activates a bundle as the new release of the app's production namespace,
 * or of the development namespace `devName` (created with its own schema and roles on its
 * first deploy; numbered and activated on its own; the app's production release and
 * settings stay as they are). Logs "deploy succeeded" (with one "app migration applied"
 * line per migration) or "deploy failed" with the app, release and duration.
 */
export async function deployBundle(
  deps: DeployDeps,
  input: { app: App; user: User | null; body: unknown; devName?: string },
): Promise<DeployResult> {
  const started = performance.now()
  const where = { app: input.app.slug, ...(input.devName ? { devName: input.devName } : {}) }
  try {
    const result = await activateBundle(deps, input)
    const release = result.release.version
    for (const migration of result.migrationsApplied) deps.logger?.info('app migration applied', { ...where, release, migration })
    deps.logger?.info('deploy succeeded', { ...where, release, migrations: result.migrationsApplied.length, durationMs: elapsedMs(started) })
    return result
  } catch (error) {
    logDeployFailure(deps.logger, error, { ...where, durationMs: elapsedMs(started) })
    throw error
  }
}

/** A refused deploy (bad bundle, failed migration) is a warning; anything else an error. */
function logDeployFailure(logger: Logger | undefined, error: unknown, fields: Record<string, unknown>): void {
  if (error instanceof ServiceError) {
    const migration = (error.details as { migration?: unknown } | undefined)?.migration
    logger?.warn('deploy failed', { ...fields, code: error.code, error: error.message, ...(migration === undefined ? {} : { migration }) })
    return
  }
  logger?.error('deploy failed', { ...fields, code: 'INTERNAL', error: error instanceof Error ? error.message : String(error) })
}

function elapsedMs(started: number): number {
  return Math.round(performance.now() - started)
}

/** The deploy itself: checks, then one transaction (deployBundle adds the log lines). */
async function activateBundle(
  deps: DeployDeps,
  input: { app: App; user: User | null; body: unknown; devName?: string },
): Promise<DeployResult> {
  const devName = input.devName ?? ''
  const environment = devName === '' ? 'production' : 'development'
  const checked = await checkBundle(deps.db, input.app, input.body)
  const { bundle, manifest } = checked
  if (deps.ai !== undefined) checkAiDeclaration(deps.ai, manifest.ai)
  const warnings = await deployWarnings(deps, { app: input.app, devName, manifest, manifestText: bundle.manifestText, warnings: checked.warnings })
  const result = await deps.db.transaction(async (tx) => {
    // One deploy per app at a time; others wait here.
    await lockPlatform(tx, `deploy:${input.app.id}`)
    let namespace = await findNamespace(tx, input.app.id, environment, devName)
    if (namespace === null) {
      if (devName !== '') await checkDevNamespaceLimit(tx, input.app.id, devName)
      namespace = await createNamespace(tx, { appId: input.app.id, slug: input.app.slug, environment, devName })
    }
    const now = deps.clock.now()
    await tx.query(`update platform.releases set status = 'superseded' where app_id = $1 and dev_name = $2 and status = 'active'`, [input.app.id, devName])
    const [row] = await tx.query<ReleaseRow>(
      `insert into platform.releases
         (app_id, dev_name, version, status, manifest, manifest_text, sdk_version, bundle_sha256, bundle_size, created_by, created_at, activated_at)
       values ($1, $9, (select coalesce(max(version), 0) + 1 from platform.releases where app_id = $1 and dev_name = $9), 'active',
               $2::jsonb, $3, $4, $5, $6, $7, $8, $8)
       returning ${RELEASE_COLUMNS}`,
      [input.app.id, JSON.stringify(manifest), bundle.manifestText, manifest.runtime.sdk.version,
        bundle.sha256, bundle.size, input.user?.id ?? null, now, devName],
    )
    const release = releaseFromRow(row!)
    const migrationsApplied = await applyMigrations(tx, namespace, bundle.migrations, release.id)
    // Declared searches name tables and columns of the migrated schema (issue 16).
    await checkSearchDeclarations(tx, namespace.schemaName, manifest.data.search)
    await storeFiles(tx, release.id, bundle)
    // Pending jobs of queues (and cron runs of cron entries) this release no longer declares end now (spec 3.1).
    await deadLetterRemovedQueues(tx, {
      namespaceId: namespace.id, queues: manifest.queues.map((q) => q.name), crons: manifest.cron.map((c) => c.name), now,
    })
    if (devName !== '') return { release, migrationsApplied }
    await tx.query(
      `update platform.apps set active_release_id = $2, updated_at = $3,
              visibility = coalesce($4, visibility), name = coalesce($5, name)
        where id = $1`,
      [input.app.id, release.id, now, manifest.app.visibility ?? null, manifest.app.name ?? null],
    )
    // The contract this release provides replaces what the app published (spec 2.6).
    await publishContract(tx, { app: input.app, releaseId: release.id, contract: manifest.provides?.integration ?? null, now })
    await announceChange(tx, APP_CHANGED, `app:${input.app.id}`)
    return { release, migrationsApplied }
  })
  if (devName === '') dropLocal(deps.db, APP_CHANGED)
  return { ...result, warnings }
}

/** Each development namespace is a schema, three cluster-wide roles and a Deno pool: an app has at most MAX_DEV_NAMESPACES. */
async function checkDevNamespaceLimit(tx: Queryable, appId: string, devName: string): Promise<void> {
  const rows = await tx.query<{ count: number }>(
    `select count(*)::int as count from platform.namespaces where app_id = $1 and environment = 'development'`, [appId])
  if ((rows[0]?.count ?? 0) >= MAX_DEV_NAMESPACES) {
    throw new ServiceError('DEV_NAMESPACE_LIMIT_REACHED',
      `an app has at most ${MAX_DEV_NAMESPACES} development namespaces; delete one before deploying to ${devName}: service dev delete <name>`,
      { details: { limit: MAX_DEV_NAMESPACES } })
  }
}

async function storeFiles(tx: Queryable, releaseId: string, bundle: Bundle) {
  for (const file of bundle.files) {
    await tx.query(
      'insert into platform.release_files (release_id, path, content, size, sha256) values ($1, $2, $3, $4, $5)',
      [releaseId, file.path, file.content, file.content.byteLength, file.sha256],
    )
  }
}

/** An app namespace's releases (`devName` '' is production), newest first. */
export async function listReleases(db: Queryable, appId: string, options: { devName?: string; limit?: number } = {}): Promise<Release[]> {
  const rows = await db.query<ReleaseRow>(
    `select ${RELEASE_COLUMNS} from platform.releases where app_id = $1 and dev_name = $3 order by version desc limit $2`,
    [appId, Math.min(Math.max(options.limit ?? 100, 1), 500), options.devName ?? ''],
  )
  return rows.map(releaseFromRow)
}
