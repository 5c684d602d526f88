/**
 * Enqueueing: checks `jobs.enqueue(queue, payload, options)` arguments (spec 4.3, 8) and
 * inserts the job exactly once per idempotency key. The key's scope is the app namespace
 * (app x environment x development namespace) and the queue; the same key with the same
 * payload returns the original job, with a different payload it fails
 * IDEMPOTENCY_KEY_REUSED. "Same input" is the payload (compared by a hash of its canonical
 * JSON, so key order does not matter); the delay is not part of it, because a producer
 * that retries computes a new delay from a new "now".
 */
import type { Db, Queryable } from '../db/db.ts'
import { sha256Hex } from '../lib/crypto.ts'
import { ServiceError } from '../lib/errors.ts'
import { grantFileReads, readGrantOption } from '../files/index.ts'
import type { QueueDeclaration } from '../manifest/index.ts'
import type { HandOff } from './dispatcher.ts'
import { findByKey, insertJobOnce, uncountActive, type ClaimedJob, type JobRow, type NewJob } from './queries.ts'

export const JOB_LIMITS = {
  /** Payload: a JSON object of at most 64 KiB (UTF-8 bytes of compact JSON). */
  payloadBytes: 64 * 1024,
  /** Enqueue delay: at most seven days. */
  maxDelaySeconds: 7 * 24 * 60 * 60,
  /** Active (not terminal) jobs per app namespace. */
  activePerNamespace: 10_000,
  /** Idempotency keys: 1 to 255 characters (our choice). */
  idempotencyKeyChars: 255,
  /** `timeoutMs` of a producer's request: 1 ms to 15 minutes (our choice). */
  maxTimeoutMs: 15 * 60 * 1000,
} as const

export interface EnqueueRequest {
  readonly queue: string
  readonly payload: Record<string, unknown>
  readonly idempotencyKey: string
  readonly delaySeconds: number
  readonly timeoutMs: number | null
  /** SDK 2.4.0 delegated read grant: the file references of `files.read`, or null. */
  readonly fileReads?: readonly string[] | null
}

const OPTION_NAMES = new Set(['idempotencyKey', 'delaySeconds', 'timeoutMs', 'files'])

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('VALIDATION_FAILED', message, { details: { field } })
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** Bytes arrive from a worker as Uint8Array (protocol.ts); they are not JSON. */
function holdsBytes(value: unknown): boolean {
  if (value instanceof Uint8Array) return true
  if (typeof value !== 'object' || value === null) return false
  return Object.values(value).some(holdsBytes)
}

/** PostgreSQL's jsonb cannot store U+0000 in a string or a key (22P05). */
function holdsNul(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\u0000')
  if (typeof value !== 'object' || value === null) return false
  return Object.entries(value).some(([key, item]) => key.includes('\u0000') || holdsNul(item))
}

/**
 * Reads the arguments of `ctx.jobs.enqueue` as they arrive from a worker.
 *
 * @example
 * const request = readEnqueueArgs(['reminders', { taskId }, { idempotencyKey: `reminder:${taskId}` }])
 */
export function readEnqueueArgs(args: readonly unknown[]): EnqueueRequest {
  const [queue, payload, options] = args
  if (typeof queue !== 'string' || queue.length === 0) throw invalid('jobs.enqueue needs a queue name as its first argument', 'queue')
  if (!isPlainObject(payload)) {
    throw new ServiceError('JOB_PAYLOAD_INVALID', 'A job payload must be a JSON object')
  }
  if (holdsBytes(payload)) {
    throw new ServiceError('JOB_PAYLOAD_INVALID', 'A job payload must be JSON; bytes cannot be queued (upload a file and queue its reference)')
  }
  if (holdsNul(payload)) {
    throw new ServiceError('JOB_PAYLOAD_INVALID', 'A job payload cannot contain the character U+0000 (in a string or a key)')
  }
  const bytes = new TextEncoder().encode(JSON.stringify(payload)).byteLength
  if (bytes > JOB_LIMITS.payloadBytes) {
    throw new ServiceError('JOB_PAYLOAD_TOO_LARGE', `The job payload is ${bytes} bytes of JSON; the limit is ${JOB_LIMITS.payloadBytes}`, {
      details: { bytes, limit: JOB_LIMITS.payloadBytes },
    })
  }
  if (!isPlainObject(options)) throw invalid('jobs.enqueue needs options with an idempotencyKey', 'options')
  for (const name of Object.keys(options)) {
    if (!OPTION_NAMES.has(name)) throw invalid(`jobs.enqueue has no option "${name}"`, name)
  }
  const fileReads = options.files === undefined ? null : readGrantOption(options.files)
  const key = options.idempotencyKey
  if (typeof key !== 'string' || key.length === 0 || key.length > JOB_LIMITS.idempotencyKeyChars) {
    throw invalid(`idempotencyKey is required: a string of 1 to ${JOB_LIMITS.idempotencyKeyChars} characters`, 'idempotencyKey')
  }
  const delay = options.delaySeconds ?? 0
  if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0 || delay > JOB_LIMITS.maxDelaySeconds) {
    throw invalid(`delaySeconds must be a number from 0 to ${JOB_LIMITS.maxDelaySeconds} (seven days)`, 'delaySeconds')
  }
  const timeoutMs = options.timeoutMs ?? null
  if (timeoutMs !== null && (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > JOB_LIMITS.maxTimeoutMs)) {
    throw invalid(`timeoutMs must be an integer from 1 to ${JOB_LIMITS.maxTimeoutMs}`, 'timeoutMs')
  }
  return { queue, payload, idempotencyKey: key, delaySeconds: delay, timeoutMs, fileReads }
}

