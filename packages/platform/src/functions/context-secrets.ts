/**
 * `ctx.secrets.get(NAME)` and `ctx.secrets.require(NAME)` for a running Function, and the
 * redaction of secret values from what leaves it. A value reaches a worker only when a
 * Function asks for it through its invocation's capability, and only for a name the
 * release's manifest declares: an undeclared name is `SECRET_NOT_DECLARED`; `get` of a
 * declared name without a value is `null` and `require` of one is `SECRET_NOT_SET`.
 *
 * Every value handed to a worker is remembered for its namespace (bounded by count and
 * bytes), so the worker's diagnostics can be redacted synchronously and a value rotated
 * after a Function cached it is still redacted; asynchronous paths (stored logs, failures)
 * add the namespace's current values from the store. Those are cached per namespace and
 * dropped on every secret change (SECRET_CHANGED notices, db/notified-cache.ts), and the
 * redactor built from them is kept until either set changes, so a log line costs no query
 * and no decryption.
 */
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { createNotifiedCache } from '../db/notified-cache.ts'
import { createRedactor, SECRET_CHANGED, type Redactor, type SecretScope, type SecretStore } from '../secrets/index.ts'
import { selectDeclaredSecrets } from '../secrets/queries.ts'

const MAX_CACHED_RELEASES = 256
/** Values remembered per namespace for synchronous redaction; the oldest go first. */
const MAX_REMEMBERED_VALUES = 1000
/** ...and at most this many UTF-16 code units of them. */
const MAX_REMEMBERED_CHARS = 1024 * 1024
/** Namespaces whose stored values are cached for redaction. */
const MAX_CACHED_NAMESPACES = 1000

export interface SecretsContext {
  /** Answers one `ctx.secrets` call of an invocation of `releaseId` in `scope`. */
  answer(call: { scope: SecretScope; releaseId: string; method: string; args: readonly unknown[] }): Promise<string | null>
  /** A redactor of every value of the namespace: stored now, or handed to a worker before. */
  redactorFor(scope: SecretScope): Promise<Redactor>
  /** A redactor of the values handed to workers of the namespace (synchronous). */
  handedOut(scope: SecretScope): Redactor
  /**
   * Counts `values` as handed to the namespace's workers, so they are redacted like its own
   * secrets (an integration invocation's connection values, provider-invocation.ts).
   */
  rememberHanded(scope: SecretScope, values: Iterable<string>): void
  /** Stops listening for secret changes. */
  close(): Promise<void>
}

/**
 * @example
 * const secrets = createSecretsContext({ db, store })
 * case 'secrets': return await secrets.answer({ scope, releaseId, method: call.method, args: call.args })
 */
export function createSecretsContext(deps: { db: Db; clock: Clock; store: SecretStore }): SecretsContext {
  const declarations = new Map<string, Promise<Record<string, string>>>()
  const remembered = new Map<string, { values: Set<string>; chars: number; redactor: Redactor | null; generation: number }>()
  const stored = createNotifiedCache<string[]>({
    db: deps.db, clock: deps.clock, channel: SECRET_CHANGED, maxEntries: MAX_CACHED_NAMESPACES, maxAgeMs: 5 * 60 * 1000,
  })
  /** The redactor of the stored values (by the cached array) and the remembered ones (by generation). */
  const full = new WeakMap<string[], { generation: number; redactor: Redactor }>()

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
      if (remembered.size >= MAX_CACHED_NAMESPACES) remembered.delete(remembered.keys().next().value!)
      entry = { values: new Set<string>(), chars: 0, redactor: null, generation: 0 }
      remembered.set(key, entry)
    }
    return entry
  }

  function remember(scope: SecretScope, value: string): void {
    const entry = memory(scope)
    if (entry.values.has(value)) return
    while (entry.values.size > 0 && (entry.values.size >= MAX_REMEMBERED_VALUES || entry.chars + value.length > MAX_REMEMBERED_CHARS)) {
      const oldest = entry.values.values().next().value!
      entry.values.delete(oldest)
      entry.chars -= oldest.length
    }
    entry.values.add(value)
    entry.chars += value.length
    entry.redactor = null
    entry.generation += 1
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
      const values = (await stored.get(`${scope.appId}:${scope.devName}`, () => deps.store.values(scope)))!
      const handed = memory(scope)
      const known = full.get(values)
      if (known !== undefined && known.generation === handed.generation) return known.redactor
      const redactor = createRedactor([...values, ...handed.values])
      full.set(values, { generation: handed.generation, redactor })
      return redactor
    },

    rememberHanded(scope, values) {
      for (const value of values) if (value.length > 0) remember(scope, value)
    },

    handedOut(scope) {
      const entry = memory(scope)
      entry.redactor ??= createRedactor(entry.values)
      return entry.redactor
    },

    async close() {
      await stored.close()
    },
  }
}
