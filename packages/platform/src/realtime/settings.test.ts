/** REALTIME_* configuration (config.ts): defaults, every setting read, and the refusals that name the setting. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../config.ts'
import { DEFAULT_REALTIME_SETTINGS } from './index.ts'

describe('REALTIME_* settings', () => {
  test('the defaults are the documented ones, and the platform\'s own defaults for tests are the same', () => {
    const expected = { maxMessageBytes: 6000, messagesPerSecond: 50, maxBufferedBytes: 1024 * 1024, revalidateSeconds: 30, resumeSeconds: 300, maxConnections: 10_000, maxConnectionsPerClient: 1000 }
    assert.deepEqual(loadConfig({}).realtime, expected)
    assert.deepEqual(DEFAULT_REALTIME_SETTINGS, expected)
  })

  test('every setting is read', () => {
    assert.deepEqual(loadConfig({
      REALTIME_MAX_MESSAGE_BYTES: '2048', REALTIME_MESSAGES_PER_SECOND: '10', REALTIME_MAX_BUFFERED_KB: '256',
      REALTIME_REVALIDATE_SECONDS: '5', REALTIME_RESUME_SECONDS: '60', REALTIME_MAX_CONNECTIONS: '100', REALTIME_MAX_CONNECTIONS_PER_CLIENT: '7',
    }).realtime, { maxMessageBytes: 2048, messagesPerSecond: 10, maxBufferedBytes: 256 * 1024, revalidateSeconds: 5, resumeSeconds: 60, maxConnections: 100, maxConnectionsPerClient: 7 })
  })

  for (const [name, value, words] of [
    ['REALTIME_MAX_MESSAGE_BYTES', '7000', /REALTIME_MAX_MESSAGE_BYTES must be from 256 to 6000 .*NOTIFY/],
    ['REALTIME_MAX_MESSAGE_BYTES', '100', /REALTIME_MAX_MESSAGE_BYTES/],
    ['REALTIME_MESSAGES_PER_SECOND', '0', /REALTIME_MESSAGES_PER_SECOND/],
    ['REALTIME_REVALIDATE_SECONDS', 'soon', /REALTIME_REVALIDATE_SECONDS/],
  ] as const) {
    test(`${name}=${value} is refused`, () => {
      assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && words.test(error.message))
    })
  }
})