/** JSON with object keys sorted, so equal payloads hash equally whatever their key order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
    return `{${entries.join(',')}}`
  }
  return JSON.stringify(value)
}

export function payloadHash(payload: unknown): string {
  return sha256Hex(canonicalJson(payload))
}

/**
 * Inserts `job` unless its key exists: then the original is returned when the payload is
 * the same, and IDEMPOTENCY_KEY_REUSED is thrown when not. `limit` caps the namespace's
 * active jobs (null: never refused, for cron runs, which capacity may delay but not drop).
 * One statement (plus one or two when it loses a race for the same key); inside the caller's
 * transaction when given one. Wakes the dispatchers at commit when the job is due now, unless
 * the statement started it for `handOff`'s dispatcher (`claimed`; never inside a transaction:
 * the job must be committed before it runs).
 *
 * The row returned for a new job is the job as enqueued (`queued`, no attempt yet), also
 * when the same statement started it: the enqueue's answer is what spec 3.1's enqueue
 * transition makes, as it was before an enqueue could start its job; `jobs.get` shows it running.
 */
export async function insertIdempotent(
  db: Queryable,
  job: NewJob,
  limit: number | null,
  handOff: HandOff | null = null,
): Promise<{ row: JobRow; created: boolean; claimed: ClaimedJob | null }> {
  const outcome = await insertJobOnce(db, job, limit, handOff)
  switch (outcome.kind) {
    case 'inserted': {
      const { row, claimed } = outcome
      if (claimed === null) return { row, created: true, claimed: null }
      return { row: { ...row, state: 'queued', attempts: 0, started_at: null }, created: true, claimed }
    }
    case 'existing':
      return { row: sameInput(outcome.row, job), created: false, claimed: null }
    case 'limit': {
      // The statement's snapshot may predate a producer that took the last slot for this very
      // key (its +1 was visible to the counter, its job not to the lookup): look again.
      const winner = await findByKey(db, job)
      if (winner !== undefined) return { row: sameInput(winner, job), created: false, claimed: null }
      throw new ServiceError('JOBS_LIMIT_REACHED', `This app already has ${limit} active jobs; wait for some to finish`, {
        details: { limit },
      })
    }
    case 'raced': {
      // Another producer inserted the same key meanwhile (this statement waited for its commit).
      await uncountActive(db, job.namespaceId)
      const winner = await findByKey(db, job)
      if (winner === undefined) throw new Error('a job with this idempotency key vanished during enqueue')
      return { row: sameInput(winner, job), created: false, claimed: null }
    }
  }
}

function sameInput(existing: JobRow, job: NewJob): JobRow {
  if (existing.payload_sha256 !== job.payloadSha256) {
    throw new ServiceError('IDEMPOTENCY_KEY_REUSED',
      `The idempotency key "${job.idempotencyKey}" was already used on queue "${job.queue}" with a different payload`)
  }
  return existing
}

export interface QueueEnqueue {
  readonly appId: string
  readonly namespaceId: string
  readonly declaration: QueueDeclaration
  readonly request: EnqueueRequest
  readonly enqueuedBy: string | null
  readonly now: Date
  /**
   * This process's dispatcher: when it has a free slot, a job that can start at once starts
   * in the enqueue's own statement and runs in that slot (no NOTIFY, no second round trip).
   */
  readonly dispatcher?: { handOff(): HandOff | null }
}

/**
 * Enqueues on a declared queue, pinning the declaration's retry and concurrency policy. A
 * delegated read grant (`request.fileReads`) is pinned in the same transaction as the job
 * (files/grants.ts); the files are part of the job's input, so the same key with other
 * files is IDEMPOTENCY_KEY_REUSED. The producer grants what it may read: its own files, or
 * the app's when `enqueuedBy` is null (the Functions host refuses `files` from an anonymous
 * caller before it gets here, so null is a system invocation). Without files, the job may
 * start at once for `input.dispatcher` (see insertIdempotent).
 */
export async function enqueueOnQueue(db: Db, input: QueueEnqueue): Promise<{ row: JobRow; created: boolean }> {
  const { declaration, request, now } = input
  const fileReads = request.fileReads ?? null
  const job: NewJob = {
    appId: input.appId,
    namespaceId: input.namespaceId,
    kind: 'queue',
    queue: declaration.name,
    payload: request.payload,
    payloadSha256: fileReads === null ? payloadHash(request.payload) : payloadHash({ payload: request.payload, files: { read: fileReads } }),
    idempotencyKey: request.idempotencyKey,
    enqueuedBy: input.enqueuedBy,
    concurrency: declaration.concurrency,
    maxAttempts: declaration.maxAttempts,
    retryDelaySeconds: declaration.retryDelaySeconds,
    retryBackoff: declaration.retryBackoff,
    timeoutSeconds: declaration.timeoutSeconds,
    runAt: new Date(now.getTime() + Math.round(request.delaySeconds * 1000)),
    now,
  }
  if (fileReads === null) {
    const handOff = job.runAt <= now ? input.dispatcher?.handOff() ?? null : null
    let claimed: ClaimedJob | null = null
    try {
      const inserted = await insertIdempotent(db, job, JOB_LIMITS.activePerNamespace, handOff)
      claimed = inserted.claimed
      return { row: inserted.row, created: inserted.created }
    } finally {
      if (claimed === null) handOff?.release()
      else handOff!.run(claimed)
    }
  }
  return await db.transaction(async (tx) => {
    const inserted = await insertIdempotent(tx, job, JOB_LIMITS.activePerNamespace)
    if (inserted.created) {
      await grantFileReads(tx, {
        caller: { appId: input.appId, namespaceId: input.namespaceId, userId: input.enqueuedBy, system: input.enqueuedBy === null, jobId: null },
        jobId: inserted.row.id, refs: fileReads, now,
      })
    }
    return inserted
  })
}
