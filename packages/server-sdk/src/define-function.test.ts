// Tests for defineFunction (exactly { input, handler }, rejected otherwise at load time)
// and runFunction (input parsed before the handler; INPUT_INVALID with field paths).

import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  FunctionDefinitionError,
  SERVICE_SDK_VERSION,
  ServiceError,
  array,
  defineFunction,
  errors,
  isServiceError,
  isServiceFunction,
  literal,
  number,
  object,
  optional,
  runFunction,
  string,
  type FunctionContext,
  type InvocationContext,
} from './index.ts'

const SPEC_MEMBERS = [
  'ai', 'data', 'email', 'environment', 'files', 'http', 'input', 'integration', 'integrations',
  'job', 'jobs', 'log', 'notifications', 'requestId', 'secrets', 'user',
]

/** A context whose platform members fail loudly if a test touches one it did not set. */
function fakeContext(overrides: Partial<InvocationContext> = {}): InvocationContext {
  const unused = new Proxy({}, {
    get(_target, property) {
      throw new Error(`the test did not expect context member use: ${String(property)}`)
    },
  })
  return {
    http: null,
    user: null,
    job: null,
    data: unused as InvocationContext['data'],
    files: unused as InvocationContext['files'],
    ai: unused as InvocationContext['ai'],
    email: unused as InvocationContext['email'],
    notifications: unused as InvocationContext['notifications'],
    jobs: unused as InvocationContext['jobs'],
    integrations: unused as InvocationContext['integrations'],
    secrets: unused as InvocationContext['secrets'],
    log: { debug() {}, info() {}, warn() {}, error() {} },
    requestId: 'req-1',
    environment: 'development',
    integration: null,
    ...overrides,
  }
}

function definitionError(build: () => unknown): FunctionDefinitionError {
  try {
    build()
  } catch (error) {
    assert.ok(error instanceof FunctionDefinitionError, String(error))
    return error
  }
  assert.fail('expected a FunctionDefinitionError')
}

test('defineFunction returns a frozen, branded definition carrying the SDK version', () => {
  const input = object({ title: string() })
  const handler = () => 'ok'
  const definition = defineFunction({ input, handler })
  assert.equal(definition.__serviceFunction, true)
  assert.equal(definition.sdkVersion, SERVICE_SDK_VERSION)
  assert.equal(definition.input, input)
  assert.equal(definition.handler, handler)
  assert.equal(Object.isFrozen(definition), true)
  assert.deepEqual(Object.keys(definition).sort(), ['__serviceFunction', 'handler', 'input', 'sdkVersion'])
  assert.equal(isServiceFunction(definition), true)
})

test('defineFunction rejects each malformed definition with a message naming the problem', () => {
  const input = object({})
  const handler = () => 1
  const cases: [unknown, RegExp][] = [
    [handler, /not a bare handler function/],
    [async () => 1, /not a bare handler function/],
    [undefined, /takes an object \{ input, handler \}, got undefined/],
    [null, /got null/],
    [[input, handler], /got an array/],
    ['createTask', /got a string/],
    [new (class Definition { input = input; handler = handler })(), /got an object/],
    [{ handler }, /missing "input"/],
    [{ input: undefined, handler }, /missing "input"/],
    [{ input }, /missing "handler"/],
    [{ input, handler, name: 'createTask' }, /unknown key "name"; a definition has only input and handler/],
    [{ input, handler, access: 'user', routes: [] }, /unknown keys "access", "routes"/],
    [{ input, handler, [Symbol('meta')]: 1 }, /unknown key Symbol\(meta\)/],
    [{ input, handler: 'handler' }, /"handler" must be a function, got a string/],
    [{ input, handler: null }, /"handler" must be a function, got null/],
    [{ input: { type: 'object', properties: {} }, handler }, /"input" must be a schema from @service\/server/],
    [{ input: { kind: 'object', shape: {}, parse: () => ({ ok: true, value: {} }), describe: () => ({}) }, handler }, /must be a schema from @service\/server/],
    [{ input: string(), handler }, /"input" must be an object\(\{ \.\.\. \}\) schema .*got string\(\)/],
    [{ input: optional(object({})), handler }, /got optional\(\)/],
  ]
  for (const [definition, message] of cases) {
    const error = definitionError(() => defineFunction(definition as never))
    assert.match(error.message, /^defineFunction: /)
    assert.match(error.message, message)
  }
})

test('defineFunction lists every problem at once', () => {
  const error = definitionError(() => defineFunction({ name: 'x', handler: 3 } as never))
  assert.equal(error.problems.length, 3)
  assert.match(error.problems[0] ?? '', /unknown key "name"/)
  assert.match(error.problems[1] ?? '', /missing "input"/)
  assert.match(error.problems[2] ?? '', /"handler" must be a function, got a number/)
})

test('isServiceFunction checks the brand and shape, not the class', () => {
  assert.equal(isServiceFunction(null), false)
  assert.equal(isServiceFunction({ input: object({}), handler: () => 1 }), false)
  assert.equal(isServiceFunction({ __serviceFunction: true, sdkVersion: '2.6.0', input: {}, handler: () => 1 }), false)
  // Another copy of the SDK builds the same shape; it is recognised.
  const foreign = { __serviceFunction: true, sdkVersion: '2.5.0', input: { parse: () => ({ ok: true, value: {} }) }, handler: () => 1 }
  assert.equal(isServiceFunction(foreign), true)
})

