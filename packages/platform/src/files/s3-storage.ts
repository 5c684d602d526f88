/**
 * The S3-compatible storage adapter (storage.ts), on `@aws-sdk/client-s3`: AWS S3, MinIO,
 * Ceph, R2 and the like (FILES_S3_*). An object up to one part (8 MiB) is one PutObject;
 * a larger one is a multipart upload of 8 MiB parts, completed only when every part is
 * stored (S3 makes an object visible whole, at completion) and aborted when the write
 * fails. Memory stays at about one part per write. A crash may leave an unfinished
 * multipart upload: `sweepTemporary` aborts those started before the given time.
 */
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand,
  GetObjectCommand, HeadObjectCommand, ListMultipartUploadsCommand, PutObjectCommand, S3Client, UploadPartCommand,
} from '@aws-sdk/client-s3'
import { checkStorageKey, ObjectMissingError, type FileStorage } from './storage.ts'

export interface S3StorageOptions {
  readonly bucket: string
  /** Keys are stored under this prefix (may be ''). */
  readonly prefix: string
  readonly region: string
  /** An S3-compatible endpoint (MinIO, R2...); null for AWS's own. */
  readonly endpoint: string | null
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** Path-style addressing (`<endpoint>/<bucket>/<key>`), which most S3-compatible servers need. */
  readonly forcePathStyle: boolean
}

/** Multipart part size (S3's minimum for all parts but the last is 5 MiB). */
export const S3_PART_BYTES = 8 * 1024 * 1024

function missing(error: unknown): boolean {
  const name = (error as { name?: string }).name
  const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
  return name === 'NoSuchKey' || name === 'NotFound' || status === 404
}

/**
 * @example
 * const storage = createS3Storage({ bucket: 'files', prefix: '', region: 'us-east-1', endpoint: 'http://127.0.0.1:9000',
 *   accessKeyId, secretAccessKey, forcePathStyle: true })
 */
export function createS3Storage(options: S3StorageOptions): FileStorage {
  const client = new S3Client({
    region: options.region,
    ...(options.endpoint === null ? {} : { endpoint: options.endpoint }),
    forcePathStyle: options.forcePathStyle,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
  })
  const Bucket = options.bucket
  const keyOf = (key: string) => {
    checkStorageKey(key)
    return `${options.prefix}${key}`
  }

  async function writeMultipart(Key: string, first: Uint8Array, rest: AsyncIterator<Uint8Array>, pending: Uint8Array[]): Promise<number> {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key }))
    if (UploadId === undefined) throw new Error('S3 gave no multipart upload id')
    const parts: { ETag: string; PartNumber: number }[] = []
    let size = 0
    try {
      const upload = async (body: Uint8Array) => {
        const PartNumber = parts.length + 1
        const { ETag } = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: body, ContentLength: body.byteLength }))
        parts.push({ ETag: ETag ?? '', PartNumber })
        size += body.byteLength
      }
      await upload(first)
      let buffered = pending
      let bufferedBytes = buffered.reduce((sum, chunk) => sum + chunk.byteLength, 0)
      for (;;) {
        const next = await rest.next()
        if (!next.done) {
          buffered.push(next.value)
          bufferedBytes += next.value.byteLength
        }
        while (bufferedBytes >= S3_PART_BYTES || (next.done && bufferedBytes > 0)) {
          const body = take(buffered, Math.min(S3_PART_BYTES, bufferedBytes))
          bufferedBytes -= body.byteLength
          buffered = buffered.filter((chunk) => chunk.byteLength > 0)
          await upload(body)
        }
        if (next.done) break
      }
      await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }))
      return size
    } catch (error) {
      // The write's own failure is what the caller needs; an abort that fails too leaves the
      // upload to sweepTemporary (and to the bucket's AbortIncompleteMultipartUpload rule).
      await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => {})
      throw error
    }
  }

  return {
    kind: 's3',

    async write(key, chunks) {
      const Key = keyOf(key)
      const iterator = chunks[Symbol.asyncIterator]()
      let buffered: Uint8Array[] = []
      let bufferedBytes = 0
      for (;;) {
        const next = await iterator.next()
        if (next.done) break
        buffered.push(next.value)
        bufferedBytes += next.value.byteLength
        if (bufferedBytes > S3_PART_BYTES) {
          const first = take(buffered, S3_PART_BYTES)
          buffered = buffered.filter((chunk) => chunk.byteLength > 0)
          return await writeMultipart(Key, first, iterator, buffered)
        }
      }
      const body = take(buffered, bufferedBytes)
      await client.send(new PutObjectCommand({ Bucket, Key, Body: body, ContentLength: body.byteLength }))
      return body.byteLength
    },

    async read(key, range) {
      const Key = keyOf(key)
      if (range !== undefined && range.length === 0) {
        if (!(await this.has(key))) throw new ObjectMissingError(`no object ${key}`)
        return (async function* () {})()
      }
      try {
        const output = await client.send(new GetObjectCommand({
          Bucket, Key, ...(range === undefined ? {} : { Range: `bytes=${range.offset}-${range.offset + range.length - 1}` }),
        }))
        const body = output.Body as AsyncIterable<Uint8Array> | undefined
        if (body === undefined) return (async function* () {})()
        return (async function* () {
          for await (const chunk of body) yield chunk
        })()
      } catch (error) {
        if (missing(error)) throw new ObjectMissingError(`no object ${key}`)
        throw error
      }
    },

    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(key) }))
    },

    async has(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket, Key: keyOf(key) }))
        return true
      } catch (error) {
        if (missing(error)) return false
        throw error
      }
    },

    async sweepTemporary(before) {
      let removed = 0
      let listed
      try {
        listed = await client.send(new ListMultipartUploadsCommand({ Bucket, ...(options.prefix ? { Prefix: options.prefix } : {}) }))
      } catch (error) {
        // An S3-compatible server that does not list uploads (plain s3rver; the tests add
        // it): the bucket's lifecycle rule (AbortIncompleteMultipartUpload) is then the only sweep.
        if ((error as { name?: string }).name === 'NotImplemented') return 0
        throw error
      }
      for (const upload of listed.Uploads ?? []) {
        if (upload.Key === undefined || upload.UploadId === undefined) continue
        if (upload.Initiated !== undefined && upload.Initiated >= before) continue
        await client.send(new AbortMultipartUploadCommand({ Bucket, Key: upload.Key, UploadId: upload.UploadId })).catch(() => {})
        removed += 1
      }
      return removed
    },

    async close() {
      client.destroy()
    },
  }
}

/** Takes the first `bytes` bytes off `chunks` (shortening them in place) as one array. */
function take(chunks: Uint8Array[], bytes: number): Uint8Array {
  const out = new Uint8Array(bytes)
  let filled = 0
  for (let index = 0; index < chunks.length && filled < bytes; index += 1) {
    const chunk = chunks[index]!
    const used = Math.min(chunk.byteLength, bytes - filled)
    out.set(chunk.subarray(0, used), filled)
    filled += used
    chunks[index] = chunk.subarray(used)
  }
  return out
}
