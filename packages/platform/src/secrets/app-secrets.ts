/**
 * An app namespace's secrets as its owner manages them, for the owner API and the MCP tools
 * alike: values go in and never come out. The list names each secret the active release
 * declares or the store holds, with whether it is required and set and when it was last set.
 * The owner and Edit holders (an Edit holder deploys the code that reads them anyway); Use
 * holders get FORBIDDEN, anyone else APP_NOT_FOUND.
 */
import type { Db } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { appForRole, type User } from '../identity/index.ts'
import { activeReleaseOf, checkDevName } from '../namespaces/dev-names.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { selectDeclaredSecrets } from './queries.ts'
import { checkSecretName, checkSecretValue, type SecretStore } from './secrets.ts'
import type { SecretScope } from './scope.ts'

export interface SecretView {
  name: string
  declared: boolean
  required: boolean
  set: boolean
  updatedAt: string | null
}

export interface AppSecretsDeps {
  db: Db
  store: SecretStore
}

/** Which namespace a request names: `devName` undefined is production. */
export interface SecretTarget {
  user: User
  appId: string
  devName?: string | undefined
}

async function target(db: Db, input: SecretTarget): Promise<{ scope: SecretScope; releaseId: string | null }> {
  const app = await appForRole(db, input.user, input.appId, 'edit')
  const devName = input.devName === undefined ? '' : checkDevName(input.devName)
  const releaseId = devName === '' ? app.activeReleaseId : await activeReleaseOf(db, app.id, devName)
  return { scope: { appId: app.id, devName }, releaseId }
}

/**
 * @example
 * const secrets = await listAppSecrets(deps, { user, appId: 'orders' }) // [{ name: 'STRIPE_KEY', set: true, ... }]
 */
export async function listAppSecrets(deps: AppSecretsDeps, input: SecretTarget): Promise<SecretView[]> {
  const { scope, releaseId } = await target(deps.db, input)
  const declared = releaseId === null ? {} : await selectDeclaredSecrets(deps.db, releaseId)
  const stored = new Map((await deps.store.list(scope)).map((secret) => [secret.name, secret.updatedAt]))
  const names = [...new Set([...Object.keys(declared), ...stored.keys()])].sort()
  return names.map((name) => ({
    name,
    declared: Object.hasOwn(declared, name),
    required: declared[name] === 'required',
    set: stored.has(name),
    updatedAt: stored.get(name)?.toISOString() ?? null,
  }))
}

/**
 * Sets the secret `name` to `value` (checked); answers what the list shows of it, never the value.
 *
 * @example
 * const { secret, created } = await setAppSecret(deps, { user, appId: 'orders', name: 'STRIPE_KEY', value: 'sk_…' })
 */
export async function setAppSecret(
  deps: AppSecretsDeps, input: SecretTarget & { name: unknown; value: unknown },
): Promise<{ secret: SecretView; created: boolean }> {
  const { scope, releaseId } = await target(deps.db, input)
  const name = checkSecretName(input.name)
  // A development namespace exists from its first deploy; values for names never deployed are refused.
  if (scope.devName !== '' && (await findNamespace(deps.db, scope.appId, 'development', scope.devName)) === null) {
    throw new ServiceError('DEV_NAMESPACE_NOT_FOUND',
      `the development namespace ${scope.devName} does not exist; deploy to it first with: service deploy <dir> --dev ${scope.devName}`)
  }
  const saved = await deps.store.set(scope, { name, value: checkSecretValue(input.value), userId: input.user.id })
  const declared = releaseId === null ? {} : await selectDeclaredSecrets(deps.db, releaseId)
  return {
    secret: { name, declared: Object.hasOwn(declared, name), required: declared[name] === 'required', set: true, updatedAt: saved.updatedAt.toISOString() },
    created: saved.created,
  }
}

/** Removes the secret's value; SECRET_NOT_FOUND when it has none. */
export async function unsetAppSecret(deps: AppSecretsDeps, input: SecretTarget & { name: unknown }): Promise<void> {
  const { scope } = await target(deps.db, input)
  const name = checkSecretName(input.name)
  if (!(await deps.store.unset(scope, name))) throw new ServiceError('SECRET_NOT_FOUND', `the secret ${name} has no value here`)
}
