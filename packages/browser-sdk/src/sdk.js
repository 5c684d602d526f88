// The `service` global, served at {app_url}/_service/sdk.js. Same-origin only: the browser's
// HttpOnly session cookie authenticates every call, so no token material ever reaches page
// scripts. `auth.currentUser()`, `auth.signInUrl()`, `auth.signOut()`, `ServiceError`.
(function () {
  'use strict'

  class ServiceError extends Error {
    constructor(code, message, details) {
      super(message)
      this.name = 'ServiceError'
      this.code = code
      if (details !== undefined) this.details = details
    }
  }

  async function call(path, init) {
    let response
    try {
      response = await fetch(path, Object.assign({ credentials: 'same-origin' }, init, {
        headers: Object.assign({ accept: 'application/json', 'x-service-sdk': '1' }, init && init.headers),
      }))
    } catch (error) {
      throw new ServiceError('NETWORK_ERROR', 'the platform could not be reached', { cause: String(error) })
    }
    const text = await response.text()
    let body = null
    try { body = text ? JSON.parse(text) : null } catch (_) { body = null }
    if (!response.ok) {
      const error = (body && body.error) || {}
      throw new ServiceError(error.code || 'HTTP_' + response.status, error.message || 'request failed', error.details)
    }
    return body
  }

  const auth = Object.freeze({
    /** The signed-in person `{ id, displayName?, email? }`, or null. */
    async currentUser() {
      const body = await call('/_service/auth/user')
      return body.user
    },
    /** Where to send a person to sign in; it returns to this app afterwards. */
    signInUrl() {
      return new URL('/_service/auth/sign-in', location.origin).toString()
    },
    /** Ends this browser's session (other browsers stay signed in). */
    async signOut() {
      await call('/_service/auth/sign-out', { method: 'POST' })
    },
  })

  const functions = Object.freeze({
    /** Runs the app's Function `name` with `input`; resolves to its value, rejects with a ServiceError. */
    async call(name, input) {
      return call('/_service/functions/' + encodeURIComponent(String(name)), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(input === undefined ? {} : input),
      })
    },
    async stream(name) {
      throw new ServiceError('NOT_IMPLEMENTED', 'Functions are not available on this platform yet', { function: String(name) })
    },
  })

  Object.defineProperty(window, 'service', {
    value: Object.freeze({ auth, functions, ServiceError }),
    writable: false,
    configurable: false,
    enumerable: true,
  })
})()
