/**
 * `service deploy <dir> [--dev <name>]`: uploads the bundle; creates the app first when it
 * is new. With --dev the release goes to that development namespace (its own schema,
 * roles, secrets and logs; created on its first deploy) and production is untouched.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { validateManifest } from '@service/platform/manifest'
import { collectBundleDir } from '@service/platform/bundle-dir'
import { ApiError, type Client } from '../client.ts'
import type { Io } from '../io.ts'
import { formatProblem } from './validate.ts'

interface AppBody { app: { id: string; slug: string; url: string } }

export async function deployCommand(io: Io, client: Client, dir: string | undefined, options: { dev?: string | undefined } = {}): Promise<number> {
  if (!dir) {
    io.err('usage: service deploy <dir> [--dev <name>]')
    return 2
  }
  const manifestPath = join(dir, 'service.yaml')
  if (!existsSync(manifestPath)) {
    io.err(`${manifestPath}:1:1 BUNDLE_MANIFEST_MISSING the directory has no service.yaml`)
    return 1
  }
  const { manifest, errors } = validateManifest(readFileSync(manifestPath, 'utf8'))
  if (!manifest) {
    for (const p of errors) io.err(formatProblem(manifestPath, p))
    return 1
  }
  let app: AppBody['app']
  try {
    app = (await client.call<AppBody>('GET', `/v1/apps/${manifest.app.id}`)).app
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'APP_NOT_FOUND') throw error
    app = (await client.call<AppBody>('POST', '/v1/apps', {
      slug: manifest.app.id,
      name: manifest.app.name,
      visibility: manifest.app.visibility,
    })).app
    io.out(`created app ${app.slug}`)
  }
  const result = await client.call<{ release: { version: number }; migrationsApplied: string[]; warnings: { code: string; message: string; line: number; column: number }[] }>(
    'POST', `/v1/apps/${app.id}${options.dev ? `/dev/${encodeURIComponent(options.dev)}` : ''}/deployments`, collectBundleDir(dir))
  for (const w of result.warnings) io.err(`${manifestPath}:${w.line}:${w.column} ${w.code} warning: ${w.message}`)
  for (const m of result.migrationsApplied) io.out(`applied migration ${m}`)
  if (options.dev) io.out(`deployed ${app.slug} release ${result.release.version} to development namespace ${options.dev}; run its Functions with: service functions invoke <name> --dev ${options.dev}`)
  else io.out(`deployed ${app.slug} release ${result.release.version}: ${app.url}`)
  return 0
}
