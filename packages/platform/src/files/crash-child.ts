/**
 * The process the crash test kills (files.test.ts): it opens the test database and the
 * storage it is given, starts an upload that never ends, says `writing` once bytes are on
 * their way to storage, and waits to be killed with SIGKILL.
 *
 * Usage: tsx crash-child.ts '<json: { databaseUrl?, pgliteDir?, root?, s3? }>'
 */
import { openPglite } from '../db/pglite.ts'
import { openPostgres } from '../db/postgres.ts'
import { silentLogger } from '../lib/logger.ts'
import { createFiles } from './files.ts'
import { createLocalStorage } from './local-storage.ts'
import { createS3Storage, type S3StorageOptions } from './s3-storage.ts'

const options = JSON.parse(process.argv[2] ?? '{}') as { databaseUrl?: string; pgliteDir?: string; root?: string; s3?: S3StorageOptions; namespaceId: string; appId: string; now: string }
const db = options.databaseUrl ? openPostgres({ url: options.databaseUrl, maxConnections: 2 }) : await openPglite({ dataDir: options.pgliteDir! })
const storage = options.s3 ? createS3Storage(options.s3) : createLocalStorage({ root: options.root! })
// The test's clock, so the sweep's age is measured on one time line.
const files = createFiles({ db, clock: { now: () => new Date(options.now) }, logger: silentLogger, storage })

async function* endless(): AsyncIterable<Uint8Array> {
  // Past one S3 part, so an S3 upload is a multipart upload in flight when the kill comes.
  for (let index = 0; ; index += 1) {
    yield new Uint8Array(1024 * 1024).fill(index & 0xff)
    if (index === 12) process.stdout.write('writing\n')
    if (index >= 12) await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

await files.upload({ appId: options.appId, namespaceId: options.namespaceId, userId: null, system: true, jobId: null }, {
  name: 'never.bin', contentType: 'application/octet-stream', chunks: endless(),
})
