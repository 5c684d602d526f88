// Compile-time tests of the SDK's types, checked by `tsc -p tsconfig.json` (the file is
// never run). Lines that must compile are plain statements; lines that must be rejected
// carry `// @ts-expect-error`, which fails the type-check if the line compiles.

import * as sdk from './index.ts'
import {
  SERVICE_SDK_VERSION,
  array,
  boolean,
  defineFunction,
  enumOf,
  errors,
  literal,
  nullable,
  number,
  object,
  optional,
  string,
  uuid,
  type FunctionContext,
  type Infer,
  type InvocationContext,
  type ReadonlyQuery,
  type ServiceError,
  type ServiceFunction,
} from './index.ts'

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false
function expectType<Assertion extends true>(): Assertion | void {}

// Scalars and modifiers.
expectType<Equal<Infer<ReturnType<typeof string>>, string>>()
expectType<Equal<Infer<ReturnType<typeof uuid>>, string>>()
expectType<Equal<Infer<ReturnType<typeof number>>, number>>()
expectType<Equal<Infer<ReturnType<typeof boolean>>, boolean>>()
const cronSource = literal('service.cron')
expectType<Equal<Infer<typeof cronSource>, 'service.cron'>>()
const nothing = literal(null)
expectType<Equal<Infer<typeof nothing>, null>>()
const priority = enumOf(['low', 'normal', 'high'])
expectType<Equal<Infer<typeof priority>, 'low' | 'normal' | 'high'>>()
const viaAlias = sdk.enum(['a', 'b'])
expectType<Equal<Infer<typeof viaAlias>, 'a' | 'b'>>()
const maybeName = nullable(string())
expectType<Equal<Infer<typeof maybeName>, string | null>>()
const tags = array(string())
expectType<Equal<Infer<typeof tags>, string[]>>()

// Objects: optional() fields become optional properties, everything else is required.
const task = object({
  title: string(),
  remindAt: optional(string()),
  note: optional(nullable(string())),
  dueDate: nullable(string()),
  items: array(object({ title: string(), done: boolean() })),
})
type Task = Infer<typeof task>
expectType<
  Equal<
    Task,
    {
      title: string
      remindAt?: string
      note?: string | null
      dueDate: string | null
      items: { title: string; done: boolean }[]
    }
  >
>()
const full: Task = { title: 't', remindAt: 'r', note: null, dueDate: null, items: [{ title: 'i', done: false }] }
const minimal: Task = { title: 't', dueDate: '2025-01-01', items: [] }
void full
void minimal
// @ts-expect-error exactOptionalPropertyTypes: an optional field is absent, never undefined
const explicitUndefined: Task = { title: 't', remindAt: undefined, dueDate: null, items: [] }
// @ts-expect-error dueDate is nullable but not optional
const missingNullable: Task = { title: 't', items: [] }
// @ts-expect-error an enum accepts only its values
const wrongPriority: Infer<typeof priority> = 'urgent'
void explicitUndefined
void missingNullable
void wrongPriority

// parse narrows on ok.
const result = task.parse({})
if (result.ok) {
  expectType<Equal<typeof result.value, Task>>()
} else {
  const firstPath: readonly (string | number)[] | undefined = result.issues[0]?.path
  void firstPath
  // @ts-expect-error a failed result has no value
  void result.value
}

// defineFunction types the handler's input from the schema and infers the output.
const createTask = defineFunction({
  input: object({ title: string(), remindAt: optional(string()) }),
  async handler({ input, user }) {
    expectType<Equal<typeof input, { title: string; remindAt?: string }>>()
    // @ts-expect-error fields the schema does not declare do not exist on input
    void input.colour
    return { title: input.title, owner: user?.id ?? null }
  },
})
expectType<Equal<typeof createTask, ServiceFunction<{ title: string; remindAt?: string }, { title: string; owner: string | null }>>>()

// A registry of any Functions (as the platform runtime keeps) accepts a typed definition.
const registry: ServiceFunction<unknown, unknown>[] = [createTask]
void registry

const syncHandler = defineFunction({ input: object({}), handler: () => 42 })
expectType<Equal<typeof syncHandler, ServiceFunction<{}, number>>>()

// @ts-expect-error a bare handler function is not a definition
defineFunction(async () => 1)
// @ts-expect-error input is required
defineFunction({ handler: () => 1 })
// @ts-expect-error handler is required
defineFunction({ input: object({}) })
// @ts-expect-error no keys besides input and handler
defineFunction({ input: object({}), handler: () => 1, name: 'createTask' })
// @ts-expect-error input must be an object() schema
defineFunction({ input: string(), handler: () => 1 })
// @ts-expect-error input must be an SDK schema, not a JSON Schema
defineFunction({ input: { type: 'object' }, handler: () => 1 })

// The context has exactly the spec 2.10 members.
type ContextMembers =
  | 'input' | 'http' | 'user' | 'job' | 'data' | 'files' | 'ai' | 'email' | 'notifications'
  | 'jobs' | 'integrations' | 'secrets' | 'log' | 'requestId' | 'environment' | 'integration'
expectType<Equal<keyof FunctionContext<unknown>, ContextMembers>>()
expectType<Equal<keyof InvocationContext, Exclude<ContextMembers, 'input'>>>()
expectType<Equal<FunctionContext<unknown>['environment'], 'production' | 'development'>>()

declare const context: FunctionContext<{ taskId: string }>
async function contextUsage(): Promise<void> {
  const row = await context.data.table('tasks').getById(context.input.taskId)
  expectType<Equal<typeof row, Record<string, unknown> | null>>()
  const rows = await context.data.table('tasks').list({ where: { done: false, owner_id: null }, limit: 10, select: ['id'] })
  expectType<Equal<typeof rows, Record<string, unknown>[]>>()
  // @ts-expect-error where compares scalars only
  await context.data.table('tasks').list({ where: { tags: ['a'] } })
  await context.jobs.enqueue('reminders', { taskId: context.input.taskId }, { idempotencyKey: 'k', delaySeconds: 60 })
  // @ts-expect-error idempotencyKey is required
  await context.jobs.enqueue('reminders', {}, { delaySeconds: 60 })
  const summary = await context.ai.generateObject({ prompt: 'p', schema: object({ total: number() }) })
  expectType<Equal<typeof summary, { total: number }>>()
  const http = context.http
  if (http !== null) {
    const id: string | null = http.query.get('id')
    void id
  }
  const integration = context.integration
  if (integration?.trigger === 'operation') {
    expectType<Equal<typeof integration.operation, string>>()
    const delivered: number = await integration.emit({ type: 'contact.created', id: 'c1', data: {} })
    void delivered
  }
  context.log.info('done', { attempt: context.job?.attempt })
  const secret: string = await context.secrets.require('API_KEY')
  void secret
}
void contextUsage

// A URLSearchParams satisfies the read-only query view.
const query: ReadonlyQuery = new URLSearchParams('a=1')
void query

// Errors.
const notFound: ServiceError = errors.notFound('ITEM_NOT_FOUND', 'gone', { id: 'x' })
void notFound
// @ts-expect-error details is a plain object, not a string
errors.badRequest('BAD', 'bad', 'details')
// @ts-expect-error there is no errors.internal helper
void errors.internal

// The version is the literal the platform pins.
expectType<Equal<typeof SERVICE_SDK_VERSION, '2.6.0'>>()
