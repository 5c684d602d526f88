// Tests for the schema helpers: what each accepts and rejects, the exact issue paths and
// codes, unknown-field rejection at every depth, describe(), and definition-time errors.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  FunctionDefinitionError,
  ISSUE_CODES,
  array,
  boolean,
  enumOf,
  formatPath,
  literal,
  nullable,
  number,
  object,
  optional,
  string,
  uuid,
  type AnySchema,
  type IssueCode,
} from './index.ts'
import * as sdk from './index.ts'

/** The issues of a failed parse as [path, code] pairs, for exact comparison. */
function issuesOf(schema: AnySchema, value: unknown): [string, IssueCode][] {
  const result = schema.parse(value)
  assert.equal(result.ok, false, `expected ${JSON.stringify(value)} to be rejected`)
  if (result.ok) return []
  return result.issues.map((issue) => [formatPath(issue.path), issue.code])
}

function valueOf(schema: AnySchema, value: unknown): unknown {
  const result = schema.parse(value)
  assert.ok(result.ok, `expected ${JSON.stringify(value)} to be accepted: ${JSON.stringify(result)}`)
  return result.value
}

test('string accepts strings, including the empty string, and nothing else', () => {
  assert.equal(valueOf(string(), 'hello'), 'hello')
  assert.equal(valueOf(string(), ''), '')
  for (const value of [1, true, null, undefined, ['a'], { a: 1 }]) {
    assert.deepEqual(issuesOf(string(), value), [['', 'INVALID_TYPE']])
  }
  const result = string().parse(42)
  assert.ok(!result.ok)
  assert.equal(result.issues[0]?.message, 'expected a string, got a number')
})

test('string lengths count Unicode code points, and every failed rule is reported', () => {
  const title = string({ minLength: 2, maxLength: 3 })
  assert.equal(valueOf(title, '😀😀'), '😀😀') // four UTF-16 units, two characters
  assert.deepEqual(issuesOf(title, 'a'), [['', 'TOO_SHORT']])
  assert.deepEqual(issuesOf(title, 'abcd'), [['', 'TOO_LONG']])
  const lower = string({ minLength: 3, pattern: /^[a-z]+$/ })
  assert.deepEqual(issuesOf(lower, 'A'), [['', 'TOO_SHORT'], ['', 'PATTERN_MISMATCH']])
  assert.equal(valueOf(lower, 'abc'), 'abc')
})

test('a string pattern is tested afresh each time, and g or y flags are refused', () => {
  const digits = string({ pattern: /^\d+$/i })
  for (let round = 0; round < 3; round++) assert.equal(valueOf(digits, '12'), '12')
  assert.throws(() => string({ pattern: /a/g }), FunctionDefinitionError)
  assert.throws(() => string({ pattern: /a/y }), FunctionDefinitionError)
})

test('uuid accepts the 8-4-4-4-12 hex form in either case and rejects other strings', () => {
  assert.equal(valueOf(uuid(), '123e4567-e89b-12d3-a456-426614174000'), '123e4567-e89b-12d3-a456-426614174000')
  assert.equal(valueOf(uuid(), '123E4567-E89B-12D3-A456-426614174000'), '123E4567-E89B-12D3-A456-426614174000')
  for (const value of [
    '123e4567e89b12d3a456426614174000',
    '{123e4567-e89b-12d3-a456-426614174000}',
    '123e4567-e89b-12d3-a456-42661417400',
    '123e4567-e89b-12d3-a456-4266141740000',
    '123e4567-e89b-12d3-a456-42661417400g',
    ' 123e4567-e89b-12d3-a456-426614174000',
    '',
  ]) {
    assert.deepEqual(issuesOf(uuid(), value), [['', 'INVALID_UUID']], value)
  }
  assert.deepEqual(issuesOf(uuid(), 123), [['', 'INVALID_TYPE']])
})

test('number accepts finite numbers only, never numeric strings', () => {
  assert.equal(valueOf(number(), 1.5), 1.5)
  assert.equal(valueOf(number(), -0), -0)
  assert.deepEqual(issuesOf(number(), '1'), [['', 'INVALID_TYPE']])
  assert.deepEqual(issuesOf(number(), null), [['', 'INVALID_TYPE']])
  assert.deepEqual(issuesOf(number(), true), [['', 'INVALID_TYPE']])
  for (const value of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.deepEqual(issuesOf(number(), value), [['', 'NOT_FINITE']])
  }
})

