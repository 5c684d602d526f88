// Schema helpers for Function input (spec 2.10): `string`, `uuid`, `number`, `boolean`,
// `literal`, `enum`, `array`, `object`, `optional`, `nullable`.
//
// A schema is frozen plain data (its `kind` and options) plus two methods: `parse`, which
// checks an untrusted JSON value and reports every problem with its field path, and
// `describe`, which returns a JSON Schema the platform uses to document the input. Parsing
// never coerces ("1" is not a number) and objects reject fields they do not declare, so a
// handler sees exactly the shape its schema promises. Parsed objects and arrays are fresh
// copies holding only declared fields.
//
// Mistakes in a schema itself (`string({ minLength: -1 })`, `enum([])`) throw a
// FunctionDefinitionError when the module loads, so a release with them fails to deploy.

import { FunctionDefinitionError } from './definition-error.ts'
import { isPlainObject } from './plain-object.ts'

/** One step of a field path: an object key or an array index. */
export type PathSegment = string | number

/** What an issue code means. Codes are stable; messages may be reworded. */
export const ISSUE_CODES = {
  INVALID_TYPE: 'the value has the wrong JSON type (no coercion: "1" is not a number)',
  REQUIRED: 'a declared, non-optional field is missing (or undefined)',
  UNKNOWN_FIELD: 'the object has a field its schema does not declare',
  TOO_SHORT: 'a string has fewer characters (Unicode code points) than minLength',
  TOO_LONG: 'a string has more characters (Unicode code points) than maxLength',
  PATTERN_MISMATCH: 'a string does not match the schema pattern',
  INVALID_UUID: 'a string is not a UUID in the 8-4-4-4-12 hexadecimal form',
  NOT_FINITE: 'a number is NaN, Infinity or -Infinity',
  NOT_INTEGER: 'a number has a fractional part where an integer is required',
  TOO_SMALL: 'a number is below min',
  TOO_LARGE: 'a number is above max',
  INVALID_LITERAL: 'the value is not the one literal the schema allows',
  INVALID_ENUM: 'the value is not one of the strings the schema allows',
  TOO_FEW_ITEMS: 'an array has fewer items than minItems',
  TOO_MANY_ITEMS: 'an array has more items than maxItems',
} as const

export type IssueCode = keyof typeof ISSUE_CODES

/** One problem with an input value, at `path` (`[]` is the value itself). */
export interface Issue {
  readonly path: readonly PathSegment[]
  readonly code: IssueCode
  readonly message: string
}

/** The outcome of `schema.parse(value)`: the checked value, or every issue found. */
export type ParseResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly issues: readonly Issue[] }

/** The values `literal()` accepts. */
export type LiteralValue = string | number | boolean | null

/** The subset of JSON Schema (draft 2020-12) that `describe()` produces. */
export interface JsonSchema {
  readonly type?: 'string' | 'number' | 'integer' | 'boolean' | 'array' | 'object'
  readonly format?: 'uuid'
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  /** Not JSON Schema: the RegExp flags of `pattern`, when it has any (such as "i"). */
  readonly patternFlags?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly const?: LiteralValue
  readonly enum?: readonly string[]
  readonly items?: JsonSchema
  readonly minItems?: number
  readonly maxItems?: number
  readonly properties?: { readonly [field: string]: JsonSchema }
  readonly required?: readonly string[]
  readonly additionalProperties?: false
  readonly anyOf?: readonly (JsonSchema | { readonly type: 'null' })[]
}

export type SchemaKind =
  | 'string'
  | 'uuid'
  | 'number'
  | 'boolean'
  | 'literal'
  | 'enum'
  | 'array'
  | 'object'
  | 'optional'
  | 'nullable'

/** What every schema offers. `Output` is the type of a successfully parsed value. */
export interface Schema<Output> {
  readonly kind: SchemaKind
  /** Checks `value` without throwing; lists every issue with its field path. */
  parse(value: unknown): ParseResult<Output>
  /** A fresh JSON Schema for this schema (for documentation and tooling). */
  describe(): JsonSchema
}

export type AnySchema = Schema<unknown>

/**
 * The type of a value that `schema` accepts.
 *
 * @example
 * const task = object({ title: string(), due: optional(string()) })
 * type Task = Infer<typeof task> // { title: string; due?: string }
 */
export type Infer<S extends AnySchema> = S extends Schema<infer Output> ? Output : never

