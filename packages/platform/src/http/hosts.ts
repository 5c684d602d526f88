/**
 * Host routing. `{base_url}` is the control plane, `auth.<base domain>` the central sign-in,
 * `<slug>.<base domain>` one app. Anything else is an unknown host.
 */
import { isAppSlug } from '../lib/ids.ts'

export type HostTarget =
  | { kind: 'base' }
  | { kind: 'auth' }
  | { kind: 'app'; slug: string }
  | { kind: 'unknown' }

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' }

export interface HostUrls {
  base: string
  auth: string
  app(slug: string): string
}

/** The origins the platform answers on, derived from `{base_url}`. */
export function hostUrls(baseUrl: URL): HostUrls {
  const port = baseUrl.port ? `:${baseUrl.port}` : ''
  const origin = (host: string) => `${baseUrl.protocol}//${host}${port}`
  return {
    base: origin(baseUrl.hostname),
    auth: origin(`auth.${baseUrl.hostname}`),
    app: (slug) => origin(`${slug}.${baseUrl.hostname}`),
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
  if (!name.endsWith(`.${base}`)) return { kind: 'unknown' }
  const label = name.slice(0, -base.length - 1)
  if (label === 'auth') return { kind: 'auth' }
  if (isAppSlug(label)) return { kind: 'app', slug: label }
  return { kind: 'unknown' }
}
