/** EMAIL_* and INBOUND_* configuration (config.ts): defaults and the refusals that name the setting. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'

describe('EMAIL_* and INBOUND_* settings', () => {
  test('by default addresses hang under the base domain, inbound SMTP is off and the limits are the documented ones', () => {
    assert.deepEqual(loadConfig({ SERVICE_BASE_URL: 'https://Example.com', SMTP_URL: 'smtp://mail.example.com:587' }).email, {
      domain: 'example.com', maxRecipients: 50, maxMessageBytes: 512 * 1024, recipientsPerHour: 1000,
      inboundPort: null, inboundHost: '127.0.0.1', inboundMaxBytes: 10 * 1024 * 1024, inboundPerHour: 1000,
    })
  })

  test('without SMTP_URL a base URL that is not this machine\'s is refused (its /_dev/mail would serve sign-in links), unless SERVICE_DEV_MAILBOX=public', () => {
    for (const base of ['https://platform.example.com', 'http://192.168.1.5:8787', 'http://10.0.0.1', 'http://localhost.example.com']) {
      assert.throws(() => loadConfig({ SERVICE_BASE_URL: base }), (error: unknown) =>
        error instanceof ConfigError && /SMTP_URL is unset/.test(error.message) && error.message.includes(`${new URL(base).origin}/_dev/mail`), base)
    }
    for (const base of ['http://localhost:8787', 'http://127.0.0.1:9000', 'http://app.localhost:8787']) {
      assert.equal(loadConfig({ SERVICE_BASE_URL: base }).smtpUrl, null, base)
    }
    assert.equal(loadConfig({ SERVICE_BASE_URL: 'https://platform.example.com', SERVICE_DEV_MAILBOX: 'public' }).baseDomain, 'platform.example.com')
    assert.equal(loadConfig({ SERVICE_BASE_URL: 'https://platform.example.com', SMTP_URL: 'smtps://mail.example.com' }).baseDomain, 'platform.example.com')
  })

  test('every setting is read', () => {
    const config = loadConfig({
      EMAIL_DOMAIN: 'Mail.Example.com', EMAIL_MAX_RECIPIENTS: '5', EMAIL_MAX_MESSAGE_KB: '64', EMAIL_RECIPIENTS_PER_HOUR: '100',
      INBOUND_SMTP_PORT: '2525', INBOUND_SMTP_HOST: '0.0.0.0', INBOUND_EMAIL_MAX_KB: '1024', INBOUND_EMAIL_PER_HOUR: '30',
    })
    assert.deepEqual(config.email, {
      domain: 'mail.example.com', maxRecipients: 5, maxMessageBytes: 64 * 1024, recipientsPerHour: 100,
      inboundPort: 2525, inboundHost: '0.0.0.0', inboundMaxBytes: 1024 * 1024, inboundPerHour: 30,
    })
    assert.equal(loadConfig({ HOST: '10.0.0.5', INBOUND_SMTP_PORT: '25' }).email.inboundHost, '10.0.0.5')
  })

  for (const [name, value, words] of [
    ['EMAIL_DOMAIN', 'not a domain', /EMAIL_DOMAIN must be a host name/],
    ['EMAIL_DOMAIN', 'a_b.example.com', /EMAIL_DOMAIN/],
    ['EMAIL_MAX_RECIPIENTS', '0', /EMAIL_MAX_RECIPIENTS/],
    ['EMAIL_MAX_RECIPIENTS', '1001', /EMAIL_MAX_RECIPIENTS must be at most 1000/],
    ['EMAIL_MAX_MESSAGE_KB', '901', /EMAIL_MAX_MESSAGE_KB must be at most 900/],
    ['EMAIL_RECIPIENTS_PER_HOUR', '10', /EMAIL_RECIPIENTS_PER_HOUR \(10\) must be at least EMAIL_MAX_RECIPIENTS \(50\)/],
    ['INBOUND_SMTP_PORT', '0', /INBOUND_SMTP_PORT must be a port from 1 to 65535/],
    ['INBOUND_SMTP_PORT', '70000', /INBOUND_SMTP_PORT/],
    ['INBOUND_EMAIL_MAX_KB', '60000', /INBOUND_EMAIL_MAX_KB must be at most 51200/],
  ] as const) {
    test(`${name}=${value} is refused naming the setting`, () => {
      assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && words.test(error.message))
    })
  }
})
