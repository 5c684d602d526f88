/**
 * The pieces protocol of `ctx.files` across the worker pipe (context.ts), driven directly:
 * an upload session belongs to the invocation that began it, takes exactly the bytes it
 * announced, and one left idle is aborted leaving nothing behind; a download piece is
 * refused once the file was replaced.
 */
import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { eventually } from '../../test/eventually.ts'
import { bundle, manifest, startHarness, type Harness } from '../../test/harness.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { findNamespace } from '../namespaces/namespaces.ts'
import { ServiceError } from '../lib/errors.ts'
import { silentLogger } from '../lib/logger.ts'
import { createFilesContext } from './context.ts'
import { FILE_INLINE_BYTES, FILE_PIECE_BYTES } from '../functions/protocol.ts'

const pipe = { inlineBytes: FILE_INLINE_BYTES, pieceBytes: FILE_PIECE_BYTES }
import { createFiles, type FileCaller, type ManagedFiles } from './files.ts'
import { createLocalStorage } from './local-storage.ts'

const code = (expected: string) => (error: unknown) => error instanceof ServiceError && error.code === expected

describe(`ctx.files pieces across the pipe (${backend})`, () => {
  let h: Harness
  let root: string
  let files: ManagedFiles
  let caller: FileCaller
  let context: ReturnType<typeof createFilesContext>

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'files-pipe-'))
    h = await startHarness()
    const { token } = await h.createOwner('owner@pipe.test')
    assert.equal((await h.request('/v1/apps', { token, json: { slug: 'pipe', visibility: 'public' } })).status, 201)
    assert.equal((await h.request('/v1/apps/pipe/deployments', { token, json: bundle({ 'service.yaml': manifest('pipe') }) })).status, 201)
    const app = (await findAppBySlug(h.t.db, 'pipe'))!
    const namespace = (await findNamespace(h.t.db, app.id))!
    files = createFiles({ db: h.t.db, clock: h.clock, logger: silentLogger, storage: createLocalStorage({ root }) })
    caller = { appId: app.id, namespaceId: namespace.id, userId: null, system: true, jobId: null }
    context = createFilesContext(files, { pipe })
  })
  after(async () => {
    await h.close()
    await rm(root, { recursive: true, force: true })
  })

  const ask = (invocation: object, method: string, ...args: unknown[]) => context.answer({ caller, invocation, method, args })
  const leftovers = async () => (await readdir(join(root, 'tmp')).catch(() => [])).length
  const pending = async () => (await h.t.db.query(`select 1 from platform.file_objects_pending`)).length

  test('an upload in pieces is committed at finish, and another invocation cannot feed it', async () => {
    const mine = {}
    const { uploadId } = await ask(mine, 'upload.begin', { name: 'p.bin', contentType: 'application/octet-stream', size: 10 }) as { uploadId: string }
    await assert.rejects(ask({}, 'upload.chunk', uploadId, new Uint8Array(5)), code('FILE_UPLOAD_NOT_FOUND'))
    await ask(mine, 'upload.chunk', uploadId, new Uint8Array(5).fill(1))
    await ask(mine, 'upload.chunk', uploadId, new Uint8Array(5).fill(2))
    const ref = await ask(mine, 'upload.finish', uploadId) as string
    const head = await ask(mine, 'download', ref) as { size: number; data: Uint8Array }
    assert.deepEqual([...head.data], [1, 1, 1, 1, 1, 2, 2, 2, 2, 2])
    await assert.rejects(ask(mine, 'upload.chunk', uploadId, new Uint8Array(1)), code('FILE_UPLOAD_NOT_FOUND'), 'a finished upload takes nothing more')
  })

  test('more or fewer bytes than announced are refused and leave nothing behind', async () => {
    const invocation = {}
    const over = await ask(invocation, 'upload.begin', { name: 'o.bin', contentType: 'application/octet-stream', size: 4 }) as { uploadId: string }
    await assert.rejects(ask(invocation, 'upload.chunk', over.uploadId, new Uint8Array(5)), code('FILE_INVALID'))
    const under = await ask(invocation, 'upload.begin', { name: 'u.bin', contentType: 'application/octet-stream', size: 4 }) as { uploadId: string }
    await ask(invocation, 'upload.chunk', under.uploadId, new Uint8Array(3))
    await assert.rejects(ask(invocation, 'upload.finish', under.uploadId), code('FILE_INVALID'))
    // The refused uploads' cleanup runs after the refusal answers.
    await eventually(async () => (await leftovers()) === 0 && (await pending()) === 0, 'no temporary file or pending row')
    await assert.rejects(ask(invocation, 'upload.begin', { name: 'big.bin', contentType: 'application/octet-stream', size: files.maxFileBytes + 1 }), code('FILE_TOO_LARGE'),
      'an announced size over the limit is refused before any byte')
  })

  test('an upload left idle (its invocation gone) is aborted and leaves nothing behind', async () => {
    const quick = createFilesContext(files, { pipe, idleMs: 20 })
    const invocation = {}
    const { uploadId } = await quick.answer({ caller, invocation, method: 'upload.begin', args: [{ name: 'i.bin', contentType: 'application/octet-stream', size: 10 }] }) as { uploadId: string }
    await quick.answer({ caller, invocation, method: 'upload.chunk', args: [uploadId, new Uint8Array(5)] })
    await eventually(async () => (await leftovers()) === 0 && (await pending()) === 0, 'the idle upload is cleaned up')
    await assert.rejects(quick.answer({ caller, invocation, method: 'upload.chunk', args: [uploadId, new Uint8Array(5)] }), code('FILE_UPLOAD_NOT_FOUND'))
  })

  test('a download in pieces is refused once the file was replaced, and pieces are at most 512 KiB', async () => {
    const invocation = {}
    const ref = await ask(invocation, 'upload', { data: new Uint8Array(1000), name: 'd.bin', contentType: 'application/octet-stream' }) as string
    const head = await ask(invocation, 'download', ref) as { generation: number }
    assert.equal((await ask(invocation, 'download.chunk', ref, { generation: head.generation, offset: 100, length: 50 }) as Uint8Array).byteLength, 50)
    await assert.rejects(ask(invocation, 'download.chunk', ref, { generation: head.generation, offset: 0, length: FILE_PIECE_BYTES + 1 }), code('FILE_INVALID'))
    await assert.rejects(ask(invocation, 'download.chunk', ref, { generation: head.generation + 1, offset: 0, length: 10 }), code('FILE_NOT_FOUND'))
  })
})
