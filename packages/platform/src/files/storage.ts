/**
 * Where managed files' bytes live: one small interface with two adapters, local disk
 * (local-storage.ts, the default, under SERVICE_DATA_DIR) and S3-compatible object storage
 * (s3-storage.ts, with FILES_S3_*). Both pass one shared test suite (storage.test.ts).
 *
 * An object is written once under a key the files feature chooses and never changed: a
 * replacement is a new object. `write` is atomic (a reader sees the whole object or none)
 * and leaves nothing behind when it fails; a crash may leave temporary leftovers, which
 * `sweepTemporary` removes. The files feature keeps the list of objects it is writing or
 * deleting (platform.file_objects_pending) and sweeps those itself.
 */

export interface FileStorage {
  readonly kind: 'local' | 's3'
  /**
   * Writes `chunks` as the object `key`; resolves with its size once the whole object is
   * stored. When `chunks` throws (or storing fails) nothing is left under `key`.
   */
  write(key: string, chunks: AsyncIterable<Uint8Array>): Promise<number>
  /** The object's bytes, or its `length` bytes from `offset`; throws ObjectMissingError when there is none. */
  read(key: string, range?: { readonly offset: number; readonly length: number }): Promise<AsyncIterable<Uint8Array>>
  /** Deletes the object; deleting one that does not exist is not an error. */
  delete(key: string): Promise<void>
  /** Whether the object exists. */
  has(key: string): Promise<boolean>
  /** Removes leftovers of writes started before `before` (temporary files, unfinished multipart uploads); returns how many. */
  sweepTemporary(before: Date): Promise<number>
  close(): Promise<void>
}

/** A read of an object that does not exist. */
export class ObjectMissingError extends Error {
  override readonly name = 'ObjectMissingError'
}

/** Storage keys are ours: lowercase letters, digits and hyphens. */
export function checkStorageKey(key: string): void {
  if (!/^[a-z0-9][a-z0-9-]{7,127}$/.test(key)) throw new Error(`not a storage key: ${key.slice(0, 64)}`)
}