test('runFunction parses input, then calls the handler with exactly the spec members plus input', async () => {
  let received: FunctionContext<unknown> | undefined
  const definition = defineFunction({
    input: object({ title: string(), tags: optional(array(string())) }),
    handler(context) {
      received = context
      return { title: context.input.title.toUpperCase() }
    },
  })
  const raw = { title: 'buy milk' }
  const platform = { ...fakeContext({ user: { id: 'u1' } }), internalToken: 'must not leak' }
  const result = await runFunction(definition, raw, platform)
  assert.deepEqual(result, { title: 'BUY MILK' })
  assert.ok(received)
  assert.deepEqual(Object.keys(received).sort(), SPEC_MEMBERS)
  assert.deepEqual(received.input, { title: 'buy milk' })
  assert.notEqual(received.input, raw)
  assert.deepEqual(received.user, { id: 'u1' })
  assert.equal(received.requestId, 'req-1')
  assert.equal(Object.isFrozen(received), true)
})

test('runFunction rejects bad input with INPUT_INVALID and field paths, and the handler never runs', async () => {
  let calls = 0
  const definition = defineFunction({
    input: object({ items: array(object({ title: string() })), count: number({ integer: true }) }),
    handler() {
      calls++
      return null
    },
  })
  await assert.rejects(
    runFunction(definition, { items: [{ title: 'a' }, { title: 'b' }, { title: 3 }], count: 1.5, extra: true }, fakeContext()),
    (error: unknown) => {
      assert.ok(error instanceof ServiceError)
      assert.equal(error.code, 'INPUT_INVALID')
      assert.equal(error.status, 400)
      assert.equal(error.retryable, false)
      assert.deepEqual(error.details, {
        issues: [
          { path: ['items', 2, 'title'], code: 'INVALID_TYPE', message: 'expected a string, got a number' },
          { path: ['count'], code: 'NOT_INTEGER', message: 'must be an integer, got 1.5' },
          { path: ['extra'], code: 'UNKNOWN_FIELD', message: 'is not a known field; expected only items, count' },
        ],
      })
      assert.equal(
        error.message,
        'The input is invalid: items[2].title expected a string, got a number; count must be an integer, got 1.5; ' +
          'extra is not a known field; expected only items, count',
      )
      return true
    },
  )
  await assert.rejects(runFunction(definition, null, fakeContext()), (error: unknown) => {
    assert.ok(isServiceError(error))
    assert.equal(error.message, 'The input is invalid: the input expected an object, got null')
    return true
  })
  assert.equal(calls, 0)
})

test('the INPUT_INVALID message shows five issues and counts the rest; details keep them all', async () => {
  const definition = defineFunction({ input: object({ list: array(number()) }), handler: () => 1 })
  await assert.rejects(runFunction(definition, { list: ['a', 'b', 'c', 'd', 'e', 'f', 'g'] }, fakeContext()), (error: unknown) => {
    assert.ok(error instanceof ServiceError)
    assert.match(error.message, /list\[4\] expected a number, got a string \(and 2 more\)$/)
    assert.equal((error.details?.['issues'] as unknown[]).length, 7)
    return true
  })
})

test('a cron target with an empty-object schema fails with 400 before its handler (spec 4.2)', async () => {
  let ran = false
  const wrong = defineFunction({ input: object({}), handler: () => { ran = true } })
  const envelope = { source: 'service.cron', name: 'nightly', scheduledAt: '2025-01-01T03:00:00Z' }
  await assert.rejects(runFunction(wrong, envelope, fakeContext()), { code: 'INPUT_INVALID', status: 400 })
  assert.equal(ran, false)
  const right = defineFunction({
    input: object({ source: literal('service.cron'), name: string(), scheduledAt: string() }),
    handler: ({ input }) => input.name,
  })
  assert.equal(await runFunction(right, envelope, fakeContext()), 'nightly')
})

test('errors the handler throws reach the caller unchanged', async () => {
  const thrown = errors.conflict('ALREADY_DONE', 'The task is already done')
  const definition = defineFunction({
    input: object({}),
    async handler() {
      throw thrown
    },
  })
  await assert.rejects(runFunction(definition, {}, fakeContext()), (error: unknown) => error === thrown)
  const crash = new TypeError('boom')
  const sync = defineFunction({
    input: object({}),
    handler() {
      throw crash
    },
  })
  await assert.rejects(runFunction(sync, {}, fakeContext()), (error: unknown) => error === crash)
})

test('runFunction reads context members through getters and prototypes', async () => {
  const { requestId: _ignored, ...own } = fakeContext()
  const prototype = {
    get requestId() {
      return 'from-getter'
    },
  }
  const context = Object.create(prototype, Object.getOwnPropertyDescriptors(own)) as InvocationContext
  const definition = defineFunction({ input: object({}), handler: ({ requestId }) => requestId })
  assert.equal(await runFunction(definition, {}, context), 'from-getter')
})

test('runFunction refuses something that is not a definition', async () => {
  await assert.rejects(runFunction({ input: object({}), handler: () => 1 } as never, {}, fakeContext()), TypeError)
})
