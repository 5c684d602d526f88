/** The files feature's SQL: one function per statement (platform.files, file_refs, file_objects_pending, file_grants). */
import type { Queryable } from '../db/db.ts'

export type FileRow = {
  readonly id: string
  readonly app_id: string
  readonly namespace_id: string
  readonly owner_user_id: string | null
  readonly generation: number
  readonly name: string
  readonly content_type: string
  readonly size: string | number
  readonly sha256: string
  readonly storage_key: string
  readonly created_at: Date | string
  readonly updated_at: Date | string
}

/** A file as a reference finds it: the file and the generation the reference was issued for. */
export type RefRow = FileRow & {
  readonly ref_generation: number
  /** The file's current reference. */
  readonly current_ref: string
}

const FILE_COLUMNS = `f.id, f.app_id, f.namespace_id, f.owner_user_id, f.generation, f.name, f.content_type, f.size, f.sha256,
  f.storage_key, f.created_at, f.updated_at`

/** The file a reference names in a namespace (any generation), with its current reference. */
export async function findByRef(db: Queryable, namespaceId: string, ref: string): Promise<RefRow | undefined> {
  const rows = await db.query<RefRow>(
    `select ${FILE_COLUMNS}, r.generation as ref_generation,
            (select c.ref from platform.file_refs c where c.file_id = f.id and c.generation = f.generation) as current_ref
       from platform.file_refs r join platform.files f on f.id = r.file_id
      where r.ref = $2 and r.namespace_id = $1 and f.namespace_id = $1`,
    [namespaceId, ref],
  )
  return rows[0]
}

/** A file by id in a namespace, with its current reference. */
export async function findById(db: Queryable, namespaceId: string, id: string): Promise<RefRow | undefined> {
  const rows = await db.query<RefRow>(
    `select ${FILE_COLUMNS}, f.generation as ref_generation,
            (select c.ref from platform.file_refs c where c.file_id = f.id and c.generation = f.generation) as current_ref
       from platform.files f where f.id = $2 and f.namespace_id = $1`,
    [namespaceId, id],
  )
  return rows[0]
}

export async function lockFile(db: Queryable, fileId: string): Promise<FileRow | undefined> {
  const rows = await db.query<FileRow>(`select ${FILE_COLUMNS} from platform.files f where f.id = $1 for update`, [fileId])
  return rows[0]
}

export interface NewFile {
  readonly appId: string
  readonly namespaceId: string
  readonly ownerUserId: string | null
  readonly name: string
  readonly contentType: string
  readonly size: number
  readonly sha256: string
  readonly storageKey: string
  readonly now: Date
}

export async function insertFile(db: Queryable, file: NewFile): Promise<string> {
  const rows = await db.query<{ id: string }>(
    `insert into platform.files (app_id, namespace_id, owner_user_id, generation, name, content_type, size, sha256, storage_key, created_at, updated_at)
     values ($1, $2, $3, 1, $4, $5, $6, $7, $8, $9, $9) returning id`,
    [file.appId, file.namespaceId, file.ownerUserId, file.name, file.contentType, file.size, file.sha256, file.storageKey, file.now],
  )
  return rows[0]!.id
}

export async function insertRef(db: Queryable, ref: { ref: string; fileId: string; namespaceId: string; generation: number }): Promise<void> {
  await db.query(`insert into platform.file_refs (ref, file_id, namespace_id, generation) values ($1, $2, $3, $4)`,
    [ref.ref, ref.fileId, ref.namespaceId, ref.generation])
}

/** A new generation's content; only when the file is still at `generation` (returns whether it was). */
export async function updateContent(db: Queryable, change: {
  fileId: string; generation: number; name: string; contentType: string; size: number; sha256: string; storageKey: string; now: Date
}): Promise<boolean> {
  const rows = await db.query(
    `update platform.files set generation = generation + 1, name = $3, content_type = $4, size = $5, sha256 = $6, storage_key = $7, updated_at = $8
      where id = $1 and generation = $2 returning id`,
    [change.fileId, change.generation, change.name, change.contentType, change.size, change.sha256, change.storageKey, change.now],
  )
  return rows.length === 1
}

export async function deleteFile(db: Queryable, fileId: string): Promise<void> {
  await db.query(`delete from platform.files where id = $1`, [fileId])
}

export async function insertPending(db: Queryable, pending: { storageKey: string; reason: 'upload' | 'delete'; now: Date }): Promise<void> {
  await db.query(`insert into platform.file_objects_pending (storage_key, reason, created_at) values ($1, $2, $3)
                  on conflict (storage_key) do update set reason = excluded.reason`,
  [pending.storageKey, pending.reason, pending.now])
}

export async function deletePending(db: Queryable, storageKey: string): Promise<void> {
  await db.query(`delete from platform.file_objects_pending where storage_key = $1`, [storageKey])
}

/** Pending objects older than `before`, oldest first, at most `limit`. */
export async function stalePending(db: Queryable, before: Date, limit: number): Promise<{ storage_key: string; reason: string }[]> {
  return await db.query<{ storage_key: string; reason: string }>(
    `select storage_key, reason from platform.file_objects_pending where created_at < $1 order by created_at limit $2`, [before, limit])
}

export type GrantRow = {
  readonly generation: number
  readonly expires_at: Date | string
}

export async function findGrant(db: Queryable, jobId: string, fileId: string): Promise<GrantRow | undefined> {
  const rows = await db.query<GrantRow>(`select generation, expires_at from platform.file_grants where job_id = $1 and file_id = $2`, [jobId, fileId])
  return rows[0]
}

export async function insertGrants(db: Queryable, grant: { jobId: string; files: readonly { fileId: string; generation: number }[]; expiresAt: Date }): Promise<void> {
  await db.query(
    `insert into platform.file_grants (job_id, file_id, generation, expires_at)
     select $1, g.file_id, g.generation, $4 from unnest($2::uuid[], $3::int[]) as g (file_id, generation)
     on conflict (job_id, file_id) do nothing`,
    [grant.jobId, grant.files.map((file) => file.fileId), grant.files.map((file) => file.generation), grant.expiresAt],
  )
}
