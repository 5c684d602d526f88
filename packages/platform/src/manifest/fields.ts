// Every mapping of service.yaml and the fields it takes, in one catalog keyed by where the
// mapping sits: `functions[]` is each entry of `functions`, `integrations.<slot>` each
// consumer slot. The section readers take their allowed keys from here (readMapping is
// called with a key of this catalog), so the reference in docs/manifest.md can be checked
// against exactly what the validator accepts (reference.test.ts).

/** Mappings with fixed keys: an unknown key is MANIFEST_UNKNOWN_FIELD. */
export const MANIFEST_FIELDS = {
  '': ['schemaVersion', 'app', 'runtime', 'functions', 'queues', 'cron', 'secrets', 'data', 'integrations', 'provides', 'email', 'ai'],
  app: ['id', 'name', 'visibility'],
  runtime: ['sdk'],
  'runtime.sdk': ['version'],
  'functions[]': ['name', 'entrypoint', 'access', 'timeoutSeconds', 'routes'],
  'functions[].routes[]': ['method', 'path'],
  'queues[]': ['name', 'function', 'concurrency', 'maxAttempts', 'retryDelaySeconds', 'retryBackoff', 'timeoutSeconds'],
  'cron[]': ['name', 'schedule', 'function', 'enabled', 'timezone'],
  data: ['search'],
  'data.search[]': ['name', 'table', 'select', 'filters', 'fullText', 'vector'],
  'data.search[].fullText': ['language', 'columns'],
  'data.search[].vector': ['column', 'dimensions', 'model'],
  'integrations.<slot>': ['provider', 'integration', 'account', 'cardinality', 'capabilities', 'events'],
  'integrations.<slot>.events': ['function', 'types'],
  email: ['aliases', 'inbound'],
  ai: ['textModel', 'imageModel'],
  'email.inbound': ['function'],
  provides: ['integration'],
  'provides.integration': [
    'name', 'title', 'description', 'credentials', 'authorization', 'capabilities', 'operations', 'sync', 'webhook', 'events',
  ],
  'provides.integration.credentials[]': ['name', 'label', 'secret', 'optional'],
  'provides.integration.authorization': ['type', 'authorizationUrl', 'clientId', 'scopes', 'exchange', 'refresh', 'pkce', 'accessToken'],
  'provides.integration.capabilities[]': ['name', 'description'],
  'provides.integration.operations[]': ['name', 'capability', 'function', 'description', 'input', 'output', 'fake'],
  'provides.integration.sync': ['function', 'schedule', 'timezone'],
  'provides.integration.webhook': ['function'],
  'provides.integration.events[]': ['type', 'capability', 'description', 'fake'],
} as const satisfies Record<string, readonly string[]>

/** Mappings whose keys the app chooses, with the placeholder the reference writes for a key. */
export const FREE_KEY_MAPPINGS = {
  secrets: '<NAME>',
  integrations: '<slot>',
} as const

export type FixedMapping = keyof typeof MANIFEST_FIELDS
export type ManifestMapping = FixedMapping | keyof typeof FREE_KEY_MAPPINGS

/** The allowed keys of a mapping; null for a mapping with free keys. */
export function allowedFields(mapping: ManifestMapping): readonly string[] | null {
  return mapping in MANIFEST_FIELDS ? MANIFEST_FIELDS[mapping as FixedMapping] : null
}

/**
 * Every field path the validator knows, as docs/manifest.md writes them.
 *
 * @example
 * manifestFieldPaths().includes('functions[].entrypoint') // true
 * manifestFieldPaths().includes('secrets.<NAME>') // true
 */
export function manifestFieldPaths(): string[] {
  const fixed = Object.entries(MANIFEST_FIELDS).flatMap(([mapping, keys]) =>
    keys.map((key) => (mapping === '' ? key : `${mapping}.${key}`)))
  const free = Object.entries(FREE_KEY_MAPPINGS).map(([mapping, placeholder]) => `${mapping}.${placeholder}`)
  return [...fixed, ...free]
}

/**
 * Words that point a misplaced field to where it belongs, or undefined: a top-level field
 * written inside another mapping (a per-Function `secrets:` is the common one).
 */
export function misplacedFieldHint(name: string, mapping: ManifestMapping): string | undefined {
  if (mapping === '' || !(MANIFEST_FIELDS[''] as readonly string[]).includes(name)) return undefined
  if (name === 'secrets') {
    return 'secrets are declared once for the whole app, at the top level of service.yaml ' +
      '("secrets:" then "  STRIPE_KEY: required"), and every Function reads them with ctx.secrets'
  }
  return `"${name}" is a top-level field of service.yaml; write it at the start of a line, not inside ${mapping}`
}
