// The `service` global, served at {app_url}/_service/sdk.js. Same-origin only: the browser's
// HttpOnly session cookie authenticates every call, so no token material ever reaches page
// scripts. `auth.currentUser()`, `auth.signInUrl()`, `auth.signOut()`, `functions.call()`,
// `functions.stream()`, `files.upload()`, `files.download()`, `files.info()`, `data.search()`,
// `notifications.subscribe()`, `notifications.unsubscribe()`, `realtime.channel()`, `ServiceError`.
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

  const REALTIME_PATH = '/_service/realtime'
  /** Closes after which the socket is not opened again: the session ended, access withdrawn, the app gone. */
  const FINAL_CLOSES = { 4401: 'AUTH_REQUIRED', 4403: 'ACCESS_DENIED', 4404: 'APP_NOT_FOUND' }
  const CHANGE_EVENTS = ['insert', 'update', 'delete']
  const REALTIME_EVENTS = CHANGE_EVENTS.concat(['broadcast', 'presence', 'gap', 'status'])
  /** Reconnect delays: doubling from 500 ms to 30 s, each with up to half again at random. */
  const BACKOFF_FIRST_MS = 500
  const BACKOFF_MAX_MS = 30000
  const HEARTBEAT_MS = 25000
  const HEARTBEAT_TIMEOUT_MS = 10000
  const JOIN_TIMEOUT_MS = 15000

  /**
   * The page's one realtime socket, shared by its channels: opened by the first subscribe,
   * closed by the last unsubscribe, opened again with backoff after a drop. On each
   * (re)connection every channel joins again, resuming its row changes from the last position
   * it saw, so a short drop loses nothing (or the channel is told of a gap).
   */
  const hub = {
    socket: null,
    open: false,
    channels: new Map(),
    pending: new Map(),
    nextRef: 1,
    attempt: 0,
    retryTimer: null,
    heartbeat: null,
    heartbeatRef: null,
    final: null,
  }

  function realtimeUrl() {
    return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + REALTIME_PATH
  }

  function hubRequest(frame) {
    const ref = String(hub.nextRef++)
    frame.ref = ref
    return new Promise(function (resolve, reject) {
      if (!hub.open) {
        reject(new ServiceError('REALTIME_DISCONNECTED', 'the realtime socket is not connected; try again once the channel is subscribed'))
        return
      }
      hub.pending.set(ref, { resolve: resolve, reject: reject })
      hub.socket.send(JSON.stringify(frame))
    })
  }

  function hubConnect() {
    if (hub.socket || hub.retryTimer) return
    hub.final = null
    let socket
    try {
      socket = new WebSocket(realtimeUrl())
    } catch (error) {
      hubDropped(1006)
      return
    }
    hub.socket = socket
    socket.onopen = function () {
      hub.open = true
      hub.attempt = 0
      startHeartbeat()
      hub.channels.forEach(function (channel) { channel._join() })
    }
    socket.onmessage = function (event) {
      let frame
      try { frame = JSON.parse(event.data) } catch (_) { return }
      hubFrame(frame)
    }
    socket.onclose = function (event) {
      if (hub.socket !== socket) return
      hubDropped(event.code)
    }
  }

  function startHeartbeat() {
    clearInterval(hub.heartbeat)
    hub.heartbeat = setInterval(function () {
      if (!hub.open) return
      if (hub.heartbeatRef !== null) {
        // The last ping went unanswered: the connection is gone without a close.
        const socket = hub.socket
        hubDropped(1006)
        try { socket.close(4000, 'no heartbeat') } catch (_) {}
        return
      }
      hub.heartbeatRef = 'hb' + hub.nextRef++
      hub.socket.send(JSON.stringify({ type: 'ping', ref: hub.heartbeatRef }))
    }, HEARTBEAT_MS)
  }

  function hubDropped(code) {
    const socket = hub.socket
    if (socket) socket.onopen = socket.onmessage = socket.onclose = null
    hub.socket = null
    hub.open = false
    hub.heartbeatRef = null
    clearInterval(hub.heartbeat)
    const error = new ServiceError(FINAL_CLOSES[code] || 'REALTIME_DISCONNECTED', 'the realtime socket closed (' + code + ')', { closeCode: code })
    hub.pending.forEach(function (waiter) { waiter.reject(error) })
    hub.pending.clear()
    if (FINAL_CLOSES[code]) {
      hub.final = error
      hub.channels.forEach(function (channel) { channel._closed(error) })
      hub.channels.clear()
      return
    }
    if (hub.channels.size === 0) return
    hub.channels.forEach(function (channel) { channel._status('RECONNECTING') })
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * Math.pow(2, hub.attempt))
    hub.attempt += 1
    hub.retryTimer = setTimeout(function () {
      hub.retryTimer = null
      hubConnect()
    }, delay + Math.random() * delay / 2)
  }

  function hubFrame(frame) {
    if (frame.type === 'pong' && frame.ref === hub.heartbeatRef) {
      hub.heartbeatRef = null
      return
    }
    const waiter = frame.ref !== undefined ? hub.pending.get(frame.ref) : undefined
    if (waiter) {
      hub.pending.delete(frame.ref)
      if (frame.type === 'error') waiter.reject(new ServiceError(frame.code, frame.message, frame.details))
      else waiter.resolve(frame)
      return
    }
    const channel = frame.channel !== undefined ? hub.channels.get(frame.channel) : undefined
    if (channel) channel._frame(frame)
  }

  function hubLeft(channel) {
    if (hub.channels.get(channel.name) === channel) hub.channels.delete(channel.name)
    if (hub.channels.size > 0) return
    clearTimeout(hub.retryTimer)
    hub.retryTimer = null
    const socket = hub.socket
    hubDropped(1000)
    if (socket) socket.close(1000, 'no channels left')
  }

  function copyPresence(state) {
    const copy = {}
    Object.keys(state).forEach(function (key) { copy[key] = state[key].map(function (meta) { return { ref: meta.ref, state: meta.state } }) })
    return copy
  }

  /**
   * One channel of the page's realtime socket. Listeners are added with `on` before
   * `subscribe()`:
   *   service.realtime.channel('list-4')
   *     .on('insert', { table: 'items', filter: 'list_id=eq.4' }, (change) => add(change.record))
   *     .on('delete', { table: 'items' }, (change) => remove(change.key))
   *     .on('broadcast', { event: 'cursor' }, (message) => moveCursor(message.payload))
   *     .on('presence', { event: 'sync' }, () => showPeople(channel.presenceState()))
   *     .subscribe()
   */
  function Channel(name, options) {
    this.name = name
    this.private = !!(options && options.private)
    this.broadcastSelf = !!(options && options.broadcast && options.broadcast.self)
    this.listeners = []
    this.changes = []
    this.state = 'idle'
    this.position = null
    this.resumeFloor = null
    this.presence = {}
    this.tracked = null
    this.statusCallback = null
    this.waiter = null
  }

  Channel.prototype.on = function (type, filter, callback) {
    if (typeof filter === 'function') {
      callback = filter
      filter = {}
    }
    filter = filter || {}
    if (REALTIME_EVENTS.indexOf(type) === -1) {
      throw new ServiceError('REALTIME_MESSAGE_INVALID', 'on() takes insert, update, delete, broadcast, presence, gap or status', { type: type })
    }
    if (typeof callback !== 'function') throw new ServiceError('REALTIME_MESSAGE_INVALID', 'on() needs a callback')
    const listener = { type: type, filter: filter, callback: callback, id: null }
    if (CHANGE_EVENTS.indexOf(type) !== -1) {
      if (this.state !== 'idle') {
        throw new ServiceError('REALTIME_ALREADY_SUBSCRIBED', 'add row-change listeners before subscribe() (or unsubscribe, add, subscribe again)')
      }
      if (typeof filter.table !== 'string') throw new ServiceError('REALTIME_MESSAGE_INVALID', 'a row-change listener names its table: on(\'insert\', { table }, callback)')
      listener.id = String(this.changes.length)
      this.changes.push({ id: listener.id, event: type, table: filter.table, filter: filter.filter })
    }
    this.listeners.push(listener)
    return this
  }

  Channel.prototype._emit = function (type, value, test) {
    this.listeners.forEach(function (listener) {
      if (listener.type !== type || (test && !test(listener))) return
      try { listener.callback(value) } catch (error) { setTimeout(function () { throw error }) }
    })
  }

  Channel.prototype._status = function (status, error) {
    if (this.state === 'closed') return
    this._emit('status', { status: status, error: error })
    if (this.statusCallback) this.statusCallback(status, error)
  }

  Channel.prototype._join = function () {
    const channel = this
    const resume = channel.position
    const frame = {
      type: 'join', channel: channel.name,
      config: { private: channel.private, broadcast: { self: channel.broadcastSelf }, changes: channel.changes },
    }
    if (resume !== null && channel.changes.length > 0) frame.resume = resume
    hubRequest(frame).then(function (joined) {
      if (channel.state === 'closed') return
      const first = channel.position === null
      channel.resumeFloor = resume
      if (channel.position === null || joined.position > channel.position) {
        if (resume === null || joined.gap) channel.position = joined.position
      }
      if (joined.gap) channel._emit('gap', { position: joined.position })
      channel.state = 'joined'
      if (channel.tracked !== null) hubRequest({ type: 'track', channel: channel.name, state: channel.tracked }).catch(function () {})
      channel._status('SUBSCRIBED')
      if (first && channel.waiter) channel.waiter.resolve(channel)
      channel.waiter = null
    }, function (error) {
      if (channel.state === 'closed' || error.code === 'REALTIME_DISCONNECTED') return
      channel._closed(error)
    })
  }

  Channel.prototype._closed = function (error) {
    if (this.state === 'closed') return
    this._status(error ? 'CHANNEL_ERROR' : 'CLOSED', error)
    this.state = 'closed'
    if (this.waiter) this.waiter.reject(error || new ServiceError('REALTIME_CLOSED', 'the channel was closed'))
    this.waiter = null
    hubLeft(this)
  }

  Channel.prototype._frame = function (frame) {
    const channel = this
    switch (frame.type) {
      case 'change': {
        if (channel.resumeFloor !== null && frame.position <= channel.resumeFloor) return
        if (channel.position === null || frame.position > channel.position) channel.position = frame.position
        const change = { event: frame.event, table: frame.table, key: frame.key, position: frame.position }
        if (frame.record !== undefined) change.record = frame.record
        channel._emit(frame.event, change, function (listener) { return listener.id === frame.subscription })
        return
      }
      case 'gap':
        channel._emit('gap', { position: frame.position })
        return
      case 'broadcast':
        channel._emit('broadcast', { event: frame.event, payload: frame.payload }, function (listener) {
          return listener.filter.event === undefined || listener.filter.event === frame.event
        })
        return
      case 'presence': {
        if (frame.event === 'sync') {
          channel.presence = {}
          Object.keys(frame.state).forEach(function (key) { channel.presence[key] = frame.state[key].slice() })
        } else {
          const list = (channel.presence[frame.key] || []).filter(function (meta) { return meta.ref !== frame.ref })
          if (frame.event === 'join') list.push({ ref: frame.ref, state: frame.state })
          if (list.length > 0) channel.presence[frame.key] = list
          else delete channel.presence[frame.key]
        }
        const event = { event: frame.event, key: frame.key, ref: frame.ref, state: frame.state, presences: copyPresence(channel.presence) }
        channel._emit('presence', event, function (listener) { return listener.filter.event === undefined || listener.filter.event === frame.event })
        return
      }
      case 'error':
        channel._emit('status', { status: 'CHANNEL_ERROR', error: new ServiceError(frame.code, frame.message, frame.details) })
        return
    }
  }

  /**
   * Joins the channel; resolves once joined, rejects with a ServiceError (REALTIME_TABLE_NOT_FOUND,
   * REALTIME_FILTER_INVALID, AUTH_REQUIRED for a private channel signed out, REALTIME_UNAVAILABLE
   * when the platform cannot be reached in 15 s, …). `onStatus(status, error)` is told
   * SUBSCRIBED, RECONNECTING, CHANNEL_ERROR or CLOSED as they happen.
   */
  Channel.prototype.subscribe = function (onStatus) {
    const channel = this
    if (channel.state !== 'idle') return Promise.reject(new ServiceError('REALTIME_ALREADY_SUBSCRIBED', 'this channel object was subscribed already; make a new one'))
    const current = hub.channels.get(channel.name)
    if (current && current !== channel) {
      return Promise.reject(new ServiceError('REALTIME_ALREADY_JOINED', 'this page already has a subscribed channel named ' + channel.name + '; unsubscribe it first'))
    }
    channel.statusCallback = typeof onStatus === 'function' ? onStatus : null
    channel.state = 'joining'
    hub.channels.set(channel.name, channel)
    return new Promise(function (resolve, reject) {
      const timer = setTimeout(function () {
        channel._closed(new ServiceError('REALTIME_UNAVAILABLE', 'could not join ' + channel.name + ' in ' + JOIN_TIMEOUT_MS / 1000 + ' s'))
      }, JOIN_TIMEOUT_MS)
      channel.waiter = {
        resolve: function (value) { clearTimeout(timer); resolve(value) },
        reject: function (error) { clearTimeout(timer); reject(error) },
      }
      if (hub.open) channel._join()
      else hubConnect()
    })
  }

  /** Leaves the channel (its presence too); the socket closes with the page's last channel. */
  Channel.prototype.unsubscribe = async function () {
    if (this.state === 'closed' || this.state === 'idle') return
    const open = hub.open && this.state === 'joined'
    this.state = 'closed'
    if (this.waiter) this.waiter.reject(new ServiceError('REALTIME_CLOSED', 'unsubscribed before the channel was joined'))
    this.waiter = null
    try {
      if (open) await hubRequest({ type: 'leave', channel: this.name })
    } finally {
      hubLeft(this)
    }
  }

  /** Broadcasts `{ event, payload }` to the channel's other clients; resolves once the platform has relayed it. */
  Channel.prototype.send = async function (message) {
    if (this.state !== 'joined') throw new ServiceError('REALTIME_NOT_JOINED', 'subscribe to the channel before sending')
    const event = message && message.event
    await hubRequest({ type: 'broadcast', channel: this.name, event: event, payload: message && message.payload !== undefined ? message.payload : null })
  }

  /** Shows this client in the channel's presence with `state` (kept and shown again after a reconnect). */
  Channel.prototype.track = async function (state) {
    if (this.state !== 'joined') throw new ServiceError('REALTIME_NOT_JOINED', 'subscribe to the channel before tracking presence')
    this.tracked = state === undefined ? {} : state
    const answer = await hubRequest({ type: 'track', channel: this.name, state: this.tracked })
    return { key: answer.key }
  }

  Channel.prototype.untrack = async function () {
    this.tracked = null
    if (this.state === 'joined') await hubRequest({ type: 'untrack', channel: this.name })
  }

  /** Who is in the channel: `{ [key]: [{ ref, state }] }` (key: a person's id, or anon:… for a signed-out client). */
  Channel.prototype.presenceState = function () {
    return copyPresence(this.presence)
  }

  /**
   * Realtime over one WebSocket per page: row changes of the app's tables (only rows this
   * person may read, as the data API would answer them), broadcast between the app's
   * clients, and presence. `channel(name, { private, broadcast: { self } })` makes a channel;
   * see Channel above.
   */
  const realtime = Object.freeze({
    channel(name, options) {
      return new Channel(String(name), options)
    },
  })

  Object.defineProperty(window, 'service', {
    value: Object.freeze({ auth, functions, files, data, notifications, realtime, ServiceError }),
    writable: false,
    configurable: false,
    enumerable: true,
  })
})()