export interface StringSchema extends Schema<string> {
  readonly kind: 'string'
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: RegExp
}

export interface UuidSchema extends Schema<string> {
  readonly kind: 'uuid'
}

export interface NumberSchema extends Schema<number> {
  readonly kind: 'number'
  readonly min?: number
  readonly max?: number
  readonly integer: boolean
}

export interface BooleanSchema extends Schema<boolean> {
  readonly kind: 'boolean'
}

export interface LiteralSchema<V extends LiteralValue> extends Schema<V> {
  readonly kind: 'literal'
  readonly value: V
}

export interface EnumSchema<V extends string> extends Schema<V> {
  readonly kind: 'enum'
  readonly values: readonly V[]
}

export interface ArraySchema<Item extends AnySchema> extends Schema<Infer<Item>[]> {
  readonly kind: 'array'
  readonly items: Item
  readonly minItems?: number
  readonly maxItems?: number
}

/** The fields of an `object()` schema. */
export type Shape = { readonly [field: string]: AnySchema }

type OptionalKeys<S extends Shape> = {
  [K in keyof S]: S[K] extends OptionalSchema<AnySchema> ? K : never
}[keyof S]

type Present<S extends AnySchema> = S extends OptionalSchema<infer Inner> ? Infer<Inner> : Infer<S>

type Simplify<T> = { [K in keyof T]: T[K] } & {}

/** The parsed type of `object(shape)`: `optional()` fields become optional properties. */
export type ObjectOutput<S extends Shape> = Simplify<
  { -readonly [K in Exclude<keyof S, OptionalKeys<S>>]: Infer<S[K]> } & {
    -readonly [K in OptionalKeys<S>]?: Present<S[K]>
  }
>

export interface ObjectSchema<S extends Shape> extends Schema<ObjectOutput<S>> {
  readonly kind: 'object'
  readonly shape: Readonly<S>
}

export interface OptionalSchema<Inner extends AnySchema> extends Schema<Infer<Inner> | undefined> {
  readonly kind: 'optional'
  readonly inner: Inner
}

export interface NullableSchema<Inner extends AnySchema> extends Schema<Infer<Inner> | null> {
  readonly kind: 'nullable'
  readonly inner: Inner
}

export interface StringOptions {
  /** Fewest characters, counted as Unicode code points (as JSON Schema counts). */
  readonly minLength?: number
  /** Most characters, counted as Unicode code points. */
  readonly maxLength?: number
  /** Tested with `RegExp.test`, so anchor it (`^…$`) to match the whole string. */
  readonly pattern?: RegExp
}

export interface NumberOptions {
  readonly min?: number
  readonly max?: number
  readonly integer?: boolean
}

export interface ArrayOptions {
  readonly minItems?: number
  readonly maxItems?: number
}

// ---------------------------------------------------------------------------------------
// Construction

/** Checks a value at `path`, appending issues; returns the (copied) value. */
type Check = (value: unknown, path: readonly PathSegment[], issues: Issue[]) => unknown

/** Every schema this module built, with its checker; also how `isSchema` knows them. */
const checks = new WeakMap<object, Check>()

/** True when `value` is a schema built by this SDK's helpers. */
export function isSchema(value: unknown): value is AnySchema {
  return typeof value === 'object' && value !== null && checks.has(value)
}

/** Paths are frozen and shared by the issues found at one place, so none can be altered. */
const ROOT: readonly PathSegment[] = Object.freeze([])

function childPath(path: readonly PathSegment[], segment: PathSegment): readonly PathSegment[] {
  return Object.freeze([...path, segment])
}

function build<S extends AnySchema>(data: Omit<S, 'parse' | 'describe'>, check: Check, describe: () => JsonSchema): S {
  const schema = Object.freeze({
    ...data,
    parse(value: unknown): ParseResult<unknown> {
      const issues: Issue[] = []
      const parsed = check(value, ROOT, issues)
      return issues.length === 0 ? { ok: true, value: parsed } : { ok: false, issues }
    },
    describe,
  })
  checks.set(schema, check)
  return schema as unknown as S
}

function checkOf(schema: AnySchema): Check {
  const check = checks.get(schema)
  if (check === undefined) throw new Error('internal: schema without a checker')
  return check
}

// ---------------------------------------------------------------------------------------
// Scalars

/**
 * A string, optionally bounded in length (Unicode code points) or matched by a pattern.
 *
 * @example
 * string()                                   // any string, including ''
 * string({ minLength: 1, maxLength: 200 })   // a non-empty title
 * string({ pattern: /^[a-z]+$/ })            // lowercase letters only
 */
