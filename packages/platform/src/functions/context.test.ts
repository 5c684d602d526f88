// Context calls between a Function in real Deno and the platform's `onContextCall`:
// members, methods and args arrive as called; replies (bytes included) and typed errors
// come back; each call carries its own invocation's identity; and a capability is
// refused once its invocation has ended, whether the worker or a forged frame uses it.

import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { FunctionResult } from './failures.ts'
import type { ContextCall } from './pool.ts'
import { metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

const FIXTURES = {
  'functions/context.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ log, secrets }) {
        log.info('x', { a: 1 })
        const value = await secrets.get('K')
        return { value }
      },
    })`,
  'functions/members.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler(context) {
        const row = await context.data.table('tasks').getById('t1')
        const listed = await context.data.table('tasks').list({ where: { done: false }, limit: 5 })
        const job = await context.jobs.enqueue('reminders', { taskId: 't1' }, { idempotencyKey: 'k1' })
        const provider = await context.integrations.use('crm').call('contacts.find', { email: 'a@b.c' })
        const ref = await context.files.upload({ data: new Uint8Array([1, 2, 3]), name: 'a.bin', contentType: 'application/octet-stream' })
        const blobRef = await context.files.upload({ data: new Blob(['hi']), name: 'b.txt', contentType: 'text/plain' })
        const download = await context.files.download(ref)
        return { row, listed, job, provider, ref, blobRef, bytes: Array.from(download.data), isBytes: download.data instanceof Uint8Array }
      },
    })`,
  'functions/meta.ts': `
    import { defineFunction, object } from '@service/server'
    export default defineFunction({
      input: object({}),
      async handler({ http, job, integration, environment, user }) {
        const delivered = await integration.emit({ type: 'contact.created', id: 'c1', data: { name: 'Ada' } })
        return {
          method: http.method,
          pathname: http.pathname,
          params: http.params,
          tag: http.query.get('tag'),
          tags: http.query.getAll('tag'),
          frozen: Object.isFrozen(http) && Object.isFrozen(http.params),
          job,
          integration: { connectionId: integration.connectionId, trigger: integration.trigger, operation: integration.operation, consumerAppId: integration.consumerAppId },
          delivered,
          environment,
          user,
        }
      },
    })`,
  'functions/who.ts': `
    import { defineFunction, number, object } from '@service/server'
    export default defineFunction({
      input: object({ delayMs: number() }),
      async handler({ input, user, requestId, secrets }) {
        await new Promise((resolve) => setTimeout(resolve, input.delayMs))
        const secret = await secrets.get('WHO')
        return { user: user?.id ?? null, requestId, secret, pid: Deno.pid }
      },
    })`,
  'functions/typed-reply.ts': `
    import { defineFunction, enum as enumOf, isServiceError, object } from '@service/server'
    export default defineFunction({
      input: object({ mode: enumOf(['catch', 'uncaught']) }),
      async handler({ input, data, secrets }) {
        if (input.mode === 'uncaught') return await data.table('tasks').getById('x')
        const outcomes = []
        for (const run of [() => data.table('tasks').getById('x'), () => secrets.get('BROKEN')]) {
          try { await run() } catch (error) {
            outcomes.push({ typed: isServiceError(error), name: error.name, code: error.code ?? null, status: error.status ?? null, details: error.details ?? null, message: error.message })
          }
        }
        return outcomes
      },
    })`,
  'functions/stash.ts': `
    import { defineFunction, enum as enumOf, object } from '@service/server'
    let stashed
    export default defineFunction({
      input: object({ mode: enumOf(['stash', 'use']) }),
      async handler(context) {
        if (input(context) === 'stash') { stashed = context; return { stashed: true } }
        try {
          await stashed.secrets.get('LATE')
          return { refused: false }
        } catch (error) {
          return { refused: true, name: error.name, message: error.message }
        }
      },
    })
    function input(context) { return context.input.mode }`,
  'functions/forge.ts': `
    import { defineFunction, enum as enumOf, object } from '@service/server'
    // Stands in for hostile code in the worker: it rewrites outgoing frames with a toJSON on
    // Object.prototype (the worker's JSON.stringify is bound before Functions load, but it
    // still calls toJSON), first to learn a capability, later to reuse it after its invocation ended.
    let stolen = null
    let forgeNext = null
    Object.prototype.toJSON = function () {
      if (this && this.type === 'call') {
        if (stolen === null) stolen = { capability: this.capability, invocationId: this.invocationId }
        else if (forgeNext) { const forged = { ...this, ...forgeNext }; forgeNext = null; return forged }
      }
      return this
    }
    export default defineFunction({
      input: object({ mode: enumOf(['capture', 'forge', 'forge-capability-only', 'forge-invocation-only']) }),
      async handler({ input, secrets }) {
        if (input.mode === 'capture') return { value: await secrets.get('A') }
        forgeNext = input.mode === 'forge'
          ? stolen
          : input.mode === 'forge-capability-only' ? { capability: stolen.capability } : { invocationId: stolen.invocationId }
        try {
          return { refused: false, value: await secrets.get('B') }
        } catch (error) {
          return { refused: true, message: error.message }
        }
      },
    })`,
}