test('number checks integer, min and max (inclusive) and reports each failure', () => {
  const count = number({ integer: true, min: 1, max: 10 })
  assert.equal(valueOf(count, 1), 1)
  assert.equal(valueOf(count, 10), 10)
  assert.deepEqual(issuesOf(count, 0), [['', 'TOO_SMALL']])
  assert.deepEqual(issuesOf(count, 11), [['', 'TOO_LARGE']])
  assert.deepEqual(issuesOf(count, 10.5), [['', 'NOT_INTEGER'], ['', 'TOO_LARGE']])
  assert.deepEqual(issuesOf(count, Number.NaN), [['', 'NOT_FINITE']])
})

test('boolean accepts true and false only', () => {
  assert.equal(valueOf(boolean(), true), true)
  assert.equal(valueOf(boolean(), false), false)
  for (const value of ['true', 1, 0, null]) assert.deepEqual(issuesOf(boolean(), value), [['', 'INVALID_TYPE']])
})

test('literal accepts exactly its value', () => {
  assert.equal(valueOf(literal('service.cron'), 'service.cron'), 'service.cron')
  assert.equal(valueOf(literal(3), 3), 3)
  assert.equal(valueOf(literal(false), false), false)
  assert.equal(valueOf(literal(null), null), null)
  assert.deepEqual(issuesOf(literal('service.cron'), 'service.crons'), [['', 'INVALID_LITERAL']])
  assert.deepEqual(issuesOf(literal(3), '3'), [['', 'INVALID_LITERAL']])
  assert.deepEqual(issuesOf(literal(null), undefined), [['', 'INVALID_LITERAL']])
  const result = literal('service.cron').parse('cron')
  assert.ok(!result.ok)
  assert.equal(result.issues[0]?.message, 'must be "service.cron", got "cron"')
})

test('enum accepts its listed strings and is exported under the name enum too', () => {
  const priority = enumOf(['low', 'high'])
  assert.equal(valueOf(priority, 'low'), 'low')
  assert.deepEqual(issuesOf(priority, 'urgent'), [['', 'INVALID_ENUM']])
  assert.deepEqual(issuesOf(priority, 1), [['', 'INVALID_ENUM']])
  assert.deepEqual(issuesOf(priority, 'LOW'), [['', 'INVALID_ENUM']])
  assert.equal(sdk.enum, enumOf)
  assert.deepEqual(priority.values, ['low', 'high'])
})

test('array checks every item and reports each bad item by index', () => {
  const titles = array(string(), { minItems: 1, maxItems: 3 })
  assert.deepEqual(valueOf(titles, ['a', 'b']), ['a', 'b'])
  assert.deepEqual(issuesOf(titles, []), [['', 'TOO_FEW_ITEMS']])
  assert.deepEqual(issuesOf(titles, ['a', 1, 'c', null]), [['', 'TOO_MANY_ITEMS'], ['[1]', 'INVALID_TYPE'], ['[3]', 'INVALID_TYPE']])
  assert.deepEqual(issuesOf(titles, 'a'), [['', 'INVALID_TYPE']])
  assert.deepEqual(issuesOf(titles, { 0: 'a', length: 1 }), [['', 'INVALID_TYPE']])
  // A hole in a sparse array is an undefined item.
  assert.deepEqual(issuesOf(array(string()), [, 'b']), [['[0]', 'INVALID_TYPE']])
})

test('object reports missing, mistyped and unknown fields, all at once, with paths', () => {
  const input = object({ title: string(), count: number(), remindAt: optional(string()) })
  assert.deepEqual(valueOf(input, { title: 't', count: 1 }), { title: 't', count: 1 })
  assert.deepEqual(valueOf(input, { title: 't', count: 1, remindAt: 'r' }), { title: 't', count: 1, remindAt: 'r' })
  assert.deepEqual(issuesOf(input, { count: '1', colour: 'red', size: 2 }), [
    ['title', 'REQUIRED'],
    ['count', 'INVALID_TYPE'],
    ['colour', 'UNKNOWN_FIELD'],
    ['size', 'UNKNOWN_FIELD'],
  ])
  for (const value of [null, [], 'x', 1, new Date(0), new Map()]) {
    assert.deepEqual(issuesOf(input, value), [['', 'INVALID_TYPE']])
  }
})