export function string(options?: StringOptions): StringSchema {
  const read = readOptions('string', options, ['minLength', 'maxLength', 'pattern'])
  const minLength = lengthOption('string', 'minLength', read['minLength'])
  const maxLength = lengthOption('string', 'maxLength', read['maxLength'])
  orderedBounds('string', ['minLength', minLength], ['maxLength', maxLength])
  const pattern = patternOption(read['pattern'])
  const data: Omit<StringSchema, 'parse' | 'describe'> = {
    kind: 'string',
    ...(minLength === undefined ? {} : { minLength }),
    ...(maxLength === undefined ? {} : { maxLength }),
    ...(pattern === undefined ? {} : { pattern }),
  }
  return build<StringSchema>(
    data,
    (value, path, issues) => {
      if (typeof value !== 'string') {
        issues.push(typeIssue(path, 'a string', value))
        return undefined
      }
      if (minLength !== undefined || maxLength !== undefined) {
        const length = codePointLength(value)
        if (minLength !== undefined && length < minLength) {
          issues.push({ path, code: 'TOO_SHORT', message: `must be at least ${characters(minLength)} long` })
        }
        if (maxLength !== undefined && length > maxLength) {
          issues.push({ path, code: 'TOO_LONG', message: `must be at most ${characters(maxLength)} long` })
        }
      }
      if (pattern !== undefined && !pattern.test(value)) {
        issues.push({ path, code: 'PATTERN_MISMATCH', message: `must match the pattern ${String(pattern)}` })
      }
      return value
    },
    () => ({
      type: 'string',
      ...(minLength === undefined ? {} : { minLength }),
      ...(maxLength === undefined ? {} : { maxLength }),
      ...(pattern === undefined ? {} : { pattern: pattern.source }),
      ...(pattern === undefined || pattern.flags === '' ? {} : { patternFlags: pattern.flags }),
    }),
  )
}

const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/

/**
 * A UUID string in the canonical 8-4-4-4-12 hexadecimal form (either letter case; the
 * value is returned as given). Version and variant digits are not checked.
 *
 * @example
 * object({ taskId: uuid() })
 */
export function uuid(): UuidSchema {
  return build<UuidSchema>(
    { kind: 'uuid' },
    (value, path, issues) => {
      if (typeof value !== 'string') {
        issues.push(typeIssue(path, 'a UUID string', value))
        return undefined
      }
      if (!UUID_PATTERN.test(value)) {
        issues.push({ path, code: 'INVALID_UUID', message: 'must be a UUID such as 123e4567-e89b-12d3-a456-426614174000' })
      }
      return value
    },
    () => ({ type: 'string', format: 'uuid', pattern: UUID_PATTERN.source }),
  )
}

/**
 * A finite JSON number (never NaN or ±Infinity, never a numeric string), optionally an
 * integer and bounded by `min` / `max` (inclusive).
 *
 * @example
 * number({ integer: true, min: 1, max: 100 })
 */
export function number(options?: NumberOptions): NumberSchema {
  const read = readOptions('number', options, ['min', 'max', 'integer'])
  const min = finiteOption('number', 'min', read['min'])
  const max = finiteOption('number', 'max', read['max'])
  orderedBounds('number', ['min', min], ['max', max])
  const integer = booleanOption('number', 'integer', read['integer']) ?? false
  const data: Omit<NumberSchema, 'parse' | 'describe'> = {
    kind: 'number',
    ...(min === undefined ? {} : { min }),
    ...(max === undefined ? {} : { max }),
    integer,
  }
  return build<NumberSchema>(
    data,
    (value, path, issues) => {
      if (typeof value !== 'number') {
        issues.push(typeIssue(path, integer ? 'an integer' : 'a number', value))
        return undefined
      }
      if (!Number.isFinite(value)) {
        issues.push({ path, code: 'NOT_FINITE', message: `must be a finite number, got ${String(value)}` })
        return value
      }
      if (integer && !Number.isInteger(value)) {
        issues.push({ path, code: 'NOT_INTEGER', message: `must be an integer, got ${value}` })
      }
      if (min !== undefined && value < min) issues.push({ path, code: 'TOO_SMALL', message: `must be at least ${min}` })
      if (max !== undefined && value > max) issues.push({ path, code: 'TOO_LARGE', message: `must be at most ${max}` })
      return value
    },
    () => ({
      type: integer ? 'integer' : 'number',
      ...(min === undefined ? {} : { minimum: min }),
      ...(max === undefined ? {} : { maximum: max }),
    }),
  )
}

