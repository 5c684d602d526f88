/**
 * Delegated read grants (SDK 2.4.0, spec 4.3, 5.5, 8): `jobs.enqueue(queue, payload, {
 * idempotencyKey, files: { read: [refs] } })` lets the queue's consumer download those
 * files, and only download them, at the content generation each had when the job was
 * enqueued, for 14 days. The grant is kept per job, not per attempt: every attempt (a
 * retry too) reads it afresh while it runs and holds nothing after (files.ts `resolve`).
 */
import type { Queryable } from '../db/db.ts'
import { ServiceError } from '../lib/errors.ts'
import { SDK_GATES, sdkAtLeast } from '../manifest/index.ts'
import { checkRef, FILE_LIMITS, owns, type FileCaller } from './files.ts'
import { findByRef, insertGrants } from './queries.ts'

/**
 * Reads `files` of enqueue options: `{ read: [ref, ...] }` with 1 to 16 references.
 *
 * @example
 * readGrantOption({ read: [ref] }) // [ref]
 */
export function readGrantOption(files: unknown): readonly string[] {
  const read = typeof files === 'object' && files !== null && !Array.isArray(files) ? (files as Record<string, unknown>).read : undefined
  if (typeof files !== 'object' || files === null || Object.keys(files).some((key) => key !== 'read') ||
    !Array.isArray(read) || read.length < 1 || read.length > FILE_LIMITS.grantFiles || !read.every((ref) => typeof ref === 'string')) {
    throw new ServiceError('FILE_GRANT_INVALID', `files is { read: [...] } with 1 to ${FILE_LIMITS.grantFiles} file references`, {
      details: { field: 'files.read' },
    })
  }
  return read as string[]
}

/**
 * Refuses a grant from a release pinned below SDK 2.4.0 (spec 9), which has no `files`
 * option: FILE_GRANT_SDK_TOO_OLD, naming the version to pin.
 */
export async function checkGrantSdk(db: Queryable, releaseId: string): Promise<void> {
  const rows = await db.query<{ sdk: string | null }>(
    `select manifest -> 'runtime' -> 'sdk' ->> 'version' as sdk from platform.releases where id = $1`, [releaseId])
  const sdk = rows[0]?.sdk ?? '0.0.0'
  if (!sdkAtLeast(sdk, SDK_GATES.fileGrants)) {
    throw new ServiceError('FILE_GRANT_SDK_TOO_OLD',
      `Delegated file read grants need runtime SDK ${SDK_GATES.fileGrants} or later; this release pins ${sdk}: raise runtime.sdk.version in service.yaml`,
      { details: { sdk, required: SDK_GATES.fileGrants } })
  }
}

/**
 * Pins the files of a grant for `jobId`, inside the enqueue's transaction: each reference
 * must name a current file of the namespace that the producer may read itself; together
 * they are at most 128 MiB.
 */
export async function grantFileReads(tx: Queryable, input: { caller: FileCaller; jobId: string; refs: readonly string[]; now: Date }): Promise<void> {
  const { caller, refs } = input
  const pinned = new Map<string, number>()
  let total = 0
  for (const [index, ref] of refs.entries()) {
    const checked = checkRef(ref)
    const row = checked === null ? undefined : await findByRef(tx, caller.namespaceId, checked)
    if (row === undefined || !owns(caller, row) || row.ref_generation !== row.generation) {
      throw new ServiceError('FILE_NOT_FOUND', 'A file of files.read is not a current file this invocation may read', {
        details: { field: 'files.read', index },
      })
    }
    if (!pinned.has(row.id)) total += Number(row.size)
    pinned.set(row.id, row.generation)
  }
  if (total > FILE_LIMITS.grantBytes) {
    throw new ServiceError('FILE_GRANT_TOO_LARGE', `The files of one grant are at most ${FILE_LIMITS.grantBytes} bytes together; these are ${total}`, {
      details: { bytes: total, limit: FILE_LIMITS.grantBytes },
    })
  }
  await insertGrants(tx, {
    jobId: input.jobId,
    files: [...pinned].map(([fileId, generation]) => ({ fileId, generation })),
    expiresAt: new Date(input.now.getTime() + FILE_LIMITS.grantMs),
  })
}
