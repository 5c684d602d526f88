/**
 * Which push endpoints the platform POSTs to. A subscription's endpoint comes from a browser,
 * so from anyone signed in: the platform must not be turned into a client of its own network
 * (SSRF). An endpoint is an https URL without credentials whose host is a name or a public
 * address; at delivery its name's addresses are looked up and refused when any is private,
 * loopback or link-local (a name that changes its answer between that look-up and the POST is
 * the residual gap: docs/decisions.md). Tests turn on `allowLoopbackHttp`, which also accepts
 * http://127.0.0.1, http://[::1] and http://localhost (never in production: config.ts).
 */
import { BlockList, isIP } from 'node:net'
import { lookup } from 'node:dns/promises'
import { ServiceError } from '../lib/errors.ts'

export interface EndpointPolicy {
  /** Accept loopback endpoints over http (tests only). */
  readonly allowLoopbackHttp: boolean
}

/** The longest endpoint URL accepted (push services' are about 200 to 500 characters). */
export const MAX_ENDPOINT_LENGTH = 2048

// BlockList checks an IPv4-mapped IPv6 address (::ffff:10.0.0.1) against the IPv4 rules itself.
const PRIVATE = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) PRIVATE.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8],
] as const) PRIVATE.addSubnet(network, prefix, 'ipv6')

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])

/** Whether `address` (an IP literal) is one the platform never posts to. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return false
  return PRIVATE.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

function refused(message: string): ServiceError {
  return new ServiceError('PUSH_SUBSCRIPTION_INVALID', message, { details: { field: 'endpoint' } })
}

/**
 * The endpoint as a URL when the policy accepts it; PUSH_SUBSCRIPTION_INVALID otherwise.
 *
 * @example
 * checkEndpoint('https://fcm.googleapis.com/fcm/send/abc', { allowLoopbackHttp: false })
 */
export function checkEndpoint(endpoint: unknown, policy: EndpointPolicy): URL {
  if (typeof endpoint !== 'string' || endpoint.length === 0) throw refused('the subscription needs its endpoint URL')
  if (endpoint.length > MAX_ENDPOINT_LENGTH) throw refused(`the endpoint is over ${MAX_ENDPOINT_LENGTH} characters`)
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    throw refused('the endpoint is not an absolute URL')
  }
  if (url.username !== '' || url.password !== '') throw refused('the endpoint must not carry credentials')
  if (url.hash !== '') throw refused('the endpoint must not carry a fragment')
  const loopback = LOOPBACK_HOSTS.has(url.hostname)
  if (policy.allowLoopbackHttp && loopback && (url.protocol === 'http:' || url.protocol === 'https:')) return url
  if (url.protocol !== 'https:') throw refused('the endpoint must be an https URL')
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  // A single-label name (intranet) is no public push service either.
  if (loopback || isPrivateAddress(host) || (!host.includes('.') && isIP(host) === 0)) {
    throw refused('the endpoint must be a public push service')
  }
  return url
}

/**
 * Refuses, just before a POST, an endpoint whose host name now resolves to a private
 * address. Loopback endpoints pass when the policy allows them.
 */
export async function checkEndpointAddresses(url: URL, policy: EndpointPolicy): Promise<string | null> {
  if (policy.allowLoopbackHttp && LOOPBACK_HOSTS.has(url.hostname)) return null
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  if (isIP(host) !== 0) return isPrivateAddress(host) ? `${host} is not a public address` : null
  const addresses = await lookup(host, { all: true, verbatim: true })
  const bad = addresses.find((entry) => isPrivateAddress(entry.address))
  return bad === undefined ? null : `${host} resolves to ${bad.address}, not a public address`
}
