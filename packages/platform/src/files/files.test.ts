/**
 * The files feature over each storage adapter (local disk, and S3 against s3rver): size
 * limits, failed uploads leave nothing, replaced and removed content is deleted, grant
 * limits, and the crash test: a process killed during an upload leaves no half file and,
 * after the sweep, no orphan: no object, no temporary file and, on S3, no unfinished
 * multipart upload, the sweep having aborted the killed one by its id (on PGlite the killed
 * process has the database directory to itself, as a crashed single-process platform would;
 * on PostgreSQL it shares the server).
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import { backend } from '../../test/test-db.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { startS3Server, type TestS3Server } from '../../test/s3-server.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { migratePlatform } from '../db/migrate.ts'
import { openPglite } from '../db/pglite.ts'
import type { Db } from '../db/db.ts'
import { silentLogger } from '../lib/logger.ts'
import { ServiceError } from '../lib/errors.ts'
import { createFiles, type FileCaller, type ManagedFiles } from './files.ts'
import { grantFileReads } from './grants.ts'
import { createLocalStorage } from './local-storage.ts'
import { createS3Storage, type S3StorageOptions } from './s3-storage.ts'
import type { FileStorage } from './storage.ts'

async function* chunks(total: number, size = 64 * 1024): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < total; sent += size) yield new Uint8Array(Math.min(size, total - sent)).fill(sent & 0xff)
}

const code = (expected: string) => (error: unknown) => error instanceof ServiceError && error.code === expected

interface Backing {
  readonly name: string
  storage(): FileStorage
  /** Objects stored (never temporary data). */
  objects(): Promise<number>
  /** Temporary leftovers: local temporary files, unfinished S3 multipart uploads. */
  temporary(): Promise<number>
  childOptions(): { root?: string; s3?: S3StorageOptions }
  /** The S3-protocol server, for S3 storage. */
  readonly s3?: TestS3Server
  close(): Promise<void>
}

async function localBacking(): Promise<Backing> {
  const root = await mkdtemp(join(tmpdir(), 'files-domain-'))
  const count = async (dir: string) => {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
    return entries.filter((entry) => entry.isFile()).length
  }
  return {
    name: 'local disk',
    storage: () => createLocalStorage({ root }),
    objects: () => count(join(root, 'objects')),
    temporary: () => count(join(root, 'tmp')),
    childOptions: () => ({ root }),
    close: () => rm(root, { recursive: true, force: true }),
  }
}

async function s3Backing(): Promise<Backing> {
  const server: TestS3Server = await startS3Server()
  const o = server.options
  const client = new S3Client({ region: o.region, endpoint: o.endpoint!, forcePathStyle: true, credentials: { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } })
  return {
    name: 'S3-compatible (s3rver)',
    storage: () => createS3Storage(o),
    objects: async () => (await client.send(new ListObjectsV2Command({ Bucket: o.bucket, Prefix: o.prefix }))).KeyCount ?? 0,
    temporary: async () => (await server.unfinishedUploads()).length,
    childOptions: () => ({ s3: o }),
    s3: server,
    close: async () => {
      client.destroy()
      await server.close()
    },
  }
}

