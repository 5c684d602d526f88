// The orders integration's webhook Function (spec 6.2): the shop POSTs order changes to the
// connection's webhook URL, each signed with the connection's WEBHOOK_SIGNING_SECRET:
//   x-orders-signature: sha256=<hex HMAC-SHA256 of the exact body>
// The signature is checked with Web Crypto's crypto.subtle.verify, which compares the MACs
// in constant time; never by comparing strings. A missing secret is 403, a bad signature 401
// (the platform passes both to the sender and leaves the connection as it is), a body that
// is not a change 400. A change `{ id, type: "order.updated", order }` is emitted as the
// event order.updated with `{ order }`, its id the shop's change id, so a sender's retry of
// the same change creates no second delivery.
import { array, defineFunction, errors, object, string, type JsonObject } from '@service/server'

export const SIGNING_SECRET = 'WEBHOOK_SIGNING_SECRET'
export const SIGNATURE_HEADER = 'x-orders-signature'

const encoder = new TextEncoder()

/** The bytes of an even-length hexadecimal string, or null. */
function hexBytes(hex: string): Uint8Array<ArrayBuffer> | null {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) return null
  const bytes = new Uint8Array(hex.length / 2)
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return bytes
}

/** True when `header` is `sha256=<hex>` and the HMAC of `body` under `secret` matches it. */
async function signedBy(secret: string, input: { header: string | undefined; body: string }): Promise<boolean> {
  const signature = input.header?.startsWith('sha256=') ? hexBytes(input.header.slice('sha256='.length)) : null
  if (signature === null) return false
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify'])
  return crypto.subtle.verify('HMAC', key, signature, encoder.encode(input.body))
}

export default defineFunction({
  input: object({
    method: string(),
    headers: array(object({ name: string(), value: string() })),
    body: string(),
    receivedAt: string(),
  }),
  async handler({ input, secrets, integration }) {
    // null when the connection's managers left the optional field empty.
    const secret = await secrets.get(SIGNING_SECRET)
    if (secret === null) {
      throw errors.forbidden('WEBHOOK_NOT_CONFIGURED', 'This connection has no webhook signing secret; someone who manages it enters one on its page')
    }
    const header = input.headers.find((h) => h.name === SIGNATURE_HEADER)?.value
    if (!(await signedBy(secret, { header, body: input.body }))) {
      throw errors.unauthorized('SIGNATURE_INVALID', `The ${SIGNATURE_HEADER} header does not sign this body`)
    }
    let change: unknown
    try {
      change = JSON.parse(input.body)
    } catch {
      throw errors.badRequest('CHANGE_INVALID', 'The body is not JSON')
    }
    const { id, type, order } = (change ?? {}) as { id?: unknown; type?: unknown; order?: unknown }
    if (typeof id !== 'string' || type !== 'order.updated' || typeof order !== 'object' || order === null || Array.isArray(order)) {
      throw errors.badRequest('CHANGE_INVALID', 'A change is { id, type: "order.updated", order: { ... } }')
    }
    if (integration === null) throw errors.badRequest('NOT_A_WEBHOOK', 'This Function runs for a connection\'s webhook')
    const deliveries = await integration.emit({ type, id, data: { order: order as JsonObject } })
    return { received: true, id, deliveries }
  },
})
