// The `service` global, served at {app_url}/_service/sdk.js. Same-origin only: the browser's
// HttpOnly session cookie authenticates every call, so no token material ever reaches page
// scripts. `auth.currentUser()`, `auth.signInUrl()`, `auth.signOut()`, `functions.call()`,
// `functions.stream()`, `files.upload()`, `files.download()`, `files.info()`, `data.search()`,
// `notifications.subscribe()`, `notifications.unsubscribe()`, `ServiceError`.
(function () {
  'use strict'

  /**
   * The Functions a browser may call (access `public` or `user`) in the app release that
   * served this script: the platform writes the list in when it serves the SDK. Any other
   * name, a `system` Function's or none, is refused here before a request is sent (spec
   * 4.2), with the code the platform answers for it. The list names no `system` Function, so
   * the script reveals none. null (this file as it is stored) leaves the refusal to the
   * platform.
   */
  const CALLABLE_FUNCTIONS = /*@service:callable-functions*/null

  class ServiceError extends Error {
    constructor(code, message, details) {
      super(message)
      this.name = 'ServiceError'
      this.code = code
      if (details !== undefined) this.details = details
    }
  }

  /** Marks a Function's byte result (a streamed body) rather than a JSON value or error. */
  const STREAM_HEADER = 'x-service-stream'

  async function send(path, init) {
    try {
      return await fetch(path, Object.assign({ credentials: 'same-origin' }, init, {
        headers: Object.assign({ accept: 'application/json', 'x-service-sdk': '1' }, init && init.headers),
      }))
    } catch (error) {
      throw new ServiceError('NETWORK_ERROR', 'the platform could not be reached', { cause: String(error) })
    }
  }

  async function call(path, init) {
    return readJson(await send(path, init), path)
  }

  async function readJson(response, path) {
    if (response.headers.get(STREAM_HEADER) === '1') {
      if (response.body) response.body.cancel().catch(function () {})
      throw new ServiceError('FUNCTION_RESULT_IS_STREAM',
        'the Function returned a byte stream; read it with service.functions.stream', { function: functionName(path) })
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

  const FUNCTIONS_PATH = '/_service/functions/'

  function functionName(path) {
    return path.startsWith(FUNCTIONS_PATH) ? decodeURIComponent(path.slice(FUNCTIONS_PATH.length)) : undefined
  }

  const callable = CALLABLE_FUNCTIONS === null ? null : new Set(CALLABLE_FUNCTIONS)

  /**
   * Refuses, without a request, a name the page may not call. Unknown names and `system`
   * Functions get the same answer, as they do from the platform, so a page cannot tell them
   * apart; a new Function deployed after this script was loaded is callable after a reload.
   */
  function refuseUncallable(name) {
    if (callable === null || callable.has(name)) return
    throw new ServiceError('FUNCTION_NOT_FOUND',
      'This app has no Function named ' + name + ' that a browser may call (system Functions run only on the platform)',
      { function: name })
  }

  function invoke(name, input, accept) {
    refuseUncallable(String(name))
    return send(FUNCTIONS_PATH + encodeURIComponent(String(name)), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: accept },
      body: JSON.stringify(input === undefined ? {} : input),
    })
  }

  /**
   * The Function's bytes as a ReadableStream<Uint8Array> (also async-iterable). A stream that
   * breaks off before its end (the Function failed or timed out after its first byte, or the
   * network went) errors with ServiceError STREAM_INTERRUPTED.
   */
  function guardedStream(body, name) {
    if (!body) return iterable(new ReadableStream({ start: function (controller) { controller.close() } }))
    const reader = body.getReader()
    return iterable(new ReadableStream({
      async pull(controller) {
        let step
        try {
          step = await reader.read()
        } catch (error) {
          controller.error(new ServiceError('STREAM_INTERRUPTED', 'the stream of ' + name + ' broke off before its end', { cause: String(error) }))
          return
        }
        if (step.done) controller.close()
        else controller.enqueue(step.value)
      },
      cancel(reason) {
        return reader.cancel(reason)
      },
    }, { highWaterMark: 0 }))
  }

  /**
   * Browsers without async iteration of streams (Safari) get it here. As the native one
   * does, leaving the loop early (break, return, a throw) cancels the stream, which ends the
   * Function's invocation instead of leaving it to run until its timeout.
   */
  function iterable(stream) {
    if (typeof Symbol.asyncIterator === 'symbol' && !(Symbol.asyncIterator in stream)) {
      stream[Symbol.asyncIterator] = async function* () {
        const reader = stream.getReader()
        let ended = false
        try {
          for (;;) {
            const step = await reader.read()
            if (step.done) {
              ended = true
              return
            }
            yield step.value
          }
        } catch (error) {
          ended = true // the stream errored: nothing to cancel
          throw error
        } finally {
          if (!ended) await reader.cancel().catch(function () {})
          reader.releaseLock()
        }
      }
    }
    return stream
  }

  const functions = Object.freeze({
    /**
     * Runs the app's Function `name` with `input`; resolves to its JSON value, rejects with a
     * ServiceError. A Function that returns bytes rejects with FUNCTION_RESULT_IS_STREAM
     * (it has run; use `stream` for it). A name the browser may not call (a `system`
     * Function, or none) rejects with FUNCTION_NOT_FOUND and sends no request.
     */
    async call(name, input) {
      return readJson(await invoke(name, input, 'application/json'), FUNCTIONS_PATH + encodeURIComponent(String(name)))
    },
    /**
     * Runs a Function that returns bytes (a Response, ReadableStream or Uint8Array) and
     * resolves, at its first byte, to a ReadableStream<Uint8Array> of them, as they come:
     *   const stream = await service.functions.stream('draft', { topic })
     *   for await (const chunk of stream.pipeThrough(new TextDecoderStream())) output.append(chunk)
     * A failure before the first byte rejects with the Function's ServiceError, as `call` does.
     * A Function that returns a JSON value rejects with FUNCTION_RESULT_NOT_STREAM (it has
     * run; use `call` for it); a byte result with an error status rejects with HTTP_<status>.
     * A name the browser may not call rejects with FUNCTION_NOT_FOUND, as in `call`.
     */
    async stream(name, input) {
      const response = await invoke(name, input, '*/*')
      if (response.headers.get(STREAM_HEADER) !== '1') {
        await readJson(response, FUNCTIONS_PATH + encodeURIComponent(String(name)))
        throw new ServiceError('FUNCTION_RESULT_NOT_STREAM',
          'the Function returned a JSON value, not a byte stream; call it with service.functions.call', { function: String(name) })
      }
      if (!response.ok) {
        if (response.body) response.body.cancel().catch(function () {})
        throw new ServiceError('HTTP_' + response.status, 'the Function answered ' + response.status, { function: String(name) })
      }
      return guardedStream(response.body, String(name))
    },
  })

  const FILES_PATH = '/_service/files'

  /**
   * The signed-in person's managed files (the same files and rules as a Function's
   * `ctx.files`: a person reads and writes their own uploads; anonymous uploads are refused
   * with AUTH_REQUIRED). References are opaque strings: keep them, pass them to Functions.
   */
  const files = Object.freeze({
    /**
     * Stores `data` (a Blob or File, ArrayBuffer, typed array or string) and resolves to the
     * file's reference. The bytes stream to the platform; `name` defaults to a File's name,
     * `contentType` to its type.
     *   const ref = await service.files.upload({ data: input.files[0] })
     */
    async upload(file) {
      const data = file && file.data
      if (data === undefined || data === null) throw new ServiceError('FILE_INVALID', 'files.upload takes { data, name?, contentType? }', { field: 'data' })
      const name = file.name !== undefined ? file.name : data && typeof data.name === 'string' ? data.name : undefined
      const contentType = file.contentType !== undefined ? file.contentType
        : data && typeof data.type === 'string' && data.type ? data.type
        : typeof data === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream'
      const info = await call(FILES_PATH, {
        method: 'POST',
        headers: { 'content-type': contentType, 'x-file-name': encodeURIComponent(name === undefined ? '' : String(name)) },
        body: data,
      })
      return info.ref
    },
    /** The file's bytes (`data`, a Uint8Array) with its name, contentType, size and generation. */
    async download(ref) {
      const response = await send(FILES_PATH + '/' + encodeURIComponent(String(ref)), { headers: { accept: '*/*' } })
      if (!response.ok) return readJson(response, FILES_PATH)
      const info = JSON.parse(decodeURIComponent(response.headers.get('x-file-info') || '%7B%7D'))
      const data = new Uint8Array(await response.arrayBuffer())
      return Object.assign(info, { data: data })
    },
    /** The file's metadata: id, ref, name, contentType, size, generation, createdAt, updatedAt. */
    async info(idOrRef) {
      return call(FILES_PATH + '/' + encodeURIComponent(String(idOrRef)) + '/info')
    },
  })

  /**
   * Declared searches (service.yaml `data.search`, SDK 2.4 candidate), under this person's
   * own access (row-level security decides what is read), the same rules as a Function's
   * `ctx.data.search`: mode `fullText`, `vector` or `hybrid`; resolves to `{ hits }`.
   *   const { hits } = await service.data.search('notes', { mode: 'fullText', query: 'tea' })
   */
  const data = Object.freeze({
    async search(name, options) {
      return call('/_service/search/' + encodeURIComponent(String(name)), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(options === undefined ? null : options),
      })
    },
  })

  const PUSH_PATH = '/_service/push'
  /** The push service worker's scope: it controls no page of the app. */
  const PUSH_SCOPE = PUSH_PATH + '/'
  const JSON_HEADERS = { 'content-type': 'application/json' }
  /** How long subscribe waits for the browser's push service. */
  const SUBSCRIBE_TIMEOUT_MS = 30000

  function pushSupported() {
    return typeof navigator !== 'undefined' && 'serviceWorker' in navigator &&
      typeof PushManager !== 'undefined' && typeof Notification !== 'undefined'
  }

  function base64urlBytes(text) {
    const base64 = text.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((text.length + 3) % 4)
    const raw = atob(base64)
    const bytes = new Uint8Array(raw.length)
    for (let index = 0; index < raw.length; index += 1) bytes[index] = raw.charCodeAt(index)
    return bytes
  }

  function sameBytes(buffer, bytes) {
    if (!buffer) return false
    const view = new Uint8Array(buffer)
    if (view.length !== bytes.length) return false
    for (let index = 0; index < bytes.length; index += 1) if (view[index] !== bytes[index]) return false
    return true
  }

  /** The registration once it has an active worker (PushManager.subscribe needs one). */
  function activated(registration) {
    if (registration.active) return Promise.resolve(registration)
    const worker = registration.installing || registration.waiting
    return new Promise(function (resolve, reject) {
      if (!worker) {
        reject(new ServiceError('PUSH_SUBSCRIBE_FAILED', 'the push service worker did not install'))
        return
      }
      const settle = function () {
        if (registration.active || worker.state === 'activated') resolve(registration)
        else if (worker.state === 'redundant') reject(new ServiceError('PUSH_SUBSCRIBE_FAILED', 'the push service worker failed to install'))
      }
      worker.addEventListener('statechange', settle)
      settle()
    })
  }

  /**
   * Web push notifications for the signed-in person (sent by the app's Functions with
   * `ctx.notifications.send`). The platform's service worker, served from this origin at
   * /_service/push/sw.js with the scope /_service/push/, shows them and opens their page on a
   * click; it controls no page, so an app's own service worker is left alone.
   */
  const notifications = Object.freeze({
    /**
     * Asks the person's permission (call it from a click), subscribes this browser with the
     * platform's VAPID key and stores the subscription for the signed-in person; resolves to
     * `{ id }`. Rejects with a ServiceError: AUTH_REQUIRED (nobody signed in),
     * PUSH_NOT_SUPPORTED, PUSH_PERMISSION_DENIED, PUSH_SUBSCRIBE_FAILED (the browser or its
     * push service refused or did not answer within `timeoutMs`, default 30 s;
     * `details.name` and `details.cause` say what it said), PUSH_SUBSCRIPTION_INVALID, or
     * NETWORK_ERROR.
     *   button.onclick = () => service.notifications.subscribe()
     */
    async subscribe(options) {
      if (!pushSupported()) {
        throw new ServiceError('PUSH_NOT_SUPPORTED',
          'this browser has no web push (service workers, PushManager and Notification are needed; on iOS, add the app to the home screen first)')
      }
      const me = await call('/_service/auth/user')
      if (!me || !me.user) throw new ServiceError('AUTH_REQUIRED', 'sign in to receive notifications')
      const key = await call(PUSH_PATH + '/vapid-public-key')
      const permission = Notification.permission === 'granted' ? 'granted' : await Notification.requestPermission()
      if (permission !== 'granted') {
        throw new ServiceError('PUSH_PERMISSION_DENIED', 'notifications are not allowed for this app in this browser', { permission: permission })
      }
      let registration
      try {
        registration = await activated(await navigator.serviceWorker.register(PUSH_PATH + '/sw.js', { scope: PUSH_SCOPE }))
      } catch (error) {
        if (error instanceof ServiceError) throw error
        throw new ServiceError('PUSH_SUBSCRIBE_FAILED', 'the push service worker could not be registered', { name: error && error.name, cause: String(error) })
      }
      const applicationServerKey = base64urlBytes(key.publicKey)
      let subscription = await registration.pushManager.getSubscription()
      if (subscription && !sameBytes(subscription.options && subscription.options.applicationServerKey, applicationServerKey)) {
        await subscription.unsubscribe().catch(function () {})
        subscription = null
      }
      if (!subscription) {
        const timeoutMs = options && options.timeoutMs !== undefined ? Number(options.timeoutMs) : SUBSCRIBE_TIMEOUT_MS
        let timer
        try {
          // A browser that cannot reach its push service may retry for minutes: bounded here.
          subscription = await Promise.race([
            registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: applicationServerKey }),
            new Promise(function (_, reject) {
              timer = setTimeout(function () {
                const error = new Error('no answer from the push service in ' + timeoutMs + ' ms')
                error.name = 'TimeoutError'
                reject(error)
              }, timeoutMs)
            }),
          ])
        } catch (error) {
          throw new ServiceError('PUSH_SUBSCRIBE_FAILED',
            'the browser could not subscribe to its push service: ' + String(error && error.message), { name: error && error.name, cause: String(error) })
        } finally {
          clearTimeout(timer)
        }
      }
      try {
        return await call(PUSH_PATH + '/subscriptions', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify(subscription.toJSON()) })
      } catch (error) {
        await subscription.unsubscribe().catch(function () {})
        throw error
      }
    },
    /**
     * Removes this browser's subscription, from the platform and from the browser's push
     * service; resolves to whether there was one. Signed out, the platform's copy is dropped
     * at the next send (the push service answers 410 for it).
     */
    async unsubscribe() {
      if (!pushSupported()) return false
      const registration = await navigator.serviceWorker.getRegistration(PUSH_SCOPE)
      const subscription = registration ? await registration.pushManager.getSubscription() : null
      if (!subscription) return false
      try {
        await call(PUSH_PATH + '/subscriptions', { method: 'DELETE', headers: JSON_HEADERS, body: JSON.stringify({ endpoint: subscription.endpoint }) })
      } catch (error) {
        if (!(error instanceof ServiceError) || error.code !== 'AUTH_REQUIRED') {
          await subscription.unsubscribe().catch(function () {})
          throw error
        }
      }
      await subscription.unsubscribe()
      return true
    },
  })

  Object.defineProperty(window, 'service', {
    value: Object.freeze({ auth, functions, files, data, notifications, ServiceError }),
    writable: false,
    configurable: false,
    enumerable: true,
  })
})()
