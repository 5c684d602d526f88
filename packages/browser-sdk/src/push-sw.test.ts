/**
 * The push service worker (push-sw.js) evaluated in a fresh V8 context with a recorded
 * `self`: a push shows a notification with the message's title, body and tag and its URL
 * made absolute on the worker's origin; a message that is not the platform's JSON still
 * shows one; a click focuses a window already on the URL or opens one, and a URL that would
 * leave the origin opens the app's root instead (the real-browser test cannot click:
 * packages/platform/src/push/browser-push-chromium.test.ts).
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { runInNewContext } from 'node:vm'
import { PUSH_SERVICE_WORKER_SOURCE } from './index.ts'

const ORIGIN = 'https://shop.example.com'

interface Worker {
  dispatch(type: string, event: Record<string, unknown>): Promise<void>
  shown: { title: string; options: Record<string, unknown> }[]
  opened: string[]
  focused: string[]
}

function load(windows: string[] = []): Worker {
  const listeners = new Map<string, (event: unknown) => void>()
  const worker: Worker = {
    shown: [], opened: [], focused: [],
    async dispatch(type, event) {
      const waits: Promise<unknown>[] = []
      listeners.get(type)!({ ...event, waitUntil: (promise: Promise<unknown>) => waits.push(promise) })
      await Promise.all(waits)
    },
  }
  const self = {
    location: new URL(`${ORIGIN}/_service/push/sw.js`),
    addEventListener: (type: string, listener: (event: unknown) => void) => listeners.set(type, listener),
    skipWaiting: () => {},
    registration: {
      showNotification: async (title: string, options: Record<string, unknown>) => {
        worker.shown.push({ title, options: JSON.parse(JSON.stringify(options)) })
      },
    },
    clients: {
      claim: async () => {},
      matchAll: async () => windows.map((url) => ({ url, focus: async () => worker.focused.push(url) })),
      openWindow: async (url: string) => worker.opened.push(url),
    },
  }
  runInNewContext(PUSH_SERVICE_WORKER_SOURCE, { self, URL })
  return worker
}

const pushOf = (message: unknown) => ({ data: { json: () => (typeof message === 'string' ? JSON.parse(message) : message) } })
const clickOf = (url: unknown) => ({ notification: { close: () => {}, data: { url } } })

describe('the push service worker', () => {
  test('a push shows the notification with its title, body, tag and its url on the worker\'s origin', async () => {
    const worker = load()
    await worker.dispatch('push', pushOf({ id: 'n1', title: 'Order shipped', body: 'On its way', url: '/orders/42?tab=1#top', tag: 'order-42' }))
    assert.deepEqual(worker.shown, [{
      title: 'Order shipped',
      options: { body: 'On its way', tag: 'order-42', data: { id: 'n1', url: `${ORIGIN}/orders/42?tab=1#top` } },
    }])
  })

  test('a push that is not the platform\'s JSON still shows a notification, opening the root', async () => {
    const worker = load()
    await worker.dispatch('push', { data: { json: () => { throw new SyntaxError('not JSON') } } })
    await worker.dispatch('push', { data: null })
    assert.deepEqual(worker.shown.map((n) => [n.title, n.options.body, (n.options.data as { url: string }).url]), [
      ['New notification', '', `${ORIGIN}/`], ['New notification', '', `${ORIGIN}/`],
    ])
  })

  test('a url leaving the origin is replaced by the root, in the push and on a click', async () => {
    const worker = load()
    for (const url of ['https://evil.example/x', '//evil.example/x', 'javascript:alert(1)']) {
      await worker.dispatch('push', pushOf({ title: 'T', body: 'B', url }))
      await worker.dispatch('notificationclick', clickOf(url))
    }
    assert.deepEqual(worker.shown.map((n) => (n.options.data as { url: string }).url), [`${ORIGIN}/`, `${ORIGIN}/`, `${ORIGIN}/`])
    assert.deepEqual(worker.opened, [`${ORIGIN}/`, `${ORIGIN}/`, `${ORIGIN}/`])
  })

  test('a click focuses a window already on the url, else opens one', async () => {
    const worker = load([`${ORIGIN}/orders/42`])
    await worker.dispatch('notificationclick', clickOf(`${ORIGIN}/orders/42`))
    await worker.dispatch('notificationclick', clickOf(`${ORIGIN}/orders/43`))
    assert.deepEqual(worker.focused, [`${ORIGIN}/orders/42`])
    assert.deepEqual(worker.opened, [`${ORIGIN}/orders/43`])
  })
})
