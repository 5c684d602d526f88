// `defineFunction` declares a Function; `runFunction` is how the platform runtime invokes
// one (spec 2.10, 4.2).
//
// A definition is exactly `{ input, handler }`: an `object()` schema and a function.
// Anything else throws a FunctionDefinitionError while the module loads, so the platform
// reports it at deploy time. The returned definition is frozen and branded
// (`__serviceFunction`), because the runtime may hold another copy of this SDK and cannot
// rely on `instanceof`. `runFunction` parses the raw input first; on failure it throws
// `INPUT_INVALID` (HTTP 400) with every issue's field path, and the handler never runs.

import type { FunctionContext, InvocationContext } from './context.ts'
import { FunctionDefinitionError } from './definition-error.ts'
import { errors, type ServiceError } from './errors.ts'
import { isPlainObject } from './plain-object.ts'
import { describeValue, formatPath, isSchema, type Infer, type Issue, type ObjectSchema, type Schema, type Shape } from './schema.ts'
import { SERVICE_SDK_VERSION } from './version.ts'

/**
 * A handler: receives the context with parsed input, returns (or resolves to) the result:
 * a JSON value, or, for HTTP callers only (`service.functions.stream`, Function routes),
 * bytes: a `Response` (its status and a safe set of its headers are kept), a
 * `ReadableStream` of `Uint8Array` or string chunks, or a `Uint8Array`. Bytes stream to the
 * caller as the handler produces them; queue and cron invocations take JSON only.
 *
 * @example
 * handler: ({ http }) => new Response(`id,title\n`, { headers: { 'content-type': 'text/csv' } })
 */
export type FunctionHandler<Input, Output> = (context: FunctionContext<Input>) => Output | Promise<Output>

/** What `defineFunction` returns and what a Function module exports as its default. */
export interface ServiceFunction<Input, Output> {
  readonly __serviceFunction: true
  /** The SDK version that built this definition (`SERVICE_SDK_VERSION`). */
  readonly sdkVersion: string
  readonly input: Schema<Input>
  // Method syntax on purpose: it lets a registry hold ServiceFunction<unknown, unknown>.
  // That is sound here because runFunction only ever passes what `input` parsed.
  handler(context: FunctionContext<Input>): Output | Promise<Output>
}

/** Issues shown in the INPUT_INVALID message; `details.issues` always has all of them. */
const ISSUES_IN_MESSAGE = 5

/**
 * Declares a Function from exactly `{ input, handler }`. `input` must be an `object()`
 * schema (every invocation passes a JSON object: call input, the cron envelope, a queue
 * payload); the handler's `input` is typed from it.
 *
 * @example
 * import { defineFunction, errors, object, uuid } from '@service/server'
 *
 * export default defineFunction({
 *   input: object({ taskId: uuid() }),
 *   async handler({ input, data }) {
 *     const task = await data.table('tasks').getById(input.taskId)
 *     if (!task) throw errors.notFound('ITEM_NOT_FOUND', 'The task no longer exists')
 *     return task
 *   },
 * })
 */
export function defineFunction<S extends ObjectSchema<Shape>, Output>(definition: {
  readonly input: S
  readonly handler: FunctionHandler<Infer<S>, Output>
}): ServiceFunction<Infer<S>, Output> {
  const problems = definitionProblems(definition)
  if (problems.length > 0) {
    throw new FunctionDefinitionError(`defineFunction: ${problems.join('; ')}`, problems)
  }
  return Object.freeze({
    __serviceFunction: true,
    sdkVersion: SERVICE_SDK_VERSION,
    input: definition.input as Schema<Infer<S>>,
    handler: definition.handler,
  })
}

/**
 * True for a definition made by `defineFunction` in any copy of the SDK: the brand, a
 * version, a schema-like `input` and a function `handler`.
 *
 * @example
 * const module = await import(entrypoint)
 * if (!isServiceFunction(module.default)) throw new Error('the default export is not defineFunction(...)')
 */
