/**
 * One suite for both storage adapters (storage.ts): local disk under a data directory and
 * S3-compatible storage against a real S3-protocol server (s3rver) started here. Atomic
 * writes (nothing visible before the write ends, nothing left when it fails), ranged
 * reads, deletes, and objects larger than one S3 part (a multipart upload; a write that fails
 * after its first part aborts the upload, so s3rver holds no unfinished one).
 */
import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { startS3Server, type TestS3Server } from '../../test/s3-server.ts'
import { createLocalStorage } from './local-storage.ts'
import { createS3Storage, S3_PART_BYTES } from './s3-storage.ts'
import { ObjectMissingError, type FileStorage } from './storage.ts'

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = []
  for await (const chunk of chunks) parts.push(chunk)
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}

async function* chunksOf(bytes: Uint8Array, size = 64 * 1024): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += size) yield bytes.subarray(offset, offset + size)
}

function pattern(length: number, seed = 7): Uint8Array {
  const bytes = new Uint8Array(length)
  for (let index = 0; index < length; index += 1) bytes[index] = (index * 31 + seed) & 0xff
  return bytes
}

let keySequence = 0
const newKey = () => `test-${process.pid}-${(keySequence += 1).toString().padStart(4, '0')}`

function storageSuite(name: string, open: () => Promise<{ storage: FileStorage; leftovers: () => Promise<number>; close: () => Promise<void> }>) {
  describe(`${name} storage`, () => {
    let storage: FileStorage
    let leftovers: () => Promise<number>
    let close: () => Promise<void>
    before(async () => {
      ;({ storage, leftovers, close } = await open())
    })
    after(async () => {
      await storage.close()
      await close()
    })

    test('an object written is read back whole, and a range of it exactly', async () => {
      const key = newKey()
      const bytes = pattern(300_000)
      assert.equal(await storage.write(key, chunksOf(bytes)), bytes.byteLength)
      assert.deepEqual(await collect(await storage.read(key)), bytes)
      assert.deepEqual(await collect(await storage.read(key, { offset: 1000, length: 5000 })), bytes.subarray(1000, 6000))
      assert.deepEqual(await collect(await storage.read(key, { offset: 0, length: 0 })), new Uint8Array(0))
      assert.equal(await storage.has(key), true)
    })

    test('an empty object is an object', async () => {
      const key = newKey()
      assert.equal(await storage.write(key, chunksOf(new Uint8Array(0))), 0)
      assert.equal(await storage.has(key), true)
      assert.equal((await collect(await storage.read(key))).byteLength, 0)
    })

    test('an object larger than one S3 part is stored whole (a multipart upload on S3)', async () => {
      const key = newKey()
      const bytes = pattern(S3_PART_BYTES * 2 + 12_345, 3)
      assert.equal(await storage.write(key, chunksOf(bytes, 1024 * 1024)), bytes.byteLength)
      const back = await collect(await storage.read(key))
      assert.equal(back.byteLength, bytes.byteLength)
      assert.deepEqual(back, bytes)
      assert.deepEqual(await collect(await storage.read(key, { offset: S3_PART_BYTES - 10, length: 20 })), bytes.subarray(S3_PART_BYTES - 10, S3_PART_BYTES + 10))
    })

    test('an object is not visible while it is being written', async () => {
      const key = newKey()
      let release!: () => void
      const gate = new Promise<void>((resolve) => (release = resolve))
      let firstSent!: () => void
      const started = new Promise<void>((resolve) => (firstSent = resolve))
      const writing = storage.write(key, (async function* () {
        yield pattern(1024)
        firstSent()
        await gate
        yield pattern(1024, 9)
      })())
      await started
      assert.equal(await storage.has(key), false)
      await assert.rejects(storage.read(key), ObjectMissingError)
      release()
      assert.equal(await writing, 2048)
      assert.equal(await storage.has(key), true)
    })

    test('a write that fails part way leaves nothing behind, also past one S3 part', async () => {
      for (const size of [10_000, S3_PART_BYTES + 100_000]) {
        const key = newKey()
        const before = await leftovers()
        await assert.rejects(storage.write(key, (async function* () {
          yield pattern(size)
          throw new Error('the uploader went away')
        })()), /the uploader went away/)
        assert.equal(await storage.has(key), false)
        await assert.rejects(storage.read(key), ObjectMissingError)
        assert.equal(await leftovers(), before, 'no temporary data stays behind')
      }
    })

    test('a deleted object is gone, and deleting it again is not an error', async () => {
      const key = newKey()
      await storage.write(key, chunksOf(pattern(10)))
      await storage.delete(key)
      assert.equal(await storage.has(key), false)
      await assert.rejects(storage.read(key), ObjectMissingError)
      await storage.delete(key)
    })

    test('a key that is not ours is refused before storage is touched', async () => {
      await assert.rejects(storage.write('../../etc/passwd', chunksOf(pattern(1))), /not a storage key/)
      await assert.rejects(storage.read('A/b'), /not a storage key/)
    })
  })
}

storageSuite('local disk', async () => {
  const root = await mkdtemp(join(tmpdir(), 'files-local-'))
  const storage = createLocalStorage({ root })
  return {
    storage,
    leftovers: async () => (await readdir(join(root, 'tmp')).catch(() => [])).length,
    close: () => rm(root, { recursive: true, force: true }),
  }
})

storageSuite('S3-compatible (s3rver)', async () => {
  const server: TestS3Server = await startS3Server()
  const storage = createS3Storage(server.options)
  return {
    storage,
    // Unfinished multipart uploads in s3rver's store: a failed write aborts its own.
    leftovers: async () => (await server.unfinishedUploads()).length,
    close: () => server.close(),
  }
})
