/**
 * `ctx.files` end to end with real Deno Functions (spec 2.10, 4.3, 5.5, 7.2, 8): upload,
 * download, replace, remove and info, inline and in pieces across the worker pipe; who may
 * read and write whose files; a reference of one app is nothing in another; delegated read
 * grants on jobs.enqueue (download only, the pinned generation, a fresh attempt on retry).
 * All of it over each storage adapter: local disk and S3 (a real s3rver).
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../test/test-db.ts'
import { startHarness, type Harness } from '../../test/harness.ts'
import { signIn, type SignedIn } from '../../test/data-fixture.ts'
import { findAppBySlug } from '../apps/apps.ts'
import { startS3Server, type TestS3Server } from '../../test/s3-server.ts'
import { createS3Storage } from './s3-storage.ts'
import { filesBundle } from './test-app.ts'

function pattern(size: number, seed = 7): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let index = 0; index < size; index += 1) bytes[index] = (index * 31 + seed) & 0xff
  return bytes
}
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

for (const storage of ['local disk', 'S3-compatible (s3rver)'] as const) describe(`ctx.files over ${storage} storage (${backend})`, () => {
  let h: Harness
  let s3: TestS3Server | undefined
  let ann: SignedIn
  let bob: SignedIn
  let ownerToken: string

  before(async () => {
    if (storage !== 'local disk') s3 = await startS3Server()
    h = await startHarness(undefined, s3 === undefined ? {} : { files: { storage: createS3Storage(s3.options) } })
    const { token } = await h.createOwner('owner@files.test')
    ownerToken = token
    for (const slug of ['filebox', 'otherbox', 'oldbox']) {
      assert.equal((await h.request('/v1/apps', { token, json: { slug, visibility: 'public' } })).status, 201)
      const res = await h.request(`/v1/apps/${slug}/deployments`, { token, json: filesBundle(slug, slug === 'oldbox' ? '2.3.0' : '2.6.0') })
      assert.equal(res.status, 201, await res.text())
    }
    ann = await signIn(h, 'filebox', 'ann@files.test')
    bob = await signIn(h, 'filebox', 'bob@files.test')
  })
  after(async () => {
    await h.close()
    await s3?.close()
  })

  /** Calls `op` of an app as a person (or anonymously). */
  async function op(input: Record<string, unknown>, options: { as?: SignedIn | null; slug?: string } = {}): Promise<any> {
    const who = options.as === undefined ? ann : options.as
    const res = await h.request('/_service/functions/op', {
      host: options.slug ?? 'filebox', headers: { 'x-service-sdk': '1' }, json: input, ...(who === null ? {} : { token: who.accessToken }),
    })
    const text = await res.text()
    assert.equal(res.status, 200, text)
    return JSON.parse(text)
  }

  /** Runs `sysOp` (a system Function) the way a trusted in-process caller does. */
  async function sysOp(input: Record<string, unknown>, slug = 'filebox'): Promise<any> {
    const app = (await findAppBySlug(h.t.db, slug))!
    const fn = await h.platform.functions.resolve(app, 'sysOp')
    const result = await h.platform.functions.run(fn!, { input, user: null })
    assert.ok(result.ok && 'value' in result, JSON.stringify(result))
    return (result as { value: unknown }).value
  }

  test('a person uploads a file and reads it back with its info: name, contentType, size, generation, timestamps', async () => {
    const { ref, info } = await op({ op: 'upload', text: 'hello files', name: 'hello.txt', contentType: 'text/plain; charset=utf-8' })
    assert.match(ref, /^file_[A-Za-z0-9_-]{43}$/)
    assert.equal(info.ref, ref)
    assert.equal(info.name, 'hello.txt')
    assert.equal(info.contentType, 'text/plain; charset=utf-8')
    assert.equal(info.size, 11)
    assert.equal(info.generation, 1)
    assert.equal(info.createdAt, h.clock.now().toISOString())
    assert.equal(info.updatedAt, info.createdAt)
    const down = await op({ op: 'download', ref })
    assert.deepEqual(down, { name: 'hello.txt', contentType: 'text/plain; charset=utf-8', size: 11, generation: 1, length: 11, sha: sha(new TextEncoder().encode('hello files')) })
    assert.deepEqual((await op({ op: 'info', ref: info.id })).info, info, 'info takes the id as well')
  })

  test('files past the inline size cross the worker pipe in pieces, byte for byte (3 MiB + 5)', async () => {
    const size = 3 * 1024 * 1024 + 5
    const { ref, info } = await op({ op: 'upload', size, seed: 11 })
    assert.equal(info.size, size)
    const down = await op({ op: 'download', ref })
    assert.equal(down.length, size)
    assert.equal(down.sha, sha(pattern(size, 11)))
  })

  test('replace issues a new reference and generation; the old reference stops reading; remove ends the file', async () => {
    const { ref } = await op({ op: 'upload', text: 'one', name: 'one.txt', contentType: 'text/plain' })
    h.clock.advance(1000)
    const replaced = await op({ op: 'replace', ref, text: 'two!', name: 'two.txt' })
    assert.notEqual(replaced.ref, ref)
    assert.equal(replaced.info.generation, 2)
    assert.equal(replaced.info.name, 'two.txt')
    assert.equal(replaced.info.contentType, 'text/plain', 'the content type is kept')
    assert.equal(replaced.info.size, 4)
    assert.notEqual(replaced.info.updatedAt, replaced.info.createdAt)
    assert.deepEqual(await op({ op: 'download', ref }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await op({ op: 'replace', ref, text: 'three' }), { error: 'FILE_NOT_FOUND' })
    assert.equal((await op({ op: 'download', ref: replaced.ref })).size, 4)
    // A large replacement goes in pieces too.
    const big = await op({ op: 'replace', ref: replaced.ref, size: 700_000, seed: 3 })
    assert.equal(big.info.generation, 3)
    assert.equal((await op({ op: 'download', ref: big.ref })).sha, sha(pattern(700_000, 3)))
    assert.deepEqual(await op({ op: 'remove', ref: big.ref }), { removed: true })
    assert.deepEqual(await op({ op: 'download', ref: big.ref }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await op({ op: 'info', ref: big.info.id }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await op({ op: 'remove', ref: big.ref }), { error: 'FILE_NOT_FOUND' })
  })

  test('writes need a signed-in user or a system Function: an anonymous upload is AUTH_REQUIRED', async () => {
    assert.deepEqual(await op({ op: 'upload', text: 'x' }, { as: null }), { error: 'AUTH_REQUIRED' })
    assert.deepEqual(await op({ op: 'upload', size: 600_000 }, { as: null }), { error: 'AUTH_REQUIRED' }, 'in pieces too')
    const system = await sysOp({ op: 'upload', text: 'app file', name: 'app.txt', contentType: 'text/plain' })
    assert.match(system.ref, /^file_/)
  })

  test("a person's file is theirs: another person, an anonymous caller and a system Function find nothing", async () => {
    const { ref, info } = await op({ op: 'upload', text: 'ann only' })
    for (const as of [bob, null]) {
      assert.deepEqual(await op({ op: 'download', ref }, { as }), { error: 'FILE_NOT_FOUND' })
      assert.deepEqual(await op({ op: 'info', ref: info.id }, { as }), { error: 'FILE_NOT_FOUND' })
      assert.deepEqual(await op({ op: 'replace', ref, text: 'mine now' }, { as }), { error: as === null ? 'AUTH_REQUIRED' : 'FILE_NOT_FOUND' })
      assert.deepEqual(await op({ op: 'remove', ref }, { as }), { error: as === null ? 'AUTH_REQUIRED' : 'FILE_NOT_FOUND' })
    }
    assert.deepEqual(await sysOp({ op: 'download', ref }), { error: 'FILE_NOT_FOUND' })
    assert.equal((await op({ op: 'download', ref })).size, 8, 'still there for ann')
  })

  test("the app's files (uploaded by a system Function) are read by system Functions only", async () => {
    const { ref } = await sysOp({ op: 'upload', text: 'app secret', name: 'app.txt', contentType: 'text/plain' })
    assert.equal((await sysOp({ op: 'download', ref })).size, 10)
    assert.deepEqual(await op({ op: 'download', ref }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await op({ op: 'download', ref }, { as: null }), { error: 'FILE_NOT_FOUND' })
  })

  test('attack: a reference of one app is nothing in another app, even to the same person or a system Function', async () => {
    const mine = await op({ op: 'upload', text: 'filebox data' })
    const app = await sysOp({ op: 'upload', text: 'filebox app data', name: 'a.txt', contentType: 'text/plain' })
    const other = await signIn(h, 'otherbox', 'ann@files.test')
    for (const ref of [mine.ref, app.ref]) {
      assert.deepEqual(await op({ op: 'download', ref }, { slug: 'otherbox', as: other }), { error: 'FILE_NOT_FOUND' })
      assert.deepEqual(await op({ op: 'replace', ref, text: 'x' }, { slug: 'otherbox', as: other }), { error: 'FILE_NOT_FOUND' })
      assert.deepEqual(await op({ op: 'remove', ref }, { slug: 'otherbox', as: other }), { error: 'FILE_NOT_FOUND' })
      assert.deepEqual(await sysOp({ op: 'download', ref }, 'otherbox'), { error: 'FILE_NOT_FOUND' })
    }
    assert.deepEqual(await sysOp({ op: 'info', ref: app.info.id }, 'otherbox'), { error: 'FILE_NOT_FOUND' }, 'nor by id')
    // A guessed reference of the right shape reads nothing either.
    assert.deepEqual(await op({ op: 'download', ref: `file_${'A'.repeat(43)}` }), { error: 'FILE_NOT_FOUND' })
    assert.equal((await op({ op: 'download', ref: mine.ref })).size, 12, 'the owner still reads it in its own app')
  })

  test('attack: a reference of production is nothing in a development namespace of the same app, and the other way round', async () => {
    const deployed = await h.request('/v1/apps/filebox/dev/alice/deployments', { token: ownerToken, json: filesBundle('filebox') })
    assert.equal(deployed.status, 201, await deployed.text())
    const app = (await findAppBySlug(h.t.db, 'filebox'))!
    const dev = async (input: Record<string, unknown>) => {
      const fn = await h.platform.functions.resolveDev(app, 'alice', 'sysOp')
      const result = await h.platform.functions.run(fn!, { input, user: null })
      assert.ok(result.ok && 'value' in result, JSON.stringify(result))
      return (result as { value: any }).value
    }
    const production = await sysOp({ op: 'upload', text: 'production', name: 'p.txt', contentType: 'text/plain' })
    const development = await dev({ op: 'upload', text: 'development', name: 'd.txt', contentType: 'text/plain' })
    assert.deepEqual(await dev({ op: 'download', ref: production.ref }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await dev({ op: 'info', ref: production.info.id }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await dev({ op: 'remove', ref: production.ref }), { error: 'FILE_NOT_FOUND' })
    assert.deepEqual(await sysOp({ op: 'download', ref: development.ref }), { error: 'FILE_NOT_FOUND' })
    assert.equal((await dev({ op: 'download', ref: development.ref })).size, 11)
    assert.equal((await sysOp({ op: 'download', ref: production.ref })).size, 10)
  })

  test('bad input gets precise codes: a missing name, a bad content type, data that is not bytes', async () => {
    assert.deepEqual(await op({ op: 'upload', text: 'x', name: '' }), { error: 'FILE_INVALID' })
    assert.deepEqual(await op({ op: 'upload', text: 'x', name: 'a/b' }), { error: 'FILE_INVALID' })
    assert.deepEqual(await op({ op: 'upload', text: 'x', contentType: 'not a type' }), { error: 'FILE_INVALID' })
    assert.deepEqual(await op({ op: 'download', ref: 'nope' }), { error: 'FILE_NOT_FOUND' })
  })

  describe('delegated read grants (SDK 2.4.0)', () => {
    async function produce(payload: Record<string, unknown>, options: Record<string, unknown>, as: SignedIn | null = ann, slug = 'filebox'): Promise<any> {
      const res = await h.request('/_service/functions/produce', {
        host: slug, headers: { 'x-service-sdk': '1' }, json: { payload: JSON.stringify(payload), options: JSON.stringify(options) },
        ...(as === null ? {} : { token: as.accessToken }),
      })
      assert.equal(res.status, 200)
      return await res.json()
    }
    /** Runs every due job (the queue runs one at a time). */
    async function drain(): Promise<void> {
      while ((await h.platform.jobs.runDue()) > 0) { /* next */ }
    }
    async function scans(jobId: string): Promise<string[]> {
      const rows = await h.t.db.query<{ outcome: string }>(`select outcome from app_filebox.scans where job_id = $1 order by attempt`, [jobId])
      return rows.map((row) => row.outcome)
    }

    test('the consumer downloads the granted file, and without a grant finds nothing', async () => {
      const { ref } = await op({ op: 'upload', text: 'receipt' })
      const granted = await produce({ ref }, { idempotencyKey: 'g1', files: { read: [ref] } })
      const plain = await produce({ ref }, { idempotencyKey: 'g2' })
      await drain()
      assert.deepEqual(await scans(granted.id), ['ok:7:1'])
      assert.deepEqual(await scans(plain.id), ['FILE_NOT_FOUND'])
    })

    test('the grant is download only: the consumer may not replace or remove the file', async () => {
      const { ref } = await op({ op: 'upload', text: 'keep me' })
      const removing = await produce({ ref, also: 'remove' }, { idempotencyKey: 'g3', files: { read: [ref] } })
      const replacing = await produce({ ref, also: 'replace' }, { idempotencyKey: 'g4', files: { read: [ref] } })
      await drain()
      assert.deepEqual(await scans(removing.id), ['ok:7:1;remove:FILE_READ_ONLY'])
      assert.deepEqual(await scans(replacing.id), ['ok:7:1;replace:FILE_READ_ONLY'])
      assert.equal((await op({ op: 'download', ref })).size, 7)
    })

    test('a file replaced after the grant fails FILE_INPUT_CHANGED, even with identical bytes, by either reference', async () => {
      const { ref } = await op({ op: 'upload', text: 'same bytes' })
      const byOld = await produce({ ref }, { idempotencyKey: 'g5', files: { read: [ref] } })
      const replaced = await op({ op: 'replace', ref, text: 'same bytes', name: 'a.bin' })
      const byNew = await produce({ ref: replaced.ref }, { idempotencyKey: 'g6', files: { read: [ref] } })
      assert.deepEqual(byNew, { error: 'FILE_NOT_FOUND' }, 'the old reference can no longer be granted')
      const pinnedNew = await produce({ ref: replaced.ref }, { idempotencyKey: 'g7', files: { read: [replaced.ref] } })
      await op({ op: 'replace', ref: replaced.ref, text: 'same bytes', name: 'a.bin' })
      await drain()
      assert.deepEqual(await scans(byOld.id), ['FILE_INPUT_CHANGED'])
      assert.deepEqual(await scans(pinnedNew.id), ['FILE_INPUT_CHANGED'])
    })

    test("the pin holds for the app's own file granted by a system producer, though the consumer could read the app's files anyway", async () => {
      const { ref } = await sysOp({ op: 'upload', text: 'app input', name: 'in.txt', contentType: 'text/plain' })
      const app = (await findAppBySlug(h.t.db, 'filebox'))!
      const fn = await h.platform.functions.resolve(app, 'sysProduce')
      const result = await h.platform.functions.run(fn!, { input: { payload: JSON.stringify({ ref }), options: JSON.stringify({ idempotencyKey: 'g10', files: { read: [ref] } }) }, user: null })
      const job = (result as { value: { id: string } }).value
      const untouched = await sysOp({ op: 'upload', text: 'app input 2', name: 'in2.txt', contentType: 'text/plain' })
      const plain = await h.platform.functions.run(fn!, { input: { payload: JSON.stringify({ ref: untouched.ref }), options: JSON.stringify({ idempotencyKey: 'g11' }) }, user: null })
      await sysOp({ op: 'replace', ref, text: 'app input', name: 'in.txt' })
      await drain()
      assert.deepEqual(await scans(job.id), ['FILE_INPUT_CHANGED'])
      assert.deepEqual(await scans((plain as { value: { id: string } }).value.id), ['ok:11:1'], "without a grant the consumer reads the app's file as the app")
    })

    test('each retry gets fresh authority from the grant: attempt 2 reads the file again', async () => {
      const { ref } = await op({ op: 'upload', text: 'retry me' })
      const job = await produce({ ref, failFirst: 'yes' }, { idempotencyKey: 'g8', files: { read: [ref] } })
      await drain()
      h.clock.advance(11_000)
      await drain()
      assert.deepEqual(await scans(job.id), ['ok:8:1', 'ok:8:1'])
    })

    test('grant limits: 1 to 16 files the producer may read; anonymous producers may not grant; same key with other files is reused', async () => {
      const { ref } = await op({ op: 'upload', text: 'a' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l1', files: { read: [] } }), { error: 'FILE_GRANT_INVALID' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l2', files: { read: Array(17).fill(ref) } }), { error: 'FILE_GRANT_INVALID' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l3', files: { read: ref } }), { error: 'FILE_GRANT_INVALID' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l4', files: { read: [ref], write: [ref] } }), { error: 'FILE_GRANT_INVALID' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l5', files: { read: [ref] } }, bob), { error: 'FILE_NOT_FOUND' }, "bob cannot grant ann's file")
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l6', files: { read: [ref] } }, null), { error: 'AUTH_REQUIRED' })
      const other = await op({ op: 'upload', text: 'b' })
      const first = await produce({ ref }, { idempotencyKey: 'l7', files: { read: [ref] } })
      assert.equal((await produce({ ref }, { idempotencyKey: 'l7', files: { read: [ref] } })).id, first.id, 'the same key and files return the job')
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l7', files: { read: [other.ref] } }), { error: 'IDEMPOTENCY_KEY_REUSED' })
      assert.deepEqual(await produce({ ref }, { idempotencyKey: 'l9', files: { read: [ref] } }, null, 'oldbox'), { error: 'FILE_GRANT_SDK_TOO_OLD' },
        'a release pinned below SDK 2.4.0 cannot grant')
      const sixteen = await produce({ ref }, { idempotencyKey: 'l8', files: { read: Array(16).fill(ref) } })
      assert.match(sixteen.id, /^[0-9a-f-]{36}$/)
      // No job is left behind by a refused grant.
      const rows = await h.t.db.query(`select 1 from platform.jobs where idempotency_key in ('l1','l2','l3','l4','l5','l6')`)
      assert.equal(rows.length, 0)
    })

    // Last: it moves the clock past the people's access tokens.
    test('the grant expires 14 days after the enqueue: a retry after that is FILE_GRANT_EXPIRED', async () => {
      const { ref } = await op({ op: 'upload', text: 'late' })
      const job = await produce({ ref, failFirst: 'yes' }, { idempotencyKey: 'g9', files: { read: [ref] } })
      await drain()
      h.clock.advance(14 * 24 * 60 * 60 * 1000)
      await drain()
      assert.deepEqual(await scans(job.id), ['ok:4:1', 'FILE_GRANT_EXPIRED'])
    })
  })
})