let bundleDir: string

before(() => {
  bundleDir = writeBundle(FIXTURES)
})

after(() => {
  removeBundle(bundleDir)
})

function value(result: FunctionResult): any {
  if (!result.ok) assert.fail(`expected a value, got ${JSON.stringify(result.error)}`)
  return result.value
}

describe('context calls', () => {
  let pool: TestPool
  before(() => {
    pool = testPool(bundleDir, {
      answer: (call) => {
        if (call.member === 'secrets') return call.meta.user ? `secret-for-${call.meta.user.id}` : 'anonymous'
        if (call.member === 'files' && call.method === 'upload') return `file:${(call.args[0] as { name: string }).name}`
        if (call.member === 'files' && call.method === 'download') return { ref: call.args[0], data: new Uint8Array([9, 8, 7]) }
        if (call.member === 'data' && call.method === 'table.getById') return { id: call.args[1], title: 'Milk' }
        if (call.member === 'data') return [{ id: 't1' }]
        if (call.member === 'jobs') return { id: 'job-1', state: 'queued' }
        if (call.member === 'integrations') return { found: true }
        return null
      },
    })
  })
  after(async () => {
    await pool.close()
  })

  test('log.info and secrets.get reach onContextCall with their member, method and args, and the reply is returned', async () => {
    const meta = metaFor({ user: { id: 'alice' }, requestId: 'req-ctx' })
    const result = value(await pool.invoke({ entrypoint: 'functions/context.ts', input: {}, meta }))
    assert.deepEqual(result, { value: 'secret-for-alice' })
    const calls = pool.calls.slice(-2)
    assert.deepEqual(calls.map((call) => [call.member, call.method, call.args]), [
      ['log', 'info', ['x', { a: 1 }]],
      ['secrets', 'get', ['K']],
    ])
    for (const call of calls) {
      assert.equal(call.meta, meta, 'the call carries the pool record of the invocation')
      assert.equal(call.entrypoint, 'functions/context.ts')
      assert.equal(call.signal.aborted, true, 'the signal aborted when the invocation ended')
    }
  })

  test('sub-clients and bytes travel as dotted methods and Uint8Arrays', async () => {
    const result = value(await pool.invoke({ entrypoint: 'functions/members.ts', input: {}, meta: metaFor() }))
    assert.deepEqual(result.row, { id: 't1', title: 'Milk' })
    assert.deepEqual(result.bytes, [9, 8, 7])
    assert.equal(result.isBytes, true)
    assert.equal(result.ref, 'file:a.bin')
    const calls = pool.calls.slice(-7)
    assert.deepEqual(calls.map((call) => `${call.member}.${call.method}`), [
      'data.table.getById',
      'data.table.list',
      'jobs.enqueue',
      'integrations.use.call',
      'files.upload',
      'files.upload',
      'files.download',
    ])
    assert.deepEqual(calls[1]?.args, ['tasks', { where: { done: false }, limit: 5 }])
    assert.deepEqual(calls[2]?.args, ['reminders', { taskId: 't1' }, { idempotencyKey: 'k1' }])
    assert.deepEqual(calls[3]?.args, ['crm', 'contacts.find', { email: 'a@b.c' }])
    const uploaded = calls[4]?.args[0] as { data: unknown }
    assert.ok(uploaded.data instanceof Uint8Array)
    assert.deepEqual(Array.from(uploaded.data), [1, 2, 3])
    const blob = calls[5]?.args[0] as { data: Uint8Array }
    assert.equal(new TextDecoder().decode(blob.data), 'hi')
  })

  test('route, job and integration metadata become read-only context members', async () => {
    const meta = metaFor({
      user: null,
      environment: 'production',
      http: { method: 'GET', pathname: '/tasks/42', params: { id: '42' }, query: 'tag=a&tag=b' },
      job: { id: 'job-7', queue: 'reminders', attempt: 2 },
      integration: { connectionId: 'conn-1', trigger: 'operation', operation: 'contacts.find', consumerAppId: 'app-2' },
    })
    const result = value(await pool.invoke({ entrypoint: 'functions/meta.ts', input: {}, meta }))
    assert.deepEqual(result, {
      method: 'GET',
      pathname: '/tasks/42',
      params: { id: '42' },
      tag: 'a',
      tags: ['a', 'b'],
      frozen: true,
      job: { id: 'job-7', queue: 'reminders', attempt: 2 },
      integration: { connectionId: 'conn-1', trigger: 'operation', operation: 'contacts.find', consumerAppId: 'app-2' },
      delivered: null,
      environment: 'production',
      user: null,
    })
    const emit = pool.calls.at(-1)
    assert.deepEqual([emit?.member, emit?.method, emit?.args], ['integration', 'emit', [{ type: 'contact.created', id: 'c1', data: { name: 'Ada' } }]])
  })

  test('concurrent invocations on one worker each carry their own identity', async () => {
    const users = ['u1', 'u2', 'u3', 'u4', 'u5']
    const results = await Promise.all(
      users.map((user, index) =>
        pool.invoke({
          entrypoint: 'functions/who.ts',
          input: { delayMs: 60 - index * 10 },
          meta: metaFor({ user: { id: user }, requestId: `req-${user}` }),
        })),
    )
    const values = results.map(value)
    assert.deepEqual(values.map((result) => [result.user, result.requestId, result.secret]), users.map((user) => [user, `req-${user}`, `secret-for-${user}`]))
    assert.equal(new Set(values.map((result) => result.pid)).size, 1, 'all ran on the same worker')
  })
})

