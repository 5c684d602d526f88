/**
 * The deploy warning for a required secret without a value in the target namespace.
 * A warning, not an error: values are provisioned separately from deploys (spec 2.5), so
 * the first deploy of a new secret cannot have one yet; the release serves, and
 * `ctx.secrets.require` fails with SECRET_NOT_SET until the owner sets the value.
 */
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml'
import type { Manifest, Problem } from '../manifest/index.ts'
import type { SecretScope } from './scope.ts'
import type { SecretStore } from './secrets.ts'

/**
 * @example
 * const warnings = await missingSecretWarnings(store, { scope, manifest, manifestText })
 */
export async function missingSecretWarnings(
  store: SecretStore,
  options: { scope: SecretScope; manifest: Manifest; manifestText: string },
): Promise<Problem[]> {
  const required = Object.keys(options.manifest.secrets)
  if (required.length === 0) return []
  const stored = new Set((await store.list(options.scope)).map((secret) => secret.name))
  const missing = required.filter((name) => !stored.has(name))
  if (missing.length === 0) return []
  const positions = keyPositions(options.manifestText)
  const where = options.scope.devName === '' ? 'production' : `the development namespace ${options.scope.devName}`
  const flag = options.scope.devName === '' ? '' : ` --dev ${options.scope.devName}`
  return missing.map((name) => ({
    severity: 'warning' as const,
    code: 'SECRET_NOT_SET',
    path: `secrets.${name}`,
    ...(positions.get(name) ?? { line: 1, column: 1 }),
    message: `the required secret ${name} has no value in ${where}; ctx.secrets.require('${name}') fails until you run: service secrets set ${name}${flag}`,
  }))
}

/** Line and column of each key under the top-level `secrets` mapping. */
function keyPositions(text: string): Map<string, { line: number; column: number }> {
  const positions = new Map<string, { line: number; column: number }>()
  const lineCounter = new LineCounter()
  const document = parseDocument(text, { lineCounter })
  const secrets = document.get('secrets', true)
  if (!isMap(secrets)) return positions
  for (const pair of secrets.items) {
    if (isScalar(pair.key) && typeof pair.key.value === 'string' && pair.key.range) {
      const { line, col } = lineCounter.linePos(pair.key.range[0])
      positions.set(pair.key.value, { line, column: col })
    }
  }
  return positions
}
