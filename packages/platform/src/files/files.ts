/**
 * Managed files (spec 2.10 `files`, 4.3, 5.5, 8): upload, download, replace, remove and
 * info of one object at a time, by opaque reference, with content generations and delegated
 * read grants. Bytes live in a storage adapter (storage.ts); metadata in platform.files.
 *
 * References are `file_` and 32 random bytes in base64url, one per content generation, and
 * are looked up together with the caller's namespace: a reference means nothing in another
 * app or development namespace, even when it is known. A replacement issues a new
 * reference and the old one stops reading.
 *
 * Authority (docs/decisions.md "Managed files: who may read whose files"): a file belongs
 * to the person who uploaded it, or to the app when a `system` invocation uploaded it. A
 * signed-in person reads and writes their own files; a `system` invocation reads and writes
 * the app's files; nobody else sees a file (FILE_NOT_FOUND, never "forbidden", so a probe
 * learns nothing). Writes need a signed-in user or a `system` invocation (AUTH_REQUIRED).
 * A queue consumer whose job carries a delegated read grant may also download and read the
 * info of the granted files, at the generation pinned when the job was enqueued
 * (FILE_INPUT_CHANGED after a replacement, even with identical bytes), until the grant
 * expires (14 days); it may not replace or remove them (FILE_READ_ONLY).
 *
 * Crash safety: an object's key is recorded as pending (committed) before its bytes are
 * written; the file's metadata and the pending row's removal commit in one transaction
 * after the bytes are whole. A crash in between leaves a pending row and maybe an object,
 * never metadata without bytes; `sweep` deletes pending objects older than an hour (and the
 * adapter's temporary leftovers). Replaced and removed objects go the same way: marked
 * pending in the transaction that drops them, deleted after it commits.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import type { Db } from '../db/db.ts'
import type { Clock } from '../lib/clock.ts'
import { ServiceError } from '../lib/errors.ts'
import { isUuid } from '../lib/ids.ts'
import type { Logger } from '../lib/logger.ts'
import {
  deleteFile, deletePending, findById, findByRef, findGrant, insertFile, insertPending, insertRef, lockFile,
  stalePending, updateContent, type RefRow,
} from './queries.ts'
import { ObjectMissingError, type FileStorage } from './storage.ts'

/** Limits; `maxFileBytes` is configuration (FILES_MAX_FILE_MB), the others the spec's. */
export const FILE_LIMITS = {
  /** Default largest file: 128 MiB (FILES_MAX_FILE_MB). */
  defaultMaxFileBytes: 128 * 1024 * 1024,
  nameChars: 255,
  contentTypeChars: 255,
  /** Delegated read grants: 1 to 16 files, together at most 128 MiB, for 14 days. */
  grantFiles: 16,
  grantBytes: 128 * 1024 * 1024,
  grantMs: 14 * 24 * 60 * 60 * 1000,
  /** Pending objects older than this are orphans: no upload lasts this long. */
  sweepAgeMs: 60 * 60 * 1000,
} as const

/** Who is asking: the invocation's app namespace and identity. */
export interface FileCaller {
  readonly appId: string
  readonly namespaceId: string
  /** The signed-in person, or null. */
  readonly userId: string | null
  /** A `system` invocation (the app's own authority). */
  readonly system: boolean
  /** The queue job whose attempt this is (its delegated read grant applies), or null. */
  readonly jobId: string | null
}

/** What `info` answers (spec 4.3: includes `contentType`; the rest is our choice). */
export interface FileInfo {
  readonly id: string
  readonly ref: string
  readonly name: string
  readonly contentType: string
  readonly size: number
  readonly generation: number
  readonly createdAt: string
  readonly updatedAt: string
}

export interface FileUpload {
  readonly name: string
  readonly contentType: string
  readonly chunks: AsyncIterable<Uint8Array>
}

