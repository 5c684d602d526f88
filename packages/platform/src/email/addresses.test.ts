/** Strict address parsing and the app address scheme (addresses.ts); the outbound and inbound tests use them through real SMTP. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { aliasAddress, appMailDomain, inboundTarget, parseAddress } from './addresses.ts'

describe('parseAddress', () => {
  test('takes a bare local@domain and lowercases only the domain', () => {
    assert.deepEqual(parseAddress('Ada.Lovelace+notes@Example.COM'), { local: 'Ada.Lovelace+notes', domain: 'example.com', address: 'Ada.Lovelace+notes@example.com' })
    assert.equal(parseAddress("o'brien_{x}@mail.example.org")?.address, "o'brien_{x}@mail.example.org")
    assert.equal(parseAddress('root@localhost')?.address, 'root@localhost')
  })

  for (const value of [
    'Ada <ada@example.com>', '"Ada" ada@example.com', 'ada@example.com, eve@example.com', 'ada@example.com\r\nBcc: eve@example.com',
    'ada@example.com\n', '\nada@example.com', 'ada@exa\rmple.com', 'ada @example.com', 'ada@example.com ', '"ada"@example.com', 'ada(c)@example.com',
    'ada@[127.0.0.1]', 'ada@', '@example.com', 'ada', 'ada..b@example.com', '.ada@example.com', 'ada.@example.com', 'ada@-example.com',
    'ada@example-.com', 'ada@exa_mple.com', 'ada@example..com', 'adä@example.com', 'ada@exämple.com', 'ada;x@example.com', 'ada<x@example.com',
    `${'a'.repeat(65)}@example.com`, `ada@${'a'.repeat(64)}.com`, `ada@${'abcdefghi.'.repeat(25)}com`, '',
  ]) {
    test(`refuses ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`, () => {
      assert.equal(parseAddress(value), null)
    })
  }
})

describe('the app address scheme', () => {
  test('an alias is <alias>@<slug>.<EMAIL_DOMAIN>', () => {
    assert.equal(appMailDomain('tasks', 'example.com'), 'tasks.example.com')
    assert.equal(aliasAddress({ alias: 'support', slug: 'tasks', emailDomain: 'example.com' }), 'support@tasks.example.com')
  })

  test('an inbound recipient names the app by its first label and the alias by its local part before +', () => {
    assert.deepEqual(inboundTarget('Support+T-42@Tasks.Example.com', 'example.com'), { slug: 'tasks', alias: 'support', tag: 'T-42', address: 'Support+T-42@tasks.example.com' })
    assert.deepEqual(inboundTarget('no-reply@my-app.localhost', 'localhost'), { slug: 'my-app', alias: 'no-reply', tag: null, address: 'no-reply@my-app.localhost' })
  })

  for (const [recipient, why] of [
    ['support@example.com', 'the bare EMAIL_DOMAIN'],
    ['support@a.tasks.example.com', 'two labels before EMAIL_DOMAIN'],
    ['support@tasks.example.org', 'another domain'],
    ['support@tasksexample.com', 'no dot before EMAIL_DOMAIN'],
    ['support@t.example.com', 'a label that is no app slug'],
    ['+tag@tasks.example.com', 'an empty alias'],
    ['Support <support@tasks.example.com>', 'a display name'],
  ] as const) {
    test(`${recipient} names no app (${why})`, () => {
      assert.equal(inboundTarget(recipient, 'example.com'), null)
    })
  }
})