describe('errors from the platform', () => {
  let pool: TestPool
  before(() => {
    pool = testPool(bundleDir, {
      answer: (call) => {
        if (call.member === 'data') throw Object.assign(new Error('Data is not available on this platform yet'), { code: 'NOT_IMPLEMENTED', status: 501, details: { feature: 'data' } })
        throw new Error('connection to 10.0.0.5 refused, password=hunter2')
      },
    })
  })
  after(async () => {
    await pool.close()
  })

  test('a typed error reaches the Function as a ServiceError; an untyped one as a generic Error', async () => {
    const outcomes = value(await pool.invoke({ entrypoint: 'functions/typed-reply.ts', input: { mode: 'catch' }, meta: metaFor() }))
    assert.deepEqual(outcomes[0], {
      typed: true,
      name: 'ServiceError',
      code: 'NOT_IMPLEMENTED',
      status: 501,
      details: { feature: 'data' },
      message: 'Data is not available on this platform yet',
    })
    assert.equal(outcomes[1].typed, false)
    assert.equal(outcomes[1].message, 'The platform could not complete secrets.get')
    assert.ok(pool.logger.lines.some((line) => line.level === 'error' && String(line.fields?.['error']).includes('hunter2')), 'the real cause is logged')
  })

  test('an uncaught typed error from the platform fails the invocation with that error', async () => {
    const result = await pool.invoke({ entrypoint: 'functions/typed-reply.ts', input: { mode: 'uncaught' }, meta: metaFor() })
    assert.deepEqual(result, {
      ok: false,
      error: { kind: 'service', code: 'NOT_IMPLEMENTED', message: 'Data is not available on this platform yet', status: 501, details: { feature: 'data' } },
    })
  })
})

describe('capabilities', () => {
  test('a context kept past its invocation is refused and never reaches the platform', async () => {
    const pool = testPool(bundleDir, { answer: () => 'late-secret' })
    try {
      value(await pool.invoke({ entrypoint: 'functions/stash.ts', input: { mode: 'stash' }, meta: metaFor({ user: { id: 'alice' } }) }))
      const late = value(await pool.invoke({ entrypoint: 'functions/stash.ts', input: { mode: 'use' }, meta: metaFor({ user: { id: 'bob' } }) }))
      assert.equal(late.refused, true)
      assert.equal(late.name, 'ContextExpiredError')
      assert.match(late.message, /after its invocation ended/)
      assert.deepEqual(pool.calls, [], 'onContextCall saw no call, under neither identity')
    } finally {
      await pool.close()
    }
  })

  test('a forged frame with a finished invocation\'s capability or id is refused by the platform', async () => {
    const pool = testPool(bundleDir, { answer: (call: ContextCall) => `secret-for-${call.meta.user?.id}` })
    try {
      const alice = metaFor({ user: { id: 'alice' } })
      assert.deepEqual(value(await pool.invoke({ entrypoint: 'functions/forge.ts', input: { mode: 'capture' }, meta: alice })), { value: 'secret-for-alice' })
      const bob = metaFor({ user: { id: 'bob' } })
      for (const mode of ['forge', 'forge-capability-only', 'forge-invocation-only']) {
        const forged = value(await pool.invoke({ entrypoint: 'functions/forge.ts', input: { mode }, meta: bob }))
        assert.equal(forged.refused, true, mode)
        assert.match(forged.message, /refused/)
      }
      assert.deepEqual(pool.calls.map((call) => [call.args[0], call.meta.user?.id]), [['A', 'alice']], 'only the honest call reached the platform')
      assert.ok(pool.logger.lines.some((line) => line.level === 'warn' && line.message.includes('refused a context call')))
    } finally {
      await pool.close()
    }
  })
})
