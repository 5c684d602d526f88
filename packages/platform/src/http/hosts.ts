/**
 * Host routing. `{base_url}` is the control plane, `auth.<base domain>` the central sign-in,
 * `<slug>.<base domain>` one app. A well-formed DNS name outside the base domain, on the
 * platform's port, may be a custom domain mapped to an app (the app edge looks it up);
 * anything else is an unknown host.
 */
import { isAppSlug } from '../lib/ids.ts'

export type HostTarget =
  | { kind: 'base' }
  | { kind: 'auth' }
  | { kind: 'app'; slug: string }
  /** A name the app edge looks up among the mapped custom domains (apps/domains.ts). */
  | { kind: 'custom'; domain: string }
  | { kind: 'unknown' }

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' }

export interface HostUrls {
  base: string
  auth: string
  app(slug: string): string
  /** The origin of a custom domain: the base URL's scheme and port, as `classifyHost` expects. */
  custom(domain: string): string
}

/** The origins the platform answers on, derived from `{base_url}`. */
export function hostUrls(baseUrl: URL): HostUrls {
  const port = baseUrl.port ? `:${baseUrl.port}` : ''
  const origin = (host: string) => `${baseUrl.protocol}//${host}${port}`
  return {
    base: origin(baseUrl.hostname),
    auth: origin(`auth.${baseUrl.hostname}`),
    app: (slug) => origin(`${slug}.${baseUrl.hostname}`),
    custom: (domain) => origin(domain),
  }
}

/** Classified Host headers (a handful in practice; emptied when full, so a flood of made-up hosts stays bounded). */
const classified = new Map<string, HostTarget>()
const MAX_CLASSIFIED = 1000
/** Longer Host headers (a DNS name has at most 253 characters) are classified each time, never remembered. */
const MAX_REMEMBERED_HOST = 255

/** What a Host header names under `baseUrl`; remembered, since every request asks (twice for an app). */
export function classifyHost(hostHeader: string | undefined, baseUrl: URL): HostTarget {
  if (!hostHeader) return { kind: 'unknown' }
  if (hostHeader.length > MAX_REMEMBERED_HOST) return Object.freeze(classify(hostHeader, baseUrl))
  const key = `${baseUrl.href} ${hostHeader}`
  let target = classified.get(key)
  if (!target) {
    target = Object.freeze(classify(hostHeader, baseUrl))
    if (classified.size >= MAX_CLASSIFIED) classified.clear()
    classified.set(key, target)
  }
  return target
}

function classify(hostHeader: string, baseUrl: URL): HostTarget {
  let host: URL
  try {
    host = new URL(`${baseUrl.protocol}//${hostHeader}`)
  } catch {
    return { kind: 'unknown' }
  }
  const expectedPort = baseUrl.port || DEFAULT_PORTS[baseUrl.protocol]
  const port = host.port || DEFAULT_PORTS[baseUrl.protocol]
  if (port !== expectedPort) return { kind: 'unknown' }
  const name = host.hostname.toLowerCase().replace(/\.$/, '')
  const base = baseUrl.hostname.toLowerCase()
  if (name === base || (base === 'localhost' && (name === '127.0.0.1' || name === '[::1]'))) return { kind: 'base' }
  if (!name.endsWith(`.${base}`)) return isDomainName(name) ? { kind: 'custom', domain: name } : { kind: 'unknown' }
  const label = name.slice(0, -base.length - 1)
  if (label === 'auth') return { kind: 'auth' }
  if (isAppSlug(label)) return { kind: 'app', slug: label }
  return { kind: 'unknown' }
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/

/**
 * Whether `name` is a lowercase DNS host name a custom domain can be: at most 253
 * characters, two labels or more of letters, digits and inner hyphens (1 to 63 each), and a
 * last label that is not a number (URLs read such a name as an IPv4 address; IPv6 literals
 * have no such labels). Internationalised names are written in their `xn--` form.
 *
 * @example
 *   isDomainName('shop.example.com') // true
 *   isDomainName('10.0.0.1')         // false
 */
export function isDomainName(name: string): boolean {
  if (name.length > 253) return false
  const labels = name.split('.')
  return labels.length >= 2 && labels.every((label) => LABEL.test(label)) && !/^(\d+|0x[0-9a-f]*)$/.test(labels.at(-1)!)
}
