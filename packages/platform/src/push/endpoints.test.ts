/**
 * Which push endpoints the platform posts to (endpoints.ts): https push services on public
 * hosts only; loopback over http only where configuration allows it (tests); a host name
 * resolving to a private address is refused just before the POST.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { checkEndpoint, checkEndpointAddresses, isPrivateAddress } from './endpoints.ts'

const STRICT = { allowLoopbackHttp: false }
const TESTS = { allowLoopbackHttp: true }

const refusal = (endpoint: unknown, policy = STRICT) => {
  try {
    checkEndpoint(endpoint, policy)
    return null
  } catch (error) {
    return (error as { code: string }).code
  }
}

describe('push endpoints', () => {
  test('the browsers\' push services are accepted as they are', () => {
    for (const endpoint of [
      'https://fcm.googleapis.com/fcm/send/dQw4w9WgXcQ:APA91b',
      'https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk',
      'https://web.push.apple.com/QGuQyavXutnMk',
      'https://wns2-par02p.notify.windows.com/w/?token=BQYAAA',
    ]) assert.equal(checkEndpoint(endpoint, STRICT).toString(), endpoint)
  })

  test('anything but an https URL on a public host is refused PUSH_SUBSCRIPTION_INVALID', () => {
    for (const endpoint of [
      'http://fcm.googleapis.com/fcm/send/x', 'ftp://push.example.com/x', 'https://127.0.0.1/x', 'https://localhost/x',
      'https://[::1]/x', 'https://10.0.0.8/x', 'https://192.168.1.1/x', 'https://169.254.169.254/latest', 'https://[fd00::1]/x',
      'https://[::ffff:10.0.0.1]/x', 'https://intranet/x', 'https://user:pass@push.example.com/x', 'https://push.example.com/x#frag',
      'not a url', '', 42, null, `https://push.example.com/${'x'.repeat(2048)}`,
    ]) assert.equal(refusal(endpoint), 'PUSH_SUBSCRIPTION_INVALID', String(endpoint))
  })

  test('loopback over http is accepted only when configuration allows it, and nothing else is', () => {
    assert.equal(refusal('http://127.0.0.1:4000/push'), 'PUSH_SUBSCRIPTION_INVALID')
    assert.equal(refusal('http://127.0.0.1:4000/push', TESTS), null)
    assert.equal(refusal('http://[::1]:4000/push', TESTS), null)
    assert.equal(refusal('http://localhost:4000/push', TESTS), null)
    assert.equal(refusal('http://push.example.com/x', TESTS), 'PUSH_SUBSCRIPTION_INVALID')
    assert.equal(refusal('http://10.0.0.8/x', TESTS), 'PUSH_SUBSCRIPTION_INVALID')
  })

  test('private, loopback, link-local and mapped addresses are private; public ones are not', () => {
    for (const address of ['10.1.2.3', '127.0.0.1', '172.16.5.4', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fe80::1', 'fd12::3', '::ffff:127.0.0.1']) {
      assert.equal(isPrivateAddress(address), true, address)
    }
    for (const address of ['142.250.74.106', '2a00:1450:4007:80e::200a', 'push.example.com']) assert.equal(isPrivateAddress(address), false, address)
  })

  test('just before a POST, an address literal in a private range is refused, loopback passing only where allowed', async () => {
    assert.match((await checkEndpointAddresses(new URL('https://127.0.0.1/x'), STRICT))!, /not a public address/)
    assert.equal(await checkEndpointAddresses(new URL('http://127.0.0.1:4000/x'), TESTS), null)
    assert.equal(await checkEndpointAddresses(new URL('https://142.250.74.106/x'), STRICT), null)
    // `localhost` is a name: it resolves to loopback.
    assert.match((await checkEndpointAddresses(new URL('https://localhost/x'), STRICT))!, /resolves to .* not a public address/)
  })
})
