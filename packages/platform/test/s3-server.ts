/**
 * A real S3-protocol server for tests (`s3rver`), on a free loopback port with its own data
 * directory and one bucket, and the FILES_S3_* style options that reach it.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import S3rver from 's3rver'
import type { S3StorageOptions } from '../src/files/s3-storage.ts'

export interface TestS3Server {
  readonly options: S3StorageOptions
  close(): Promise<void>
}

export async function startS3Server(bucket = 'service-files'): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 's3rver-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: bucket, configs: [] }] })
  const address = await server.run()
  return {
    options: {
      bucket, prefix: 'files/', region: 'us-east-1', endpoint: `http://127.0.0.1:${address.port}`,
      accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER', forcePathStyle: true,
    },
    async close() {
      await server.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