export function isServiceFunction(value: unknown): value is ServiceFunction<unknown, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Record<string, unknown>
  const input = candidate['input']
  return (
    candidate['__serviceFunction'] === true &&
    typeof candidate['sdkVersion'] === 'string' &&
    typeof candidate['handler'] === 'function' &&
    typeof input === 'object' && input !== null &&
    typeof (input as Record<string, unknown>)['parse'] === 'function'
  )
}

/**
 * Runs a Function for the platform runtime: parses `rawInput` with the definition's
 * schema, then calls the handler with the platform's context plus `input`. Invalid input
 * rejects with `INPUT_INVALID` (400) and `details.issues` (each with its `path`) without
 * calling the handler. Errors the handler throws propagate unchanged. (Three positional
 * parameters, against the house rule of two, because this is the runtime's fixed
 * entry point and each argument is required.)
 *
 * @example
 * const result = await runFunction(module.default, body, context)
 */
export async function runFunction<Input, Output>(
  definition: ServiceFunction<Input, Output>,
  rawInput: unknown,
  context: InvocationContext,
): Promise<Output> {
  if (!isServiceFunction(definition)) {
    throw new TypeError('runFunction needs a definition returned by defineFunction')
  }
  const parsed = definition.input.parse(rawInput)
  if (!parsed.ok) throw inputInvalid(parsed.issues)
  return await definition.handler(withInput(context, parsed.value))
}

function inputInvalid(issues: readonly Issue[]): ServiceError {
  const shown = issues
    .slice(0, ISSUES_IN_MESSAGE)
    .map((issue) => `${issue.path.length === 0 ? 'the input' : formatPath(issue.path)} ${issue.message}`)
  const more = issues.length > ISSUES_IN_MESSAGE ? ` (and ${issues.length - ISSUES_IN_MESSAGE} more)` : ''
  return errors.badRequest('INPUT_INVALID', `The input is invalid: ${shown.join('; ')}${more}`, { issues })
}

/**
 * The handler's context: exactly the spec's members, read from the platform's object
 * (so getters and prototype members work) and never any other property it carries.
 */
function withInput<Input>(context: InvocationContext, input: Input): FunctionContext<Input> {
  return Object.freeze({
    input,
    http: context.http,
    user: context.user,
    job: context.job,
    data: context.data,
    files: context.files,
    ai: context.ai,
    email: context.email,
    notifications: context.notifications,
    jobs: context.jobs,
    integrations: context.integrations,
    secrets: context.secrets,
    log: context.log,
    requestId: context.requestId,
    environment: context.environment,
    integration: context.integration,
  })
}

const DEFINITION_KEYS = ['input', 'handler']

/** Every reason `value` is not exactly `{ input: object(...), handler: function }`. */
function definitionProblems(value: unknown): string[] {
  if (typeof value === 'function') {
    return ['takes { input, handler }, not a bare handler function; write defineFunction({ input: object({ ... }), handler })']
  }
  if (!isPlainObject(value)) return [`takes an object { input, handler }, got ${describeValue(value)}`]
  const problems: string[] = []
  const extra = Reflect.ownKeys(value).filter((key) => typeof key !== 'string' || !DEFINITION_KEYS.includes(key))
  if (extra.length > 0) {
    const names = extra.map((key) => (typeof key === 'string' ? JSON.stringify(key) : String(key))).join(', ')
    problems.push(`unknown ${extra.length === 1 ? 'key' : 'keys'} ${names}; a definition has only input and handler`)
  }
  const input = Object.hasOwn(value, 'input') ? value['input'] : undefined
  if (input === undefined) {
    problems.push('missing "input": declare the input schema, such as input: object({}) for no fields')
  } else if (!isSchema(input)) {
    problems.push(`"input" must be a schema from @service/server such as object({ ... }), got ${describeValue(input)}`)
  } else if (input.kind !== 'object') {
    problems.push(`"input" must be an object({ ... }) schema because Functions receive a JSON object, got ${input.kind}()`)
  }
  const handler = Object.hasOwn(value, 'handler') ? value['handler'] : undefined
  if (handler === undefined) problems.push('missing "handler": add handler(context) { ... }')
  else if (typeof handler !== 'function') problems.push(`"handler" must be a function, got ${describeValue(handler)}`)
  return problems
}

