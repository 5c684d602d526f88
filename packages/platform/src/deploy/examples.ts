/**
 * First-start convenience: deploys every app under `examples/` that is not deployed yet,
 * owned by the local development administrator (admin@localhost, a platform administrator
 * in the "Local development" company). Later starts leave existing apps alone, so nothing a
 * user changed is overwritten.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { createApp, findAppBySlug } from '../apps/apps.ts'
import { createUser, ensureOrganisation, findUserByEmail, type User } from '../identity/index.ts'
import { validateManifest } from '../manifest/index.ts'
import { collectBundleDir } from './bundle-dir.ts'
import { deployBundle } from './deploy.ts'

export const EXAMPLES_OWNER_EMAIL = 'admin@localhost'

async function examplesOwner(db: Db, clock: Clock): Promise<User> {
  return db.transaction(async (tx) => {
    const existing = await findUserByEmail(tx, EXAMPLES_OWNER_EMAIL)
    if (existing) return existing
    const organisation = await ensureOrganisation(tx, 'Local development')
    return createUser(tx, {
      email: EXAMPLES_OWNER_EMAIL,
      organisationId: organisation.id,
      organisationRole: 'admin',
      isPlatformAdmin: true,
      displayName: 'Local administrator',
      confirmedAt: clock.now(),
    })
  })
}

export interface ExampleStatus {
  slug: string
  visibility: 'public' | 'private'
  deployedNow: boolean
}

export async function deployExamples(deps: { db: Db; clock: Clock; logger: Logger; dir: string }): Promise<ExampleStatus[]> {
  if (!existsSync(deps.dir)) return []
  const statuses: ExampleStatus[] = []
  for (const name of readdirSync(deps.dir).sort()) {
    const dir = join(deps.dir, name)
    const manifestPath = join(dir, 'service.yaml')
    if (!existsSync(manifestPath)) continue
    const { manifest, errors } = validateManifest(readFileSync(manifestPath, 'utf8'))
    if (!manifest) {
      deps.logger.error('example app has an invalid manifest', { example: name, errors })
      continue
    }
    const existing = await findAppBySlug(deps.db, manifest.app.id)
    if (existing) {
      statuses.push({ slug: existing.slug, visibility: existing.visibility, deployedNow: false })
      continue
    }
    const owner = await examplesOwner(deps.db, deps.clock)
    const app = await createApp(deps.db, owner, {
      slug: manifest.app.id,
      name: manifest.app.name,
      visibility: manifest.app.visibility,
    })
    try {
      await deployBundle(deps, { app, user: owner, body: collectBundleDir(dir) })
      statuses.push({ slug: app.slug, visibility: manifest.app.visibility, deployedNow: true })
    } catch (error) {
      deps.logger.error('example app failed to deploy', { example: name, error: (error as Error).message })
    }
  }
  return statuses
}