test('unknown fields are rejected in nested objects and inside arrays', () => {
  const input = object({
    project: object({ name: string() }),
    items: array(object({ title: string(), done: optional(boolean()) })),
  })
  assert.deepEqual(
    issuesOf(input, {
      project: { name: 'p', owner: 'x' },
      items: [{ title: 'a' }, { title: 'b', done: 'no' }, { done: true, extra: 1 }],
    }),
    [
      ['project.owner', 'UNKNOWN_FIELD'],
      ['items[1].done', 'INVALID_TYPE'],
      ['items[2].title', 'REQUIRED'],
      ['items[2].extra', 'UNKNOWN_FIELD'],
    ],
  )
  const result = input.parse({ project: { name: 'p' }, items: [{ title: 'a' }, { title: 'b' }, {}] })
  assert.ok(!result.ok)
  assert.deepEqual(result.issues, [{ path: ['items', 2, 'title'], code: 'REQUIRED', message: 'is required' }])
})

test('an optional field may be absent or undefined and is left out of the result; null is not absent', () => {
  const input = object({ remindAt: optional(string()) })
  const parsed = valueOf(input, { remindAt: undefined })
  assert.deepEqual(parsed, {})
  assert.equal(Object.hasOwn(parsed as object, 'remindAt'), false)
  assert.deepEqual(issuesOf(input, { remindAt: null }), [['remindAt', 'INVALID_TYPE']])
  assert.deepEqual(valueOf(object({ remindAt: optional(nullable(string())) }), { remindAt: null }), { remindAt: null })
  // A required field set to undefined counts as missing.
  assert.deepEqual(issuesOf(object({ title: string() }), { title: undefined }), [['title', 'REQUIRED']])
})

test('nullable accepts null and otherwise defers to its inner schema', () => {
  const dueDate = nullable(string({ minLength: 1 }))
  assert.equal(valueOf(dueDate, null), null)
  assert.equal(valueOf(dueDate, 'x'), 'x')
  assert.deepEqual(issuesOf(dueDate, ''), [['', 'TOO_SHORT']])
  assert.deepEqual(issuesOf(dueDate, undefined), [['', 'INVALID_TYPE']])
  assert.deepEqual(issuesOf(object({ dueDate }), {}), [['dueDate', 'REQUIRED']])
})

test('optional on its own accepts undefined', () => {
  assert.equal(valueOf(optional(number()), undefined), undefined)
  assert.deepEqual(issuesOf(optional(number()), 'x'), [['', 'INVALID_TYPE']])
})

test('parsed objects are fresh copies with own data properties only', () => {
  const input = object({ tags: array(string()), meta: object({ a: string() }) })
  const raw = { tags: ['x'], meta: { a: 'b' } }
  const parsed = valueOf(input, raw) as typeof raw
  assert.notEqual(parsed, raw)
  assert.notEqual(parsed.tags, raw.tags)
  assert.notEqual(parsed.meta, raw.meta)
  // A "__proto__" key from JSON is just an unknown field; it cannot change a prototype.
  const hostile = JSON.parse('{"__proto__":{"polluted":true}}') as unknown
  assert.deepEqual(issuesOf(input, { meta: { a: 'b' }, tags: [], ...(hostile as object) }), [['__proto__', 'UNKNOWN_FIELD']])
  // A declared "__proto__" field (a computed key, so it is an own property) stays data.
  const declared = valueOf(object({ ['__proto__']: object({ polluted: boolean() }) }), hostile)
  assert.equal(Object.getPrototypeOf(declared), Object.prototype)
  assert.deepEqual(Object.keys(declared as object), ['__proto__'])
  assert.equal(({} as Record<string, unknown>)['polluted'], undefined)
  // Inherited properties do not satisfy required fields.
  assert.deepEqual(issuesOf(object({ toString: string() }), {}), [['toString', 'REQUIRED']])
  // Objects from Object.create(null) are plain objects.
  const bare = Object.assign(Object.create(null) as object, { a: 'b' })
  assert.deepEqual(valueOf(object({ a: string() }), bare), { a: 'b' })
})

test('issues carry readable messages, and every code is in the catalog', () => {
  const result = object({ title: string({ maxLength: 1 }), colour: optional(string()) }).parse({ title: 'ab', size: 1 })
  assert.ok(!result.ok)
  assert.deepEqual(
    result.issues.map((issue) => issue.message),
    ['must be at most 1 character long', 'is not a known field; expected only title, colour'],
  )
  for (const issue of result.issues) assert.ok(issue.code in ISSUE_CODES)
  const empty = object({}).parse({ a: 1 })
  assert.ok(!empty.ok)
  assert.equal(empty.issues[0]?.message, 'is not allowed: this object has no fields')
})