export interface ManagedFiles {
  readonly storage: FileStorage
  readonly maxFileBytes: number
  upload(caller: FileCaller, file: FileUpload): Promise<FileInfo>
  /** Replaces the content (a new generation and reference); `contentType` kept unless given. */
  replace(caller: FileCaller, ref: string, file: { name: string; contentType?: string; chunks: AsyncIterable<Uint8Array> }): Promise<FileInfo>
  remove(caller: FileCaller, ref: string): Promise<void>
  info(caller: FileCaller, idOrRef: string): Promise<FileInfo>
  /** The file a reference names, if the caller may download it, and a reader of its bytes. */
  open(caller: FileCaller, ref: string): Promise<{ info: FileInfo; read: (range?: { offset: number; length: number }) => Promise<AsyncIterable<Uint8Array>> }>
  /** Deletes pending objects older than the sweep age and the adapter's leftovers; returns how many. */
  sweep(): Promise<number>
  start(): void
  stop(): Promise<void>
}

export interface FilesDeps {
  readonly db: Db
  readonly clock: Clock
  readonly logger: Logger
  readonly storage: FileStorage
  readonly maxFileBytes?: number
  /** How often the orphan sweep runs. Default 10 minutes. */
  readonly sweepIntervalMs?: number
  /** Pending objects and temporary leftovers older than this are orphans. Default one hour (tests: 0). */
  readonly sweepAgeMs?: number
}

const REF_PATTERN = /^file_[A-Za-z0-9_-]{43}$/

export function newFileRef(): string {
  return `file_${randomBytes(32).toString('base64url')}`
}

function invalid(message: string, field: string): ServiceError {
  return new ServiceError('FILE_INVALID', message, { details: { field } })
}

function notFound(): ServiceError {
  return new ServiceError('FILE_NOT_FOUND', 'No file by that reference in this app (it was never issued here, was replaced or was removed)')
}

export function checkFileName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > FILE_LIMITS.nameChars || /[\u0000-\u001f\u007f/\\]/.test(name)) {
    throw invalid(`A file name is 1 to ${FILE_LIMITS.nameChars} characters without slashes or control characters`, 'name')
  }
  return name
}

export function checkContentType(contentType: unknown): string {
  if (typeof contentType !== 'string' || contentType.length > FILE_LIMITS.contentTypeChars ||
    !/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;\s*[a-z0-9_-]+=("[^"]*"|[a-z0-9_.+-]+))*$/i.test(contentType)) {
    throw invalid('contentType must be a media type such as image/png or text/plain; charset=utf-8', 'contentType')
  }
  return contentType.toLowerCase()
}

export function checkRef(ref: unknown): string | null {
  if (typeof ref !== 'string') throw invalid('A file reference is a string (what upload returned)', 'ref')
  return REF_PATTERN.test(ref) ? ref : null
}

function infoOf(row: RefRow): FileInfo {
  return {
    id: row.id,
    ref: row.current_ref,
    name: row.name,
    contentType: row.content_type,
    size: Number(row.size),
    generation: row.generation,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  }
}

/** The caller owns the file: its uploader, or a system invocation for the app's files. */
export function owns(caller: FileCaller, row: RefRow): boolean {
  return row.owner_user_id === null ? caller.system : caller.userId !== null && caller.userId === row.owner_user_id
}

function needsWriter(caller: FileCaller): void {
  if (!caller.system && caller.userId === null) {
    throw new ServiceError('AUTH_REQUIRED', 'Storing files needs a signed-in user or a system Function (spec 5.5)')
  }
}

/** Counts, hashes and limits the bytes on their way to storage. */
async function* measured(chunks: AsyncIterable<Uint8Array>, facts: { size: number; hash: ReturnType<typeof createHash> }, max: number): AsyncIterable<Uint8Array> {
  for await (const chunk of chunks) {
    if (!(chunk instanceof Uint8Array)) throw invalid('File data must be bytes (Uint8Array) or a string', 'data')
    facts.size += chunk.byteLength
    if (facts.size > max) {
      throw new ServiceError('FILE_TOO_LARGE', `A file is at most ${max} bytes (FILES_MAX_FILE_MB)`, { details: { limit: max } })
    }
    facts.hash.update(chunk)
    yield chunk
  }
}

/**
 * @example
 * const files = createFiles({ db, clock, logger, storage: createLocalStorage({ root }) })
 * const info = await files.upload(caller, { name: 'a.txt', contentType: 'text/plain', chunks: [bytes] as never })
 */
