/**
 * Which of a webhook request's headers reach the provider's Function (spec 6.2): every one,
 * lower-cased, except cookies, the headers proxies add about the client and the hops
 * (forwarding headers), hop-by-hop headers, and every `x-service-*` header (the platform's
 * own). The Function gets them as `[{ name, value }]`, sorted by name, one entry a name
 * (repeated headers joined with ", " as Fetch joins them): the SDK's schema helpers have no
 * map of arbitrary keys, and an array of objects is what a Function's strict input schema
 * can declare, `array(object({ name: string(), value: string() }))`.
 */

/** One request header as the webhook Function receives it. */
export interface WebhookHeader {
  readonly name: string
  readonly value: string
}

/** Removed by name (lower case). */
export const STRIPPED_HEADERS: ReadonlySet<string> = new Set([
  // Cookies: the platform's session cookies are no sender's business, and no Function's.
  'cookie', 'cookie2',
  // Forwarding headers: what proxies on the way say about the client, the host and the hops.
  'forwarded', 'via', 'x-real-ip', 'x-client-ip', 'client-ip', 'true-client-ip', 'x-cluster-client-ip',
  'cf-connecting-ip', 'cf-connecting-ipv6', 'cf-ipcountry', 'cf-ray', 'cf-visitor', 'cdn-loop',
  'fastly-client-ip', 'x-appengine-user-ip', 'x-azure-clientip', 'x-azure-socketip',
  'x-envoy-external-address', 'x-original-forwarded-for', 'x-original-url', 'x-rewrite-url',
  // Hop-by-hop headers (RFC 9110 7.6.1): about the connection to the platform, not the message.
  'connection', 'keep-alive', 'proxy-authorization', 'proxy-authenticate', 'proxy-connection', 'te', 'trailer',
  'transfer-encoding', 'upgrade',
])

/** Removed by prefix (lower case): `x-forwarded`, `x-forwarded-for`, `-host`, `-proto`, ...; `x-service-*`. */
export const STRIPPED_PREFIXES: readonly string[] = ['x-forwarded', 'x-service-']

/** Whether a header (lower-cased name) is kept for the webhook Function. */
export function isForwarded(name: string): boolean {
  return !STRIPPED_HEADERS.has(name) && !STRIPPED_PREFIXES.some((prefix) => name.startsWith(prefix))
}

/**
 * The headers the webhook Function receives.
 *
 * @example
 * forwardedHeaders(new Headers({ 'X-Signature': 'v1=ab', Cookie: 'a=b', 'X-Forwarded-For': '10.0.0.1' }))
 * // [{ name: 'x-signature', value: 'v1=ab' }]
 */
export function forwardedHeaders(headers: Headers): WebhookHeader[] {
  const kept: WebhookHeader[] = []
  // Fetch's Headers iterate lower-cased names in sorted order, repeated ones joined.
  for (const [name, value] of headers) if (isForwarded(name)) kept.push({ name, value })
  return kept
}