for (const [label, open] of [['local disk', localBacking], ['S3-compatible (s3rver)', s3Backing]] as const) {
  describe(`files over ${label} storage (${backend})`, () => {
    let h: Harness
    let backing: Backing
    let files: ManagedFiles
    let ann: FileCaller
    let system: FileCaller

    before(async () => {
      backing = await open()
      h = await startHarness()
      const { token } = await h.createOwner('owner@files-domain.test')
      assert.equal((await h.request('/v1/apps', { token, json: { slug: 'plain', visibility: 'public' } })).status, 201)
      assert.equal((await h.request('/v1/apps/plain/deployments', { token, json: bundle({ 'service.yaml': manifest('plain') }) })).status, 201)
      const app = (await findAppBySlug(h.t.db, 'plain'))!
      const namespace = (await findNamespace(h.t.db, app.id))!
      files = createFiles({ db: h.t.db, clock: h.clock, logger: silentLogger, storage: backing.storage(), maxFileBytes: 1024 * 1024, sweepAgeMs: 0 })
      ann = { appId: app.id, namespaceId: namespace.id, userId: '00000000-0000-4000-8000-00000000000a', system: false, jobId: null }
      system = { ...ann, userId: null, system: true }
    })
    after(async () => {
      await files.stop()
      await h.close()
      await backing.close()
    })

    const pending = async () => (await h.t.db.query(`select 1 from platform.file_objects_pending`)).length

    test(`a file over FILES_MAX_FILE_MB is FILE_TOO_LARGE and leaves nothing behind`, async () => {
      const before = await backing.objects()
      await assert.rejects(files.upload(ann, { name: 'big.bin', contentType: 'application/octet-stream', chunks: chunks(1024 * 1024 + 1) }), code('FILE_TOO_LARGE'))
      assert.equal(await backing.objects(), before)
      assert.equal(await backing.temporary(), 0)
      assert.equal(await pending(), 0)
      const exactly = await files.upload(ann, { name: 'max.bin', contentType: 'application/octet-stream', chunks: chunks(1024 * 1024) })
      assert.equal(exactly.size, 1024 * 1024, 'the limit itself is allowed')
    })

    test('an upload whose data fails part way leaves no file, object, temporary file or pending row', async () => {
      const before = await backing.objects()
      const rows = (await h.t.db.query(`select 1 from platform.files`)).length
      await assert.rejects(files.upload(ann, {
        name: 'broken.bin', contentType: 'application/octet-stream',
        chunks: (async function* () {
          yield new Uint8Array(100_000)
          throw new Error('the caller went away')
        })(),
      }), /the caller went away/)
      assert.equal(await backing.objects(), before)
      assert.equal(await backing.temporary(), 0)
      assert.equal(await pending(), 0)
      assert.equal((await h.t.db.query(`select 1 from platform.files`)).length, rows)
    })

    test('a replaced or removed file’s old content is deleted from storage; a reader of the old generation finds nothing', async () => {
      const before = await backing.objects()
      const first = await files.upload(system, { name: 'a.txt', contentType: 'text/plain', chunks: chunks(10) })
      const opened = await files.open(system, first.ref)
      const second = await files.replace(system, first.ref, { name: 'b.txt', chunks: chunks(20) })
      assert.equal(second.generation, 2)
      assert.equal(await backing.objects(), before + 1)
      await assert.rejects(opened.read(), code('FILE_NOT_FOUND'), 'the first generation is gone')
      await files.remove(system, second.ref)
      assert.equal(await backing.objects(), before)
      assert.equal(await pending(), 0)
    })

    test('grant limits: at most 128 MiB together (FILE_GRANT_TOO_LARGE), only current files the producer may read', async () => {
      const refs: string[] = []
      for (let index = 0; index < 3; index += 1) refs.push((await files.upload(ann, { name: `p${index}.bin`, contentType: 'application/pdf', chunks: chunks(10) })).ref)
      // Sizes as if each were 50 MiB (within the per-file limit of a default platform).
      await h.t.db.query(`update platform.files set size = 52428800 where id in (select file_id from platform.file_refs where ref = any($1::text[]))`, [refs])
      const jobId = '00000000-0000-4000-8000-000000000001'
      await assert.rejects(h.t.db.transaction((tx) => grantFileReads(tx, { caller: ann, jobId, refs, now: h.clock.now() })), code('FILE_GRANT_TOO_LARGE'))
      await assert.rejects(h.t.db.transaction((tx) => grantFileReads(tx, { caller: system, jobId, refs: refs.slice(0, 1), now: h.clock.now() })), code('FILE_NOT_FOUND'),
        "the app cannot grant a person's file")
    })

    test('the sweep deletes objects whose upload never committed, and nothing else', async () => {
      const kept = await files.upload(system, { name: 'kept.txt', contentType: 'text/plain', chunks: chunks(5) })
      const storage = backing.storage()
      await h.t.db.query(`insert into platform.file_objects_pending (storage_key, reason, created_at) values ('f-orphan-0001', 'upload', $1)`, [h.clock.now()])
      await storage.write('f-orphan-0001', chunks(5))
      const before = await backing.objects()
      h.clock.advance(1)
      assert.ok(await files.sweep() >= 1)
      assert.equal(await backing.objects(), before - 1)
      assert.equal(await storage.has('f-orphan-0001'), false)
      assert.equal(await pending(), 0)
      assert.equal((await files.info(system, kept.ref)).size, 5)
      await storage.close()
    })

    test('the objects of files deleted with their namespace (an app or development namespace removed) are swept', async () => {
      const { token } = await h.createOwner('other-owner@files-domain.test')
      assert.equal((await h.request('/v1/apps', { token, json: { slug: 'gone', visibility: 'public' } })).status, 201)
      assert.equal((await h.request('/v1/apps/gone/deployments', { token, json: bundle({ 'service.yaml': manifest('gone') }) })).status, 201)
      const app = (await findAppBySlug(h.t.db, 'gone'))!
      const namespace = (await findNamespace(h.t.db, app.id))!
      const gone: FileCaller = { appId: app.id, namespaceId: namespace.id, userId: null, system: true, jobId: null }
      const before = await backing.objects()
      await files.upload(gone, { name: 'g.txt', contentType: 'text/plain', chunks: chunks(7) })
      assert.equal(await backing.objects(), before + 1)
      await h.t.db.query(`delete from platform.namespaces where id = $1`, [namespace.id])
      assert.equal(await pending(), 1, 'the cascade recorded the object as pending')
      // The trigger stamps the database's time; bring the test clock past it.
      h.clock.advance(Math.max(0, Date.now() - h.clock.now().getTime()) + 60_000)
      await files.sweep()
      assert.equal(await backing.objects(), before)
      assert.equal(await pending(), 0)
    })

    test('crash: a platform process killed during an upload leaves no half file, and after the sweep no orphan', async () => {
      const objectsBefore = await backing.objects()
      const filesBefore = (await h.t.db.query(`select 1 from platform.files`)).length
      let db: Db = h.t.db
      let pgliteDir: string | undefined
      if (h.t.url === undefined) {
        // PGlite is one process's database: the child gets its own on disk, reopened here after the kill.
        pgliteDir = await mkdtemp(join(tmpdir(), 'files-crash-pglite-'))
        const own = await openPglite({ dataDir: pgliteDir })
        await migratePlatform(own)
        await own.close()
      }
      const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./crash-child.ts', import.meta.url)), JSON.stringify({
        ...(h.t.url === undefined ? { pgliteDir } : { databaseUrl: h.t.url }),
        ...backing.childOptions(), appId: ann.appId, namespaceId: ann.namespaceId, now: h.clock.now().toISOString(),
      })], { stdio: ['ignore', 'pipe', 'inherit'] })
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (data: Buffer) => { if (data.toString().includes('writing')) resolve() })
        child.on('exit', (status) => reject(new Error(`the upload process ended early (${status})`)))
      })
      const exited = new Promise((resolve) => child.on('exit', resolve))
      child.kill('SIGKILL')
      await exited
      if (pgliteDir !== undefined) db = await openPglite({ dataDir: pgliteDir })
      try {
        const swept = createFiles({ db, clock: h.clock, logger: silentLogger, storage: backing.storage(), sweepAgeMs: 0 })
        assert.equal((await db.query(`select 1 from platform.files`)).length, pgliteDir === undefined ? filesBefore : 0, 'no metadata for the killed upload')
        assert.equal(await backing.objects(), objectsBefore, 'no object, whole or half, is visible')
        const orphans = await db.query<{ storage_key: string }>(`select storage_key from platform.file_objects_pending where reason = 'upload'`)
        assert.equal(orphans.length, 1, 'the killed upload is known as pending')
        assert.equal(await backing.temporary(), 1, 'its temporary file (S3: its multipart upload) is there until the sweep')
        const inFlight = await backing.s3?.unfinishedUploads()
        if (inFlight !== undefined) assert.equal(inFlight[0]!.key, `files/${orphans[0]!.storage_key}`, 'the unfinished upload is the killed one')
        h.clock.advance(1)
        await swept.sweep()
        assert.equal((await db.query(`select 1 from platform.file_objects_pending`)).length, 0)
        assert.equal(await backing.temporary(), 0, 'no temporary file, no unfinished multipart upload')
        assert.equal(await backing.objects(), objectsBefore, 'no object')
        if (inFlight !== undefined) {
          const aborts = backing.s3!.requests.filter((request) => request.method === 'DELETE' && request.query.uploadId === inFlight[0]!.uploadId)
          assert.equal(aborts.length, 1, 'the sweep aborted the killed upload by its id')
        }
        await swept.storage.close()
      } finally {
        if (pgliteDir !== undefined) {
          await db.close()
          await rm(pgliteDir, { recursive: true, force: true })
        }
      }
    })
  })
}
