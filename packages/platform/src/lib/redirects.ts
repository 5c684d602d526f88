/**
 * Redirect targets that stay on one origin. A target is normalised first (dot segments,
 * backslashes, tabs and newlines are resolved the way browsers resolve them), and a result
 * that names another host, or a path a browser would read as another host (`//host`,
 * `/\host`), falls back to `/`. Redirects then always carry an absolute URL on the origin, so
 * no path can be read as protocol-relative.
 */

const MAX_TARGET = 2000

/**
 * The path, query and fragment of `value` when it resolves to `origin`; `/` otherwise.
 *
 * @example
 *   sameOriginPath('/..//evil.example', 'http://auth.localhost:8787') // '/'
 *   sameOriginPath('/tasks?x=1', 'http://auth.localhost:8787')        // '/tasks?x=1'
 */
export function sameOriginPath(value: string | null | undefined, origin: string): string {
  if (!value || value.length > MAX_TARGET) return '/'
  let url: URL
  try {
    url = new URL(value, origin + '/')
  } catch {
    return '/'
  }
  if (url.origin !== origin) return '/'
  const path = url.pathname + url.search + url.hash
  if (!path.startsWith('/') || path.startsWith('//') || path.startsWith('/\\')) return '/'
  return path
}

/** `origin` plus the path of `value` that `sameOriginPath` keeps: an absolute redirect target. */
export function sameOriginUrl(value: string | null | undefined, origin: string): string {
  return origin + sameOriginPath(value, origin)
}