export function createFiles(deps: FilesDeps): ManagedFiles {
  const { db, clock, storage } = deps
  const maxFileBytes = deps.maxFileBytes ?? FILE_LIMITS.defaultMaxFileBytes
  let sweepTimer: ReturnType<typeof setInterval> | undefined

  /** Bytes to storage under a new key recorded as pending; returns the key and facts. Leaves nothing when it fails. */
  async function store(chunks: AsyncIterable<Uint8Array>): Promise<{ key: string; size: number; sha256: string }> {
    const key = `f-${randomUUID()}`
    await insertPending(db, { storageKey: key, reason: 'upload', now: clock.now() })
    const facts = { size: 0, hash: createHash('sha256') }
    try {
      await storage.write(key, measured(chunks, facts, maxFileBytes))
    } catch (error) {
      await discard(key)
      throw error
    }
    return { key, size: facts.size, sha256: facts.hash.digest('hex') }
  }

  /** Deletes an object nobody refers to, then its pending row (a failure leaves it to the sweep). */
  async function discard(key: string): Promise<void> {
    try {
      await storage.delete(key)
      await deletePending(db, key)
    } catch (error) {
      deps.logger.warn('files: deleting an unused object failed; the sweep retries', { storageKey: key, error: String(error) })
    }
  }

  /** The file a reference names for this caller, with the grant's pin applied; FILE_NOT_FOUND when the caller may not see it. */
  async function resolve(caller: FileCaller, ref: string, access: 'read' | 'write'): Promise<RefRow> {
    const checked = checkRef(ref)
    if (checked === null) throw notFound()
    const row = await findByRef(db, caller.namespaceId, checked)
    if (row === undefined) throw notFound()
    const grant = caller.jobId === null ? undefined : await findGrant(db, caller.jobId, row.id)
    const owner = owns(caller, row)
    // A job reads the content it was given: the pin holds for a granted file even when the
    // consumer owns it too (the app's file granted by a system producer); its owner may still write it.
    if (grant !== undefined && !(owner && access === 'write')) {
      if (access === 'write') throw new ServiceError('FILE_READ_ONLY', 'A delegated read grant allows downloading the file only')
      if (!owner && new Date(grant.expires_at).getTime() <= clock.now().getTime()) {
        throw new ServiceError('FILE_GRANT_EXPIRED', 'The delegated read grant of this job expired (grants last 14 days)')
      }
      if (grant.generation !== row.generation || row.ref_generation !== row.generation) {
        throw new ServiceError('FILE_INPUT_CHANGED', 'The file was replaced after the job was enqueued; the job reads only the content it was given', {
          details: { granted: grant.generation, current: row.generation },
        })
      }
      return row
    }
    if (!owner) throw notFound()
    if (row.ref_generation !== row.generation) throw notFound()
    return row
  }

  async function commitNew(caller: FileCaller, file: { name: string; contentType: string }, stored: { key: string; size: number; sha256: string }): Promise<FileInfo> {
    const ref = newFileRef()
    const now = clock.now()
    try {
      const id = await db.transaction(async (tx) => {
        const fileId = await insertFile(tx, {
          appId: caller.appId, namespaceId: caller.namespaceId, ownerUserId: caller.system ? null : caller.userId,
          name: file.name, contentType: file.contentType, size: stored.size, sha256: stored.sha256, storageKey: stored.key, now,
        })
        await insertRef(tx, { ref, fileId, namespaceId: caller.namespaceId, generation: 1 })
        await deletePending(tx, stored.key)
        return fileId
      })
      return {
        id, ref, name: file.name, contentType: file.contentType, size: stored.size, generation: 1,
        createdAt: now.toISOString(), updatedAt: now.toISOString(),
      }
    } catch (error) {
      await discard(stored.key)
      throw error
    }
  }

  return {
    storage,
    maxFileBytes,

    async upload(caller, file) {
      needsWriter(caller)
      const name = checkFileName(file.name)
      const contentType = checkContentType(file.contentType)
      const stored = await store(file.chunks)
      return await commitNew(caller, { name, contentType }, stored)
    },

    async replace(caller, ref, file) {
      needsWriter(caller)
      const name = checkFileName(file.name)
      const contentType = file.contentType === undefined ? undefined : checkContentType(file.contentType)
      const row = await resolve(caller, ref, 'write')
      const stored = await store(file.chunks)
      const next = newFileRef()
      const now = clock.now()
      let replaced: { generation: number; contentType: string; oldKey: string }
      try {
        replaced = await db.transaction(async (tx) => {
          const locked = await lockFile(tx, row.id)
          if (locked === undefined || locked.generation !== row.generation) throw notFound()
          const type = contentType ?? locked.content_type
          const updated = await updateContent(tx, {
            fileId: row.id, generation: row.generation, name, contentType: type, size: stored.size, sha256: stored.sha256, storageKey: stored.key, now,
          })
          if (!updated) throw notFound()
          await insertRef(tx, { ref: next, fileId: row.id, namespaceId: caller.namespaceId, generation: row.generation + 1 })
          await deletePending(tx, stored.key)
          await insertPending(tx, { storageKey: locked.storage_key, reason: 'delete', now })
          return { generation: row.generation + 1, contentType: type, oldKey: locked.storage_key }
        })
      } catch (error) {
        await discard(stored.key)
        throw error
      }
      await discard(replaced.oldKey)
      return {
        id: row.id, ref: next, name, contentType: replaced.contentType, size: stored.size, generation: replaced.generation,
        createdAt: new Date(row.created_at).toISOString(), updatedAt: now.toISOString(),
      }
    },

    async remove(caller, ref) {
      needsWriter(caller)
      const row = await resolve(caller, ref, 'write')
      const key = await db.transaction(async (tx) => {
        const locked = await lockFile(tx, row.id)
        if (locked === undefined || locked.generation !== row.generation) throw notFound()
        await insertPending(tx, { storageKey: locked.storage_key, reason: 'delete', now: clock.now() })
        await deleteFile(tx, row.id)
        return locked.storage_key
      })
      await discard(key)
    },

    async info(caller, idOrRef) {
      if (typeof idOrRef === 'string' && isUuid(idOrRef)) {
        const row = await findById(db, caller.namespaceId, idOrRef.toLowerCase())
        if (row === undefined) throw notFound()
        // By id, a grant's reference is the one pinned: resolve through it so the pin applies.
        const grant = caller.jobId === null ? undefined : await findGrant(db, caller.jobId, row.id)
        if (grant !== undefined) return infoOf(await resolve(caller, row.current_ref, 'read'))
        if (!owns(caller, row)) throw notFound()
        return infoOf(row)
      }
      return infoOf(await resolve(caller, idOrRef, 'read'))
    },

    async open(caller, ref) {
      const row = await resolve(caller, ref, 'read')
      const info = infoOf(row)
      return {
        info,
        read: async (range) => {
          try {
            return await storage.read(row.storage_key, range)
          } catch (error) {
            // Removed or replaced while being read: the object of that generation is gone.
            if (error instanceof ObjectMissingError) throw notFound()
            throw error
          }
        },
      }
    },

    async sweep() {
      const age = deps.sweepAgeMs ?? FILE_LIMITS.sweepAgeMs
      const before = new Date(clock.now().getTime() - age + (age === 0 ? 1 : 0))
      let removed = 0
      for (;;) {
        const stale = await stalePending(db, before, 100)
        for (const { storage_key: key } of stale) {
          await storage.delete(key)
          await deletePending(db, key)
          removed += 1
        }
        if (stale.length < 100) break
      }
      // Temporary files carry the disk's own times, so their age is by the wall clock.
      removed += await storage.sweepTemporary(new Date(Date.now() - age + (age === 0 ? 1 : 0)))
      return removed
    },

    start() {
      const run = () => {
        this.sweep().then(
          (removed) => { if (removed > 0) deps.logger.info('files: orphaned objects swept', { removed }) },
          (error: unknown) => deps.logger.warn('files: the orphan sweep failed', { error: String(error) }))
      }
      sweepTimer = setInterval(run, deps.sweepIntervalMs ?? 10 * 60 * 1000)
      sweepTimer.unref()
    },

    async stop() {
      clearInterval(sweepTimer)
      await storage.close()
    },
  }
}
