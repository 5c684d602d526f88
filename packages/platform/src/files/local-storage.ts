/**
 * The local-disk storage adapter (storage.ts): objects under `<root>/objects/<ab>/<key>`,
 * written to `<root>/tmp/` first, flushed to disk and renamed into place, so a reader
 * never sees half an object and a crash leaves at most a temporary file (swept by age).
 */
import { createReadStream } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { checkStorageKey, ObjectMissingError, type FileStorage } from './storage.ts'

/**
 * @example
 * const storage = createLocalStorage({ root: join(config.dataDir, 'files') })
 * await storage.write('f-1234abcd', chunksOf(bytes))
 */
export function createLocalStorage(options: { root: string }): FileStorage {
  const objects = join(options.root, 'objects')
  const tmp = join(options.root, 'tmp')
  const pathOf = (key: string) => {
    checkStorageKey(key)
    return join(objects, key.slice(0, 2), key)
  }

  return {
    kind: 'local',

    async write(key, chunks) {
      const target = pathOf(key)
      await mkdir(tmp, { recursive: true })
      await mkdir(join(objects, key.slice(0, 2)), { recursive: true })
      const temporary = join(tmp, `${key}.${randomBytes(6).toString('hex')}`)
      const handle = await open(temporary, 'wx', 0o600)
      let size = 0
      try {
        for await (const chunk of chunks) {
          let written = 0
          while (written < chunk.byteLength) {
            const { bytesWritten } = await handle.write(chunk, written, chunk.byteLength - written)
            written += bytesWritten
          }
          size += chunk.byteLength
        }
        await handle.datasync()
        await handle.close()
      } catch (error) {
        await handle.close().catch(() => {})
        await unlink(temporary).catch(() => {})
        throw error
      }
      try {
        await rename(temporary, target)
      } catch (error) {
        await unlink(temporary).catch(() => {})
        throw error
      }
      return size
    },

    async read(key, range) {
      const path = pathOf(key)
      try {
        await stat(path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ObjectMissingError(`no object ${key}`)
        throw error
      }
      const stream = range === undefined
        ? createReadStream(path, { highWaterMark: 256 * 1024 })
        : range.length === 0
          ? null
          : createReadStream(path, { start: range.offset, end: range.offset + range.length - 1, highWaterMark: 256 * 1024 })
      if (stream === null) return (async function* () {})()
      return (async function* () {
        for await (const chunk of stream) yield new Uint8Array((chunk as Buffer).buffer, (chunk as Buffer).byteOffset, (chunk as Buffer).byteLength)
      })()
    },

    async delete(key) {
      await rm(pathOf(key), { force: true })
    },

    async has(key) {
      try {
        await stat(pathOf(key))
        return true
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
        throw error
      }
    },

    async sweepTemporary(before) {
      let names: string[]
      try {
        names = await readdir(tmp)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0
        throw error
      }
      let removed = 0
      for (const name of names) {
        const path = join(tmp, name)
        const facts = await stat(path).catch(() => null)
        if (facts !== null && facts.mtime < before) {
          await rm(path, { force: true })
          removed += 1
        }
      }
      return removed
    },

    async close() {},
  }
}
