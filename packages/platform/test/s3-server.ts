/**
 * A real S3-protocol server for tests (`s3rver`), on a free loopback port with its own data
 * directory and one bucket, and the FILES_S3_* style options that reach it.
 *
 * s3rver 3.7 stores multipart uploads (`CreateMultipartUpload`, `UploadPart`,
 * `CompleteMultipartUpload`) but answers `AbortMultipartUpload` 405 and
 * `ListMultipartUploads` 501 NotImplemented, so without help an aborted upload's parts stay
 * on its disk and no sweep can find them. This file adds those two operations, a few lines
 * over s3rver's own upload store (`<bucket>/._S3rver_uploads/<uploadId>/`, holding `key`,
 * `metadata` and the parts), before s3rver's router; it also records every request, so a
 * test can name the calls the platform made. `unfinishedUploads` reads that store directly,
 * not through the added operations, so what a test counts is what s3rver holds.
 */
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from 's3rver'
import type { S3StorageOptions } from '../src/files/s3-storage.ts'

/** A request s3rver received: method, path (`/<bucket>/<key>`) and query. */
export interface S3Request {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
}

export interface TestS3Server {
  readonly options: S3StorageOptions
  /** Every request received, in order. */
  readonly requests: readonly S3Request[]
  /** The multipart uploads s3rver holds unfinished (neither completed nor aborted), read from its store. */
  unfinishedUploads(): Promise<Array<{ readonly key: string; readonly uploadId: string }>>
  close(): Promise<void>
}

/** The slice of Koa's context the added operations use. */
interface KoaContext {
  readonly method: string
  readonly path: string
  readonly query: Record<string, string | string[] | undefined>
  status: number
  body: unknown
}

export async function startS3Server(bucket = 'service-files'): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
  const uploadsDir = join(directory, bucket, '._S3rver_uploads')
  const requests: S3Request[] = []

  async function uploads(): Promise<Array<{ key: string; uploadId: string; initiated: Date }>> {
    const ids = await readdir(uploadsDir).catch(() => [] as string[])
    const found = []
    for (const uploadId of ids) {
      const key = await readFile(join(uploadsDir, uploadId, 'key'), 'utf8').catch(() => null)
      if (key === null) continue
      found.push({ key, uploadId, initiated: (await stat(join(uploadsDir, uploadId, 'metadata'))).mtime })
    }
    return found.sort((a, b) => a.key.localeCompare(b.key) || a.initiated.getTime() - b.initiated.getTime())
  }

  async function multipartOperations(ctx: KoaContext, next: () => Promise<void>): Promise<void> {
    const query = Object.fromEntries(Object.entries(ctx.query).map(([name, value]) => [name, Array.isArray(value) ? value.join(',') : value ?? '']))
    requests.push({ method: ctx.method, path: ctx.path, query })
    const [, pathBucket, ...keyParts] = ctx.path.split('/')
    if (pathBucket !== bucket) return next()
    const key = decodeURIComponent(keyParts.join('/'))
    if (ctx.method === 'DELETE' && key !== '' && typeof query.uploadId === 'string') {
      const upload = (await uploads()).find((candidate) => candidate.uploadId === query.uploadId && candidate.key === key)
      if (upload === undefined) {
        ctx.status = 404
        ctx.body = { Error: { Code: 'NoSuchUpload', Message: 'The specified upload does not exist.', UploadId: query.uploadId } }
        return
      }
      await rm(join(uploadsDir, upload.uploadId), { recursive: true, force: true })
      ctx.status = 204
      return
    }
    if (ctx.method === 'GET' && key === '' && 'uploads' in query) {
      const prefix = query.prefix ?? ''
      const listed = (await uploads()).filter((upload) => upload.key.startsWith(prefix)).slice(0, 1000)
      ctx.status = 200
      ctx.body = {
        ListMultipartUploadsResult: {
          '@': { xmlns: 'http://s3.amazonaws.com/doc/2006-03-01/' },
          Bucket: bucket, KeyMarker: '', UploadIdMarker: '', Prefix: prefix, MaxUploads: 1000, IsTruncated: false,
          ...(listed.length === 0 ? {} : {
            Upload: listed.map((upload) => ({ Key: upload.key, UploadId: upload.uploadId, Initiated: upload.initiated.toISOString(), StorageClass: 'STANDARD' })),
          }),
        },
      }
      return
    }
    return next()
  }
  // Before s3rver's router (its last middleware), after its logging and XML encoding.
  const middleware = (server as unknown as { middleware: unknown[] }).middleware
  middleware.splice(middleware.length - 1, 0, multipartOperations)

  const address = await server.run()
  return {
    options: {
      bucket, prefix: 'files/', region: 'us-east-1', endpoint: `http://127.0.0.1:${address.port}`,
      accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true,
    },
    requests,
    unfinishedUploads: async () => (await uploads()).map(({ key, uploadId }) => ({ key, uploadId })),
    async close() {
      await server.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