/**
 * `true` or `false` (not "true", not 1).
 *
 * @example
 * object({ done: boolean() })
 */
export function boolean(): BooleanSchema {
  return build<BooleanSchema>(
    { kind: 'boolean' },
    (value, path, issues) => {
      if (typeof value !== 'boolean') issues.push(typeIssue(path, 'a boolean', value))
      return value
    },
    () => ({ type: 'boolean' }),
  )
}

/**
 * Exactly one value: a string, a finite number, a boolean or null.
 *
 * @example
 * // The cron envelope's source is always this string (spec 4.2).
 * object({ source: literal('service.cron'), name: string(), scheduledAt: string() })
 */
export function literal<const V extends LiteralValue>(value: V): LiteralSchema<V> {
  const allowed =
    value === null || typeof value === 'string' || typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  if (!allowed) {
    throw new FunctionDefinitionError(`literal() takes a string, a finite number, a boolean or null, got ${describeValue(value)}`)
  }
  const shown = JSON.stringify(value)
  return build<LiteralSchema<V>>(
    { kind: 'literal', value },
    (input, path, issues) => {
      if (input !== value) issues.push({ path, code: 'INVALID_LITERAL', message: `must be ${shown}, got ${describeInput(input)}` })
      return input
    },
    () => ({ const: value }),
  )
}

/**
 * One of a fixed, non-empty list of distinct strings. Exported as `enum` too; `enum` is a
 * reserved word, so call it as `s.enum([...])` after `import * as s`, or as `enumOf`.
 *
 * @example
 * object({ priority: enumOf(['low', 'normal', 'high']) })
 */
export function enumOf<const V extends readonly [string, ...string[]]>(values: V): EnumSchema<V[number]> {
  if (!Array.isArray(values) || values.length === 0) {
    throw new FunctionDefinitionError('enum() takes a non-empty array of strings, such as enum([\'low\', \'high\'])')
  }
  const list: string[] = []
  for (const value of values as readonly unknown[]) {
    if (typeof value !== 'string') throw new FunctionDefinitionError(`enum() values must be strings, got ${describeValue(value)}`)
    if (list.includes(value)) throw new FunctionDefinitionError(`enum() lists ${JSON.stringify(value)} twice`)
    list.push(value)
  }
  const frozen = Object.freeze(list) as readonly V[number][]
  const shown = list.map((value) => JSON.stringify(value)).join(', ')
  return build<EnumSchema<V[number]>>(
    { kind: 'enum', values: frozen },
    (input, path, issues) => {
      if (typeof input !== 'string' || !list.includes(input)) {
        issues.push({ path, code: 'INVALID_ENUM', message: `must be one of ${shown}, got ${describeInput(input)}` })
      }
      return input
    },
    () => ({ type: 'string', enum: [...list] }),
  )
}

// ---------------------------------------------------------------------------------------
// Containers and modifiers

/**
 * An array whose every item matches `items`, optionally bounded in length.
 *
 * @example
 * array(object({ title: string() }), { minItems: 1, maxItems: 50 })
 */
export function array<Item extends AnySchema>(items: Item, options?: ArrayOptions): ArraySchema<Item> {
  requireSchema('array() items', items)
  if (items.kind === 'optional') {
    throw new FunctionDefinitionError('array() items cannot be optional(): JSON arrays have no missing items; use nullable() for null items')
  }
  const read = readOptions('array', options, ['minItems', 'maxItems'])
  const minItems = lengthOption('array', 'minItems', read['minItems'])
  const maxItems = lengthOption('array', 'maxItems', read['maxItems'])
  orderedBounds('array', ['minItems', minItems], ['maxItems', maxItems])
  const checkItem = checkOf(items)
  const data: Omit<ArraySchema<Item>, 'parse' | 'describe'> = {
    kind: 'array',
    items,
    ...(minItems === undefined ? {} : { minItems }),
    ...(maxItems === undefined ? {} : { maxItems }),
  }
  return build<ArraySchema<Item>>(
    data,
    (value, path, issues) => {
      if (!Array.isArray(value)) {
        issues.push(typeIssue(path, 'an array', value))
        return undefined
      }
      if (minItems !== undefined && value.length < minItems) {
        issues.push({ path, code: 'TOO_FEW_ITEMS', message: `must have at least ${count(minItems, 'item')}` })
      }
      if (maxItems !== undefined && value.length > maxItems) {
        issues.push({ path, code: 'TOO_MANY_ITEMS', message: `must have at most ${count(maxItems, 'item')}` })
      }
      const out: unknown[] = []
      for (let index = 0; index < value.length; index++) {
        out.push(checkItem(value[index], childPath(path, index), issues))
      }
      return out
    },
    () => ({
      type: 'array',
      items: items.describe(),
      ...(minItems === undefined ? {} : { minItems }),
      ...(maxItems === undefined ? {} : { maxItems }),
    }),
  )
}

