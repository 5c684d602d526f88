/**
 * Managed files (spec 2.10 `files`, 4.3, 5.5, 8): the feature's public surface.
 * `createFiles` (files.ts) over a storage adapter (`createFileStorage` picks local disk or
 * S3 from configuration), `createFilesContext` answers `ctx.files`, `fileCallerOf` turns an
 * invocation into the caller the authority rules read, `readManagedFile` is how other
 * features (ctx.ai attachments) read a file's bytes under the same authority as
 * `ctx.files.download`, and `filesRoutes` serves the browser SDK's `service.files`.
 */
import type { Queryable } from '../db/db.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { ServiceError } from '../lib/errors.ts'
import { collect } from './context.ts'
import type { FileCaller, ManagedFiles } from './files.ts'
import { createLocalStorage } from './local-storage.ts'
import { createS3Storage, type S3StorageOptions } from './s3-storage.ts'
import type { FileStorage } from './storage.ts'

export { createFiles, FILE_LIMITS, type FileCaller, type FileInfo, type ManagedFiles, type FilesDeps } from './files.ts'
export { checkGrantSdk, grantFileReads, readGrantOption } from './grants.ts'
export { createFilesContext, type FilePipeSizes, type FilesContextCall } from './context.ts'
export type { FileStorage } from './storage.ts'
export { createLocalStorage } from './local-storage.ts'
export { filesRoutes, type FilesRequestTarget } from './routes.ts'
export { createS3Storage } from './s3-storage.ts'
export type { S3StorageOptions } from './s3-storage.ts'

/** Local disk under `root` (`<SERVICE_DATA_DIR>/files`) unless S3 is configured. */
export function createFileStorage(options: { root: string; s3: S3StorageOptions | null }): FileStorage {
  return options.s3 === null ? createLocalStorage({ root: options.root }) : createS3Storage(options.s3)
}

/** The identity facts of an invocation (functions/host.ts HostMeta) the files authority reads. */
export interface InvocationFacts {
  readonly appId: string
  readonly namespace: { readonly id: string } | null
  readonly identity: { readonly role: 'user' | 'system'; readonly claims: Record<string, unknown> }
  readonly user: { readonly id: string } | null
  readonly job: { readonly id: string } | null
}

/** The files caller of an invocation, or null when its app has no namespace yet. */
export function fileCallerOf(meta: InvocationFacts): FileCaller | null {
  if (meta.namespace === null) return null
  return {
    appId: meta.appId,
    namespaceId: meta.namespace.id,
    userId: meta.identity.role === 'system' ? null : meta.user?.id ?? null,
    system: meta.identity.role === 'system',
    jobId: meta.job?.id ?? null,
  }
}

/**
 * What `readManagedFile` returns: the file's bytes, or, for a file over `maxBytes` read with
 * `headBytes`, only its first bytes (`tooLarge: true`), enough to tell what it is.
 */
export type ManagedFileBytes =
  | {
    readonly tooLarge?: false
    readonly data: Uint8Array
    readonly contentType: string
    readonly name: string
    readonly size: number
    readonly generation: number
  }
  | { readonly tooLarge: true; readonly head: Uint8Array; readonly size: number }

/**
 * A managed file's bytes for another feature of the platform (ctx.ai attachments), with
 * the same authority as `ctx.files.download` (FILE_NOT_FOUND, FILE_INPUT_CHANGED,
 * FILE_GRANT_EXPIRED). `maxBytes` refuses a larger file before reading it: FILE_TOO_LARGE,
 * or, with `headBytes`, its size and first `headBytes` bytes only (ctx.ai then names the
 * limit the file breaks, which depends on what it is).
 *
 * @example
 * const file = await readManagedFile({ db, files }, { appId, devName, identity: meta.identity, user: meta.user, job: meta.job, ref })
 */
export async function readManagedFile(
  deps: { readonly db: Queryable; readonly files: ManagedFiles },
  input: {
    readonly appId: string
    readonly devName: string
    readonly identity: InvocationFacts['identity']
    readonly user?: { readonly id: string } | null
    readonly job?: { readonly id: string } | null
    readonly ref: string
    readonly maxBytes?: number
    readonly headBytes?: number
  },
): Promise<ManagedFileBytes> {
  const namespace = input.devName === ''
    ? await findNamespace(deps.db, input.appId)
    : await findNamespace(deps.db, input.appId, 'development', input.devName)
  const userId = input.user?.id ?? (typeof input.identity.claims.sub === 'string' ? input.identity.claims.sub : null)
  const caller = fileCallerOf({
    appId: input.appId, namespace, identity: input.identity, user: userId === null ? null : { id: userId }, job: input.job ?? null,
  })
  if (caller === null) throw new ServiceError('FILE_NOT_FOUND', 'No file by that reference in this app')
  const opened = await deps.files.open(caller, input.ref)
  if (input.maxBytes !== undefined && opened.info.size > input.maxBytes) {
    if (input.headBytes !== undefined) {
      const head = await collect(await opened.read({ offset: 0, length: Math.min(input.headBytes, opened.info.size) }))
      return { tooLarge: true, head, size: opened.info.size }
    }
    throw new ServiceError('FILE_TOO_LARGE', `The file is ${opened.info.size} bytes; at most ${input.maxBytes} are accepted here`, {
      details: { size: opened.info.size, limit: input.maxBytes },
    })
  }
  const data = await collect(await opened.read())
  return { data, contentType: opened.info.contentType, name: opened.info.name, size: opened.info.size, generation: opened.info.generation }
}
