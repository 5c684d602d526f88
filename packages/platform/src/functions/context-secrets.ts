/**
 * `ctx.secrets.get(NAME)` and `ctx.secrets.require(NAME)` for a running Function, and the
 * redaction of secret values from what leaves it. A value reaches a worker only when a
 * Function asks for it through its invocation's capability, and only for a name the
 * release's manifest declares: an undeclared name is `SECRET_NOT_DECLARED`; `get` of a
 * declared name without a value is `null` and `require` of one is `SECRET_NOT_SET`.
 *
 * Every value handed to a worker is remembered for its namespace (bounded), so the
 * worker's diagnostics can be redacted synchronously and a value rotated after a
 * Function cached it is still redacted; asynchronous paths (stored logs, failures) add
 * the namespace's current values from the store.
 */
import type { Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { createRedactor, type Redactor, type SecretScope, type SecretStore } from '../secrets/index.ts'
import { selectDeclaredSecrets } from '../secrets/queries.ts'

const MAX_CACHED_RELEASES = 256
/** Values remembered per namespace for synchronous redaction; the oldest go first. */
const MAX_REMEMBERED_VALUES = 1000

export interface SecretsContext {
  /** Answers one `ctx.secrets` call of an invocation of `releaseId` in `scope`. */
  answer(call: { scope: SecretScope; releaseId: string; method: string; args: readonly unknown[] }): Promise<string | null>
  /** A redactor of every value of the namespace: stored now, or handed to a worker before. */
  redactorFor(scope: SecretScope): Promise<Redactor>
  /** A redactor of the values handed to workers of the namespace (synchronous). */
  handedOut(scope: SecretScope): Redactor
}

/**
 * @example
 * const secrets = createSecretsContext({ db, store })
 * case 'secrets': return await secrets.answer({ scope, releaseId, method: call.method, args: call.args })
 */
export function createSecretsContext(deps: { db: Queryable; store: SecretStore }): SecretsContext {
  const declarations = new Map<string, Promise<Record<string, string>>>()
  const remembered = new Map<string, { values: Set<string>; redactor: Redactor | null }>()

  function declared(releaseId: string): Promise<Record<string, string>> {
    let entry = declarations.get(releaseId)
    if (entry === undefined) {
      if (declarations.size >= MAX_CACHED_RELEASES) declarations.delete(declarations.keys().next().value!)
      entry = selectDeclaredSecrets(deps.db, releaseId)
      entry.catch(() => declarations.delete(releaseId))
      declarations.set(releaseId, entry)
    }
    return entry
  }

  function memory(scope: SecretScope) {
    const key = `${scope.appId}:${scope.devName}`
    let entry = remembered.get(key)
    if (entry === undefined) {
      entry = { values: new Set(), redactor: null }
      remembered.set(key, entry)
    }
    return entry
  }

  function remember(scope: SecretScope, value: string): void {
    const entry = memory(scope)
    if (entry.values.has(value)) return
    if (entry.values.size >= MAX_REMEMBERED_VALUES) entry.values.delete(entry.values.values().next().value!)
    entry.values.add(value)
    entry.redactor = null
  }

  return {
    async answer(call) {
      if (call.method !== 'get' && call.method !== 'require') {
        throw new ServiceError('BAD_REQUEST', `ctx.secrets has no method ${call.method}`)
      }
      const name = call.args[0]
      if (typeof name !== 'string') throw new ServiceError('BAD_REQUEST', `ctx.secrets.${call.method} takes a secret name (a string)`)
      if (!Object.hasOwn(await declared(call.releaseId), name)) {
        throw new ServiceError('SECRET_NOT_DECLARED', `the secret ${name.slice(0, 64)} is not declared; add it under secrets: in service.yaml`, {
          details: { secret: name.slice(0, 64) },
        })
      }
      const value = await deps.store.read(call.scope, name)
      if (value === null) {
        if (call.method === 'get') return null
        throw new ServiceError('SECRET_NOT_SET', `the secret ${name} has no value in this namespace; set it with: service secrets set ${name}`, {
          details: { secret: name },
        })
      }
      remember(call.scope, value)
      return value
    },

    async redactorFor(scope) {
      const stored = await deps.store.values(scope)
      return createRedactor([...stored, ...memory(scope).values])
    },

    handedOut(scope) {
      const entry = memory(scope)
      entry.redactor ??= createRedactor(entry.values)
      return entry.redactor
    },
  }
}
