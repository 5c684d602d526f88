/**
 * First-start convenience: deploys every app under `examples/` that is not deployed yet,
 * owned by the local development administrator (admin@localhost, a platform administrator
 * in the "Local development" company). Later starts leave existing apps alone, so nothing a
 * user changed is overwritten.
 *
 * Two first-start conveniences make the examples work out of the box under any base URL: an
 * example's manifest names its own origins as under the default base URL
 * (`http://<slug>.localhost:8787`), rewritten here to the configured one (the orders
 * example's authorizationUrl points at its own demo sign-in page); and every secret an
 * example declares `required` gets a generated value (the orders example's client secret).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import type { Logger } from '../lib/logger.ts'
import { createApp, findAppBySlug } from '../apps/apps.ts'
import { createUser, ensureOrganisation, findUserByEmail, type User } from '../identity/index.ts'
import { validateManifest } from '../manifest/index.ts'
import { hostUrls } from '../http/hosts.ts'
import { newSecret } from '../lib/crypto.ts'
import { deriveKey } from '../lib/master-key.ts'
import { createSecretStore, type SecretStore } from '../secrets/index.ts'
import { collectBundleDir } from './bundle-dir.ts'
import { MANIFEST_PATH } from './bundle-files.ts'
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

/** The origins example manifests are written for: `{base_url}` is http://localhost:8787 by default. */
const DEFAULT_ORIGIN = /http:\/\/(?:([a-z0-9-]+)\.)?localhost:8787(?![0-9])/g

/** `text` with the default base URL's origins replaced by those of `baseUrl`. */
export function withBaseUrl(text: string, baseUrl: URL): string {
  const urls = hostUrls(baseUrl)
  return text.replaceAll(DEFAULT_ORIGIN, (_match, label: string | undefined) => (label === undefined ? urls.base : urls.app(label)))
}

export interface ExampleStatus {
  slug: string
  visibility: 'public' | 'private'
  deployedNow: boolean
}

export async function deployExamples(
  deps: { db: Db; clock: Clock; logger: Logger; dir: string; baseUrl: URL; masterKey: Uint8Array },
): Promise<ExampleStatus[]> {
  if (!existsSync(deps.dir)) return []
  // The key purpose is the one platform.ts gives the app secret store.
  const secrets = createSecretStore({ db: deps.db, clock: deps.clock, key: deriveKey(deps.masterKey, 'app-secrets') })
  const statuses: ExampleStatus[] = []
  for (const name of readdirSync(deps.dir).sort()) {
    const dir = join(deps.dir, name)
    const manifestPath = join(dir, 'service.yaml')
    if (!existsSync(manifestPath)) continue
    const manifestText = withBaseUrl(readFileSync(manifestPath, 'utf8'), deps.baseUrl)
    const { manifest, errors } = validateManifest(manifestText)
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
      await generateRequiredSecrets(secrets, { appId: app.id, userId: owner.id, names: Object.keys(manifest.secrets) })
      const body = collectBundleDir(dir)
      body.files = body.files.map((file) =>
        file.path === MANIFEST_PATH ? { ...file, content: Buffer.from(manifestText).toString('base64') } : file)
      await deployBundle(deps, { app, user: owner, body })
      statuses.push({ slug: app.slug, visibility: manifest.app.visibility, deployedNow: true })
    } catch (error) {
      deps.logger.error('example app failed to deploy', { example: name, error: (error as Error).message })
    }
  }
  return statuses
}

/** A generated value for each required secret of a new example app (its production namespace). */
async function generateRequiredSecrets(store: SecretStore, input: { appId: string; userId: string; names: readonly string[] }): Promise<void> {
  for (const name of input.names) {
    await store.set({ appId: input.appId, devName: '' }, { name, value: newSecret('example_'), userId: input.userId })
  }
}