/**
 * A JSON object with exactly the declared fields: a missing field fails `REQUIRED`
 * unless its schema is `optional(...)`, and any other field fails `UNKNOWN_FIELD`. An
 * `undefined` value counts as missing; absent optional fields are left out of the result.
 *
 * @example
 * const input = object({ title: string(), remindAt: optional(string()) })
 * input.parse({ title: 'Buy milk', colour: 'red' })
 * // { ok: false, issues: [{ path: ['colour'], code: 'UNKNOWN_FIELD', message: … }] }
 */
export function object<S extends Shape>(shape: S): ObjectSchema<S> {
  if (!isPlainObject(shape)) {
    throw new FunctionDefinitionError(`object() takes an object of field schemas, got ${describeValue(shape)}`)
  }
  const fields: { name: string; schema: AnySchema; check: Check; optional: boolean }[] = []
  for (const name of Object.keys(shape)) {
    const field = shape[name]
    requireSchema(`object() field ${JSON.stringify(name)}`, field)
    fields.push({ name, schema: field, check: checkOf(field), optional: field.kind === 'optional' })
  }
  const frozenShape = Object.freeze({ ...shape })
  const names = fields.map((field) => field.name)
  const unknownMessage =
    names.length === 0
      ? 'is not allowed: this object has no fields'
      : `is not a known field; expected only ${names.slice(0, 20).join(', ')}${names.length > 20 ? ', …' : ''}`
  return build<ObjectSchema<S>>(
    { kind: 'object', shape: frozenShape },
    (value, path, issues) => {
      if (!isPlainObject(value)) {
        issues.push(typeIssue(path, 'an object', value))
        return undefined
      }
      const entries: [string, unknown][] = []
      for (const field of fields) {
        const fieldValue = Object.hasOwn(value, field.name) ? value[field.name] : undefined
        if (fieldValue === undefined) {
          if (!field.optional) issues.push({ path: childPath(path, field.name), code: 'REQUIRED', message: 'is required' })
          continue
        }
        entries.push([field.name, field.check(fieldValue, childPath(path, field.name), issues)])
      }
      for (const key of Object.keys(value)) {
        if (!Object.hasOwn(frozenShape, key)) issues.push({ path: childPath(path, key), code: 'UNKNOWN_FIELD', message: unknownMessage })
      }
      // fromEntries defines own properties, so a declared "__proto__" field stays data.
      return Object.fromEntries(entries)
    },
    () => ({
      type: 'object',
      properties: Object.fromEntries(fields.map((field) => [field.name, field.schema.describe()])),
      required: fields.filter((field) => !field.optional).map((field) => field.name),
      additionalProperties: false,
    }),
  )
}

/**
 * Marks an object field as optional: it may be left out (or be `undefined`), and its
 * property is optional in the inferred type. `null` is still rejected; for that, write
 * `optional(nullable(x))`. Only meaningful as an `object()` field.
 *
 * @example
 * object({ title: string(), remindAt: optional(string()) })
 */
export function optional<Inner extends AnySchema>(inner: Inner): OptionalSchema<Inner> {
  requireSchema('optional()', inner)
  if (inner.kind === 'optional') throw new FunctionDefinitionError('optional(optional(x)) is redundant; write optional(x)')
  const checkInner = checkOf(inner)
  return build<OptionalSchema<Inner>>(
    { kind: 'optional', inner },
    (value, path, issues) => (value === undefined ? undefined : checkInner(value, path, issues)),
    () => inner.describe(),
  )
}

/**
 * Also accepts `null`. The field is still required in an object unless it is wrapped as
 * `optional(nullable(x))`.
 *
 * @example
 * object({ dueDate: nullable(string()) }) // { dueDate: string | null }
 */