test('formatPath writes dots, indexes and quoted odd keys', () => {
  assert.equal(formatPath([]), '')
  assert.equal(formatPath(['items', 2, 'title']), 'items[2].title')
  assert.equal(formatPath([0, 'a']), '[0].a')
  assert.equal(formatPath(['odd key', 'x']), '["odd key"].x')
})

test('schemas are frozen plain data with their options', () => {
  const title = string({ minLength: 1, maxLength: 200 })
  assert.equal(Object.isFrozen(title), true)
  assert.equal(title.kind, 'string')
  assert.equal(title.minLength, 1)
  assert.equal(title.maxLength, 200)
  assert.equal('pattern' in title, false)
  const count = number({ integer: true })
  assert.deepEqual([count.kind, count.integer, 'min' in count], ['number', true, false])
  const input = object({ title })
  assert.equal(input.shape.title, title)
  assert.equal(Object.isFrozen(input.shape), true)
  assert.equal(optional(title).inner, title)
})

test('describe() returns JSON Schema for every helper', () => {
  const input = object({
    title: string({ minLength: 1, maxLength: 200, pattern: /^\S/i }),
    taskId: uuid(),
    count: number({ integer: true, min: 0, max: 5 }),
    ratio: number(),
    done: boolean(),
    source: literal('service.cron'),
    priority: enumOf(['low', 'high']),
    tags: array(string(), { maxItems: 3 }),
    remindAt: optional(string()),
    dueDate: nullable(string()),
  })
  assert.deepEqual(input.describe(), {
    type: 'object',
    properties: {
      title: { type: 'string', minLength: 1, maxLength: 200, pattern: '^\\S', patternFlags: 'i' },
      taskId: { type: 'string', format: 'uuid', pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$' },
      count: { type: 'integer', minimum: 0, maximum: 5 },
      ratio: { type: 'number' },
      done: { type: 'boolean' },
      source: { const: 'service.cron' },
      priority: { type: 'string', enum: ['low', 'high'] },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
      remindAt: { type: 'string' },
      dueDate: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    },
    required: ['title', 'taskId', 'count', 'ratio', 'done', 'source', 'priority', 'tags', 'dueDate'],
    additionalProperties: false,
  })
  // Each call returns a fresh object, so a caller may change it freely.
  assert.notEqual(input.describe(), input.describe())
  assert.doesNotThrow(() => JSON.stringify(input.describe()))
})

test('malformed schema definitions throw a FunctionDefinitionError naming the problem', () => {
  const cases: [() => unknown, RegExp][] = [
    [() => string({ minLength: -1 }), /minLength must be a whole number/],
    [() => string({ minLength: 1.5 }), /minLength must be a whole number/],
    [() => string({ minLength: 5, maxLength: 2 }), /minLength \(5\) is greater than maxLength \(2\)/],
    [() => string({ min: 1 } as never), /string\(\) has no option "min"/],
    [() => string('x' as never), /options must be an object/],
    [() => string({ pattern: '^a$' } as never), /pattern must be a RegExp/],
    [() => number({ min: Number.NaN }), /min must be a finite number/],
    [() => number({ min: 2, max: 1 }), /min \(2\) is greater than max \(1\)/],
    [() => number({ integer: 'yes' } as never), /integer must be true or false/],
    [() => array(string(), { minItems: -1 }), /minItems must be a whole number/],
    [() => array('string' as never), /array\(\) items must be a schema/],
    [() => array(optional(string())), /items cannot be optional/],
    [() => literal(Number.NaN), /literal\(\) takes a string, a finite number/],
    [() => literal({} as never), /literal\(\) takes/],
    [() => enumOf([] as never), /non-empty array/],
    [() => enumOf(['a', 1] as never), /values must be strings/],
    [() => enumOf(['a', 'a']), /lists "a" twice/],
    [() => object({ title: 'string' } as never), /object\(\) field "title" must be a schema/],
    [() => object({ title: { kind: 'string', parse: () => ({ ok: true }) } } as never), /field "title" must be a schema from @service\/server/],
    [() => object([] as never), /object\(\) takes an object/],
    [() => optional(optional(string())), /redundant/],
    [() => nullable(optional(string())), /write optional\(nullable\(x\)\)/],
    [() => nullable(nullable(string())), /redundant/],
  ]
  for (const [build, message] of cases) {
    assert.throws(build, (error: unknown) => {
      assert.ok(error instanceof FunctionDefinitionError, String(error))
      assert.match(error.message, message)
      return true
    })
  }
})
