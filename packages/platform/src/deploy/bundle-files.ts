/**
 * The app bundle's layout and limits, shared by the platform (which validates uploads) and
 * the CLI (which collects a directory). A bundle holds `service.yaml`, `functions/**`,
 * `public/**` (the frontend) and `database/migrations/NNNN_name.sql`, nothing else.
 */

export const BUNDLE_LIMITS = {
  maxFiles: 2000,
  maxFileBytes: 10 * 1024 * 1024,
  maxTotalBytes: 50 * 1024 * 1024,
  maxPathLength: 512,
} as const

export const MANIFEST_PATH = 'service.yaml'
export const BUNDLE_ROOTS = ['functions/', 'public/', 'database/migrations/'] as const
export const MIGRATION_FILE = /^database\/migrations\/(\d{4})_([a-z0-9_]+)\.sql$/

/** Why a bundle path is not acceptable, or null when it is. */
export function bundlePathProblem(path: string): string | null {
  if (path.length === 0 || path.length > BUNDLE_LIMITS.maxPathLength) {
    return `path must be 1 to ${BUNDLE_LIMITS.maxPathLength} characters`
  }
  if (path.startsWith('/') || path.includes('\\') || path.includes('\0')) {
    return 'path must be relative and use forward slashes'
  }
  const segments = path.split('/')
  if (segments.some((s) => s === '' || s === '.' || s === '..')) {
    return 'path must not contain empty, "." or ".." segments'
  }
  if (path === MANIFEST_PATH) return null
  if (path.startsWith('database/')) {
    return MIGRATION_FILE.test(path) ? null : 'migrations must be named database/migrations/NNNN_name.sql (lowercase name)'
  }
  if (!BUNDLE_ROOTS.some((root) => path.startsWith(root))) {
    return 'only service.yaml, functions/, public/ and database/migrations/ belong in a bundle'
  }
  return null
}
