/**
 * Mapping custom domains through the owner API: what a domain may be, that one belongs to
 * one app, that only a platform administrator maps and unmaps, and that the app's owner
 * lists them. Plus the pure checks the Host routing shares (`isDomainName`, `classifyHost`).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { ownerApi, startHarness, type Harness } from '../../test/harness.ts'
import { classifyHost, isDomainName } from '../http/hosts.ts'
import { checkDomain, MAX_DOMAINS_PER_APP } from './domains.ts'
import { ServiceError } from '../lib/errors.ts'

const BASE = new URL('http://localhost:8787')

describe('custom domain names', () => {
  test('checkDomain keeps a DNS host name, lowercased and without a trailing dot', () => {
    assert.equal(checkDomain('Shop.Example.COM.', BASE), 'shop.example.com')
    assert.equal(checkDomain('xn--bcher-kva.example', BASE), 'xn--bcher-kva.example')
    assert.equal(checkDomain(`${'a'.repeat(63)}.example.com`, BASE), `${'a'.repeat(63)}.example.com`)
  })

  test('checkDomain refuses ports, IP addresses, bad labels, over-long names and the base domain with a reason', () => {
    const cases: [unknown, string][] = [
      ['shop.example.com:8443', 'port_or_ip'],
      ['[::1]', 'port_or_ip'],
      ['10.0.0.1', 'ip'],
      ['shop.example.123', 'ip'],
      ['shop.0x7f', 'ip'],
      ['example', 'syntax'],
      ['-shop.example.com', 'syntax'],
      ['shop-.example.com', 'syntax'],
      ['shop..example.com', 'syntax'],
      ['shop_x.example.com', 'syntax'],
      ['bücher.example', 'syntax'],
      ['shop.example.com/path', 'syntax'],
      [`${'a'.repeat(64)}.example.com`, 'syntax'],
      [`${'abcdefghi.'.repeat(25)}example.com`, 'length'],
      ['', 'syntax'],
      [42, 'syntax'],
      ['localhost', 'syntax'],
      ['shop.localhost', 'base_domain'],
      ['auth.localhost', 'base_domain'],
    ]
    for (const [value, reason] of cases) {
      assert.throws(() => checkDomain(value, BASE), (error: unknown) => {
        assert.ok(error instanceof ServiceError, String(value))
        assert.equal(error.code, 'VALIDATION_FAILED', String(value))
        assert.deepEqual(error.details, { field: 'domain', reason }, String(value))
        return true
      })
    }
    assert.throws(() => checkDomain('apps.example.com', new URL('https://apps.example.com')), /outside the platform's base domain/)
    assert.equal(checkDomain('example.com', new URL('https://apps.example.com')), 'example.com', 'a parent of the base domain is another host')
  })

  test('isDomainName accepts host names only', () => {
    assert.equal(isDomainName('shop.example.com'), true)
    assert.equal(isDomainName('127.0.0.1'), false)
    assert.equal(isDomainName('a'.repeat(250) + '.com'), false)
  })

  test('classifyHost names a DNS name outside the base domain, on the platform\'s port, as a custom domain to look up', () => {
    assert.deepEqual(classifyHost('Shop.Example.test:8787', BASE), { kind: 'custom', domain: 'shop.example.test' })
    assert.deepEqual(classifyHost('shop.example.test:9999', BASE), { kind: 'unknown' }, 'another port')
    assert.deepEqual(classifyHost('shop.example.test', BASE), { kind: 'unknown' }, 'the default port is not the platform\'s')
    assert.deepEqual(classifyHost('10.1.2.3:8787', BASE), { kind: 'unknown' })
    assert.deepEqual(classifyHost('shop.localhost:8787', BASE), { kind: 'app', slug: 'shop' })
    const https = new URL('https://apps.example.com')
    assert.deepEqual(classifyHost('shop.example.com', https), { kind: 'custom', domain: 'shop.example.com' })
    assert.deepEqual(classifyHost('shop.example.com:443', https), { kind: 'custom', domain: 'shop.example.com' })
  })
})

describe(`custom domains through the owner API (${backend})`, () => {
  let h: Harness
  let admin: string
  let owner: string
  let stranger: string

  before(async () => {
    h = await startHarness()
    const made = await h.request('/v1/operator/users', { token: h.operatorKey, json: { email: 'ops@platform.test', company: 'Platform', platformAdmin: true } })
    assert.equal(made.status, 201)
    admin = ((await made.json()) as { token: string }).token
    owner = (await h.createOwner('owner@acme.test')).token
    stranger = (await h.createOwner('stranger@other.test', 'Other')).token
    for (const slug of ['shop', 'blog']) assert.equal((await ownerApi(h, owner, 'POST', '/v1/apps', { slug, visibility: 'public' })).status, 201)
  })
  after(async () => {
    await h.close()
  })

  test('a platform administrator maps a domain (201), and mapping it again to the same app changes nothing (200)', async () => {
    const first = await ownerApi(h, admin, 'PUT', '/v1/apps/shop/domains/Shop.Example.test')
    assert.equal(first.status, 201, first.text)
    assert.equal(first.body.domain.domain, 'shop.example.test')
    assert.equal(first.body.domain.url, 'http://shop.example.test:8787')
    assert.equal(first.body.domain.createdAt, h.clock.now().toISOString())
    const again = await ownerApi(h, admin, 'PUT', '/v1/apps/shop/domains/shop.example.test')
    assert.equal(again.status, 200)
    assert.deepEqual(again.body, first.body)
  })

  test('a domain mapped to one app is DOMAIN_TAKEN for another', async () => {
    await ownerApi(h, admin, 'PUT', '/v1/apps/shop/domains/taken.example.test')
    const res = await ownerApi(h, admin, 'PUT', '/v1/apps/blog/domains/taken.example.test')
    assert.equal(res.status, 409)
    assert.equal(res.body.error.code, 'DOMAIN_TAKEN')
  })

  test('an invalid domain is 400 VALIDATION_FAILED naming the field, and nothing is stored', async () => {
    for (const domain of ['blog.localhost', '192.168.1.1', 'nodot', 'bad_label.example.test']) {
      const res = await ownerApi(h, admin, 'PUT', `/v1/apps/blog/domains/${encodeURIComponent(domain)}`)
      assert.equal(res.status, 400, domain)
      assert.equal(res.body.error.code, 'VALIDATION_FAILED')
      assert.equal(res.body.error.details.field, 'domain')
    }
    const rows = await h.t.db.query(`select domain from platform.custom_domains where app_id = (select id from platform.apps where slug = 'blog')`)
    assert.equal(rows.length, 0)
  })

  test('the app\'s owner may not map or unmap (403 FORBIDDEN), nor may anyone else', async () => {
    for (const token of [owner, stranger]) {
      const put = await ownerApi(h, token, 'PUT', '/v1/apps/shop/domains/mine.example.test')
      assert.equal(put.status, 403)
      assert.equal(put.body.error.code, 'FORBIDDEN')
      const del = await ownerApi(h, token, 'DELETE', '/v1/apps/shop/domains/shop.example.test')
      assert.equal(del.status, 403)
    }
    const [row] = await h.t.db.query<{ n: number }>(`select count(*)::int as n from platform.custom_domains where domain in ('mine.example.test', 'shop.example.test')`)
    assert.equal(row!.n, 1, 'shop.example.test stays, mine.example.test was never mapped')
  })

  test('the app\'s owner and administrators list its domains; another owner gets 404 APP_NOT_FOUND', async () => {
    const mine = await ownerApi(h, owner, 'GET', '/v1/apps/shop/domains')
    assert.equal(mine.status, 200)
    assert.deepEqual(mine.body.domains.map((d: { domain: string }) => d.domain), ['shop.example.test', 'taken.example.test'])
    assert.deepEqual((await ownerApi(h, admin, 'GET', '/v1/apps/shop/domains')).body, mine.body)
    const theirs = await ownerApi(h, stranger, 'GET', '/v1/apps/shop/domains')
    assert.equal(theirs.status, 404)
    assert.equal(theirs.body.error.code, 'APP_NOT_FOUND')
    assert.equal((await ownerApi(h, admin, 'GET', '/v1/apps/nope/domains')).status, 404)
  })

  test('unmapping answers 204, then 404 DOMAIN_NOT_FOUND; a domain of another app is not unmapped through this one', async () => {
    await ownerApi(h, admin, 'PUT', '/v1/apps/blog/domains/gone.example.test')
    const wrongApp = await ownerApi(h, admin, 'DELETE', '/v1/apps/shop/domains/gone.example.test')
    assert.equal(wrongApp.status, 404)
    assert.equal(wrongApp.body.error.code, 'DOMAIN_NOT_FOUND')
    assert.equal((await ownerApi(h, admin, 'DELETE', '/v1/apps/blog/domains/gone.example.test')).status, 204)
    const again = await ownerApi(h, admin, 'DELETE', '/v1/apps/blog/domains/gone.example.test')
    assert.equal(again.status, 404)
    assert.equal(again.body.error.code, 'DOMAIN_NOT_FOUND')
  })

  test(`an app has at most ${MAX_DOMAINS_PER_APP} custom domains (409 DOMAIN_LIMIT_REACHED)`, async () => {
    assert.equal((await ownerApi(h, owner, 'POST', '/v1/apps', { slug: 'many', visibility: 'public' })).status, 201)
    for (let i = 0; i < MAX_DOMAINS_PER_APP; i++) {
      assert.equal((await ownerApi(h, admin, 'PUT', `/v1/apps/many/domains/d${i}.example.test`)).status, 201)
    }
    const over = await ownerApi(h, admin, 'PUT', '/v1/apps/many/domains/one-more.example.test')
    assert.equal(over.status, 409)
    assert.equal(over.body.error.code, 'DOMAIN_LIMIT_REACHED')
    assert.equal((await ownerApi(h, owner, 'GET', '/v1/apps/many/domains')).body.domains.length, MAX_DOMAINS_PER_APP)
  })
})
