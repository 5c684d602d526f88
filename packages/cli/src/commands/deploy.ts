/**
 * `service deploy <dir> [--dev <name>]`: uploads the bundle; creates the app first when it
 * is new. With --dev the release goes to that development namespace (its own schema,
 * roles, secrets and logs; created on its first deploy) and production is untouched.
 * Progress (the app created, the upload's size, each migration applied, the time taken)
 * goes to stderr; the outcome to stdout. `dev.ts` deploys through `deployBundle` too.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateManifest } from '@service/platform/manifest'
import { collectBundleDir } from '@service/platform/bundle-dir'
import { ApiError, type Client } from '../client.ts'
import { CliError, usageError } from '../errors.ts'
import { usageOf } from '../help.ts'
import type { Io } from '../io.ts'
import { printResult } from '../output.ts'
import { manifestMissing, problemView, type ProblemView } from './validate.ts'

interface AppBody { app: { id: string; slug: string; url: string } }

interface DeployBody {
  release: { version: number }
  migrationsApplied: string[]
  warnings: { code: string; message: string; line: number; column: number }[]
}

/** What a deploy did, as `--json` prints it. */
export interface DeployResult {
  app: { id: string; slug: string; url: string }
  created: boolean
  dev: string | null
  release: { version: number }
  upload: { files: number; bytes: number }
  migrationsApplied: string[]
  warnings: ProblemView[]
}

/** `1.5 KiB`, `2.3 MiB`: sizes for people. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

/**
 * Deploys `dir` (production, or the development namespace `dev`), printing progress on
 * `io.err`; throws CliError or ApiError when it fails, and then nothing was deployed.
 *
 * @example
 *   const result = await deployBundle(io, client, { dir: './my-app', dev: 'alice' })
 */
export async function deployBundle(io: Io, client: Client, options: { dir: string; dev: string | undefined }): Promise<DeployResult> {
  const { dir, dev } = options
  const manifestPath = join(dir, 'service.yaml')
  if (!existsSync(manifestPath)) throw manifestMissing(dir)
  const { manifest, errors } = validateManifest(readFileSync(manifestPath, 'utf8'))
  if (!manifest) {
    throw new CliError('MANIFEST_INVALID', `${manifestPath} has ${errors.length} problem(s); nothing was deployed`, {
      details: { errors: errors.map((p) => ({ line: p.line, column: p.column, code: p.code, message: p.message })) },
      next: `service validate ${dir}`,
    })
  }
  let app: AppBody['app']
  let created = false
  try {
    app = (await client.call<AppBody>('GET', `/v1/apps/${manifest.app.id}`)).app
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'APP_NOT_FOUND') throw error
    app = (await client.call<AppBody>('POST', '/v1/apps', {
      slug: manifest.app.id,
      name: manifest.app.name,
      visibility: manifest.app.visibility,
    })).app
    created = true
    io.err(`created app ${app.slug}`)
  }
  const bundle = collectBundleDir(dir)
  const bytes = bundle.files.reduce((sum, file) => sum + Buffer.byteLength(file.content, 'base64'), 0)
  const where = dev ? `development namespace ${dev}` : 'production'
  io.err(`uploading ${bundle.files.length} files (${formatBytes(bytes)}) to ${app.slug} (${where})...`)
  const started = Date.now()
  const result = await client.call<DeployBody>(
    'POST', `/v1/apps/${app.id}${dev ? `/dev/${encodeURIComponent(dev)}` : ''}/deployments`, bundle)
  for (const m of result.migrationsApplied) io.err(`applied migration ${m}`)
  if (result.migrationsApplied.length === 0) io.err('no new migrations')
  const warnings = result.warnings.map((w) => problemView(manifestPath, w))
  for (const w of warnings) io.err(`${w.file}:${w.line}:${w.column} ${w.code} warning: ${w.message}`)
  io.err(`release ${result.release.version} is live (${((Date.now() - started) / 1000).toFixed(1)} s)`)
  return {
    app: { id: app.id, slug: app.slug, url: app.url },
    created,
    dev: dev ?? null,
    release: { version: result.release.version },
    upload: { files: bundle.files.length, bytes },
    migrationsApplied: result.migrationsApplied,
    warnings,
  }
}

export async function deployCommand(io: Io, client: Client, dir: string | undefined, options: { dev?: string | undefined } = {}): Promise<number> {
  if (!dir) throw usageError('service deploy: name the app directory', usageOf('deploy'))
  const result = await deployBundle(io, client, { dir, dev: options.dev })
  printResult(io, result, () => {
    if (options.dev) {
      io.out(`deployed ${result.app.slug} release ${result.release.version} to development namespace ${options.dev};`
        + ` run its Functions with: service functions invoke <name> --dev ${options.dev}`)
    } else {
      io.out(`deployed ${result.app.slug} release ${result.release.version}: ${result.app.url}`)
    }
  })
  return 0
}
