// The push service worker, served at {app_url}/_service/push/sw.js and registered by
// `service.notifications.subscribe()` with the scope /_service/push/, so it controls no page
// of the app (an app's own service worker at / is left alone). It shows every push as a
// visible notification (title, body, tag) and, on a click, focuses a window of the app on
// the notification's `url` or opens one. The url is a path of this origin (the platform sends
// nothing else); anything resolving elsewhere opens the app's root instead.
'use strict'

/** The notification's URL on this origin: `url` when it stays here, else the root. */
function sameOriginUrl(url) {
  const origin = self.location.origin
  try {
    const target = new URL(typeof url === 'string' && url ? url : '/', origin)
    if (target.origin === origin) return target.href
  } catch (_) {
    // not a URL: the root below
  }
  return origin + '/'
}

/** The push's notification; a push that is not the platform's JSON still shows something. */
function readPush(data) {
  let message = null
  try {
    message = data ? data.json() : null
  } catch (_) {
    message = null
  }
  if (!message || typeof message !== 'object') message = {}
  return {
    id: typeof message.id === 'string' ? message.id : undefined,
    title: typeof message.title === 'string' && message.title ? message.title : 'New notification',
    body: typeof message.body === 'string' ? message.body : '',
    url: sameOriginUrl(message.url),
    tag: typeof message.tag === 'string' && message.tag ? message.tag : undefined,
  }
}

self.addEventListener('install', function () {
  self.skipWaiting()
})

self.addEventListener('activate', function (event) {
  event.waitUntil(self.clients.claim())
})

self.addEventListener('push', function (event) {
  const notification = readPush(event.data)
  const options = { body: notification.body, data: { id: notification.id, url: notification.url } }
  if (notification.tag !== undefined) options.tag = notification.tag
  event.waitUntil(self.registration.showNotification(notification.title, options))
})

self.addEventListener('notificationclick', function (event) {
  event.notification.close()
  const url = sameOriginUrl(event.notification.data && event.notification.data.url)
  event.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (windows) {
    for (const client of windows) {
      if (client.url === url && 'focus' in client) return client.focus()
    }
    return self.clients.openWindow(url)
  }))
})