export function nullable<Inner extends AnySchema>(inner: Inner): NullableSchema<Inner> {
  requireSchema('nullable()', inner)
  if (inner.kind === 'optional') {
    throw new FunctionDefinitionError('nullable(optional(x)) is not supported; write optional(nullable(x))')
  }
  if (inner.kind === 'nullable') throw new FunctionDefinitionError('nullable(nullable(x)) is redundant; write nullable(x)')
  const checkInner = checkOf(inner)
  return build<NullableSchema<Inner>>(
    { kind: 'nullable', inner },
    (value, path, issues) => (value === null ? null : checkInner(value, path, issues)),
    () => ({ anyOf: [inner.describe(), { type: 'null' }] }),
  )
}

// ---------------------------------------------------------------------------------------
// Paths and messages

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/

/**
 * Writes a field path the way people read it: dots for names, `[n]` for indexes, and
 * `["odd key"]` for keys that are not plain names. The empty path is `''`.
 *
 * @example
 * formatPath(['items', 2, 'title']) // 'items[2].title'
 */
export function formatPath(path: readonly PathSegment[]): string {
  let text = ''
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`
    else if (IDENTIFIER.test(segment)) text += text === '' ? segment : `.${segment}`
    else text += `[${JSON.stringify(segment)}]`
  }
  return text
}

function typeIssue(path: readonly PathSegment[], expected: string, value: unknown): Issue {
  return { path, code: 'INVALID_TYPE', message: `expected ${expected}, got ${describeValue(value)}` }
}

/** How a value reads in a message: 'a string', 'null', 'an array', 'NaN'. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  if (typeof value === 'object') return 'an object'
  return `a ${typeof value}`
}

/** Like describeValue, but shows short strings themselves: `got "urgent"`. */
function describeInput(value: unknown): string {
  return typeof value === 'string' && value.length <= 40 ? JSON.stringify(value) : describeValue(value)
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

function characters(n: number): string {
  return count(n, 'character')
}

/** Length in Unicode code points, so an emoji counts once (as in JSON Schema). */
function codePointLength(text: string): number {
  let length = 0
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    if (unit >= 0xd800 && unit <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1)
      if (next >= 0xdc00 && next <= 0xdfff) index++
    }
    length++
  }
  return length
}

// ---------------------------------------------------------------------------------------
// Definition-time checks


function requireSchema(where: string, value: unknown): asserts value is AnySchema {
  if (!isSchema(value)) {
    throw new FunctionDefinitionError(`${where} must be a schema from @service/server (such as string()), got ${describeValue(value)}`)
  }
}

function readOptions(helper: string, options: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {}
  if (!isPlainObject(options)) throw new FunctionDefinitionError(`${helper}() options must be an object, got ${describeValue(options)}`)
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new FunctionDefinitionError(`${helper}() has no option ${JSON.stringify(key)}; its options are ${allowed.join(', ')}`)
    }
  }
  return options
}

function lengthOption(helper: string, name: string, value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new FunctionDefinitionError(`${helper}() option ${name} must be a whole number of at least 0, got ${describeInput(value)}`)
  }
  return value
}

function finiteOption(helper: string, name: string, value: unknown): number | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new FunctionDefinitionError(`${helper}() option ${name} must be a finite number, got ${describeValue(value)}`)
  }
  return value
}

function booleanOption(helper: string, name: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'boolean') throw new FunctionDefinitionError(`${helper}() option ${name} must be true or false, got ${describeValue(value)}`)
  return value
}

function orderedBounds(helper: string, low: [string, number | undefined], high: [string, number | undefined]): void {
  if (low[1] !== undefined && high[1] !== undefined && low[1] > high[1]) {
    throw new FunctionDefinitionError(`${helper}() option ${low[0]} (${low[1]}) is greater than ${high[0]} (${high[1]})`)
  }
}

function patternOption(value: unknown): RegExp | undefined {
  if (value === undefined) return undefined
  if (Object.prototype.toString.call(value) !== '[object RegExp]') {
    throw new FunctionDefinitionError(`string() option pattern must be a RegExp such as /^[a-z]+$/, got ${describeValue(value)}`)
  }
  const pattern = value as RegExp
  if (pattern.global || pattern.sticky) {
    // `test` on a g or y RegExp moves lastIndex, so the same value could pass, then fail.
    throw new FunctionDefinitionError(`string() option pattern ${String(pattern)} must not use the g or y flag`)
  }
  return new RegExp(pattern.source, pattern.flags)
}
