/**
 * What a Function entrypoint may look like: a relative path inside the app bundle, such
 * as `functions/create-task.ts`. Both sides check it (the platform before it sends an
 * invoke, the worker before it imports), so a manifest can never make a worker import a
 * file outside the bundle or a URL. Web-standard code: it runs in Node and in Deno.
 */

const MODULE_EXTENSION = /\.(ts|mts|js|mjs|tsx|jsx)$/

/**
 * The reason `entrypoint` is not a usable bundle-relative module path, or null when it is.
 *
 * @example
 * entrypointProblem('functions/create-task.ts') // null
 * entrypointProblem('../secrets.ts')            // 'the entrypoint "../secrets.ts" leaves the bundle ...'
 */
export function entrypointProblem(entrypoint: string): string | null {
  const shown = JSON.stringify(entrypoint)
  if (entrypoint.length === 0 || entrypoint.length > 1024) return `the entrypoint ${shown} must be 1 to 1024 characters`
  if (entrypoint.includes('\\') || entrypoint.includes('\0') || entrypoint.includes('%') || entrypoint.includes('?') || entrypoint.includes('#')) {
    return `the entrypoint ${shown} must be a plain relative path with forward slashes`
  }
  if (entrypoint.startsWith('/') || /^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(entrypoint)) {
    return `the entrypoint ${shown} must be relative to the bundle, such as functions/create-task.ts`
  }
  if (entrypoint.split('/').some((segment) => segment === '..' || segment === '.' || segment === '')) {
    return `the entrypoint ${shown} leaves the bundle or has empty segments; write functions/name.ts`
  }
  if (!MODULE_EXTENSION.test(entrypoint)) return `the entrypoint ${shown} must be a .ts or .js module`
  return null
}
