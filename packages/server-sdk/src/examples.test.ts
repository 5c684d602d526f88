// Runs the example app's Functions (examples/tasks/functions) through runFunction with
// in-memory stand-ins for the platform members they use, so the examples are known to
// work against this SDK, not only to type-check.

import assert from 'node:assert/strict'
import { test } from 'node:test'
import createTask from '../../../examples/tasks/functions/create-task.ts'
import dailyDigest from '../../../examples/tasks/functions/daily-digest.ts'
import sendReminder from '../../../examples/tasks/functions/send-reminder.ts'
import {
  isServiceFunction,
  runFunction,
  type EnqueueOptions,
  type InvocationContext,
  type JsonObject,
  type ListOptions,
  type Row,
  type RowId,
} from './index.ts'

const TASK_ID = '6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f'

interface Recorded {
  enqueued: { queue: string; payload: JsonObject; options: EnqueueOptions }[]
  lists: ListOptions[]
  logs: { message: string; fields: unknown }[]
}

/** A context over one in-memory `tasks` table; members the examples never use throw. */
function context(rows: Row[], overrides: Partial<InvocationContext> = {}): { context: InvocationContext; recorded: Recorded } {
  const recorded: Recorded = { enqueued: [], lists: [], logs: [] }
  const unused = new Proxy({}, {
    get(_target, property) {
      throw new Error(`unexpected use of ${String(property)}`)
    },
  }) as never
  const table = {
    async getById(id: RowId) {
      return rows.find((row) => row['id'] === id) ?? null
    },
    async updateById(id: RowId, patch: Row) {
      const row = rows.find((candidate) => candidate['id'] === id)
      if (row === undefined) return null
      Object.assign(row, patch)
      return row
    },
    async create(row: Row) {
      const stored = { id: TASK_ID, done: false, reminded_at: null, ...row }
      rows.push(stored)
      return stored
    },
    async list(options: ListOptions = {}) {
      recorded.lists.push(options)
      const where = Object.entries(options.where ?? {})
      return rows.filter((row) => where.every(([column, value]) => row[column] === value)).slice(0, options.limit)
    },
  }
  const log = (message: string, fields?: unknown) => {
    recorded.logs.push({ message, fields })
  }
  return {
    recorded,
    context: {
      http: null,
      user: null,
      job: null,
      data: { table: () => table, search: unused },
      files: unused,
      ai: unused,
      email: unused,
      notifications: unused,
      jobs: {
        async enqueue(queue, payload, options) {
          recorded.enqueued.push({ queue, payload, options })
          const now = new Date(0).toISOString()
          return {
            id: 'job-1', queue, kind: 'queue', state: 'queued', attempts: 0, maxAttempts: 3, createdAt: now, updatedAt: now,
            runAt: now, startedAt: null, finishedAt: null, lastError: null,
          }
        },
        get: unused,
      },
      integrations: unused,
      secrets: unused,
      log: { debug: log, info: log, warn: log, error: log },
      requestId: 'req-1',
      environment: 'development',
      integration: null,
      ...overrides,
    },
  }
}

test('each example module default-exports a definition', () => {
  for (const definition of [createTask, dailyDigest, sendReminder]) assert.equal(isServiceFunction(definition), true)
})

test('createTask needs a signed-in caller, checks the title, and queues a reminder', async () => {
  const anonymous = context([])
  await assert.rejects(runFunction(createTask, { title: 'Buy milk' }, anonymous.context), { code: 'SIGN_IN_REQUIRED', status: 401 })

  const signedIn = context([], { user: { id: 'u1' } })
  await assert.rejects(runFunction(createTask, { title: '   ' }, signedIn.context), { code: 'TITLE_INVALID', status: 400 })
  await assert.rejects(runFunction(createTask, { title: 'x', owner: 'u2' }, signedIn.context), (error: unknown) => {
    assert.deepEqual((error as { details: unknown }).details, {
      issues: [{ path: ['owner'], code: 'UNKNOWN_FIELD', message: 'is not a known field; expected only title, remindAt' }],
    })
    return true
  })

  const remindAt = new Date(Date.now() + 3_600_000).toISOString()
  const task = await runFunction(createTask, { title: ' Buy milk ', remindAt }, signedIn.context)
  assert.equal(task['title'], 'Buy milk')
  assert.equal(signedIn.recorded.enqueued.length, 1)
  const [enqueued] = signedIn.recorded.enqueued
  assert.equal(enqueued?.queue, 'reminders')
  assert.deepEqual(enqueued?.payload, { taskId: TASK_ID })
  assert.equal(enqueued?.options.idempotencyKey, `reminder:${TASK_ID}`)
})

test('sendReminder validates the task id before reading, and marks the task once', async () => {
  const rows: Row[] = [{ id: TASK_ID, done: false, reminded_at: null }]
  const { context: system } = context(rows, { job: { id: 'job-1', queue: 'reminders', attempt: 1 } })
  await assert.rejects(runFunction(sendReminder, { taskId: 'not-a-uuid' }, system), (error: unknown) => {
    assert.deepEqual((error as { details: { issues: unknown[] } }).details.issues, [
      { path: ['taskId'], code: 'INVALID_UUID', message: 'must be a UUID such as 123e4567-e89b-12d3-a456-426614174000' },
    ])
    return true
  })
  assert.deepEqual(await runFunction(sendReminder, { taskId: TASK_ID }, system), { reminded: true })
  assert.equal(typeof rows[0]?.['reminded_at'], 'string')
  assert.deepEqual(await runFunction(sendReminder, { taskId: TASK_ID }, system), { skipped: true })
  await assert.rejects(
    runFunction(sendReminder, { taskId: '00000000-0000-0000-0000-000000000000' }, system),
    { code: 'ITEM_NOT_FOUND', status: 404, retryable: false },
  )
})

test('dailyDigest accepts the full cron envelope and nothing less', async () => {
  const { context: cron, recorded } = context([{ id: 'a', done: false }, { id: 'b', done: true }])
  const envelope = { source: 'service.cron', name: 'daily-digest', scheduledAt: '2025-03-03T06:00:00Z' }
  assert.deepEqual(await runFunction(dailyDigest, envelope, cron), { openTasks: 1 })
  assert.deepEqual(recorded.lists, [{ where: { done: false }, limit: 1000, select: ['id'] }])
  await assert.rejects(runFunction(dailyDigest, { name: 'daily-digest', scheduledAt: 'x' }, cron), (error: unknown) => {
    assert.deepEqual((error as { details: { issues: unknown[] } }).details.issues, [
      { path: ['source'], code: 'REQUIRED', message: 'is required' },
    ])
    return true
  })
  await assert.rejects(runFunction(dailyDigest, { ...envelope, source: 'manual' }, cron), { code: 'INPUT_INVALID', status: 400 })
})
