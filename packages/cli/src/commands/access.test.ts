import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ServerType } from '@hono/node-server'
import { manifest, startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { capture, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'

describe(`service access over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let url: string
  let ownerToken: string
  let anaToken: string
  before(async () => {
    h = await startHarness()
    ;({ server, url } = await serveHarness(h))
    ownerToken = (await h.createOwner('owner@acme.test', 'Acme')).token
    anaToken = (await h.createOwner('ana@acme.test', 'Acme')).token
    await h.createOwner('bo@acme.test', 'Acme')
    await h.createOwner('rival@globex.test', 'Globex')
    assert.equal((await h.request('/v1/apps', { token: ownerToken, json: { slug: 'books', visibility: 'private' } })).status, 201)
  })
  after(async () => {
    server.close()
    await h.close()
  })

  async function run(token: string, ...args: string[]) {
    const { io, out, err } = capture({ SERVICE_URL: url, SERVICE_TOKEN: token })
    const code = await main(['access', ...args], io)
    return { code, out, err: err.join('\n') }
  }

  test('set, list and remove roles', async () => {
    const set = await run(ownerToken, 'set', 'books', 'ana@acme.test', 'administer')
    assert.equal(set.code, 0, set.err)
    assert.deepEqual(set.out, ['ana@acme.test now holds administer on books (use, edit, administer)'])
    // ana administers: she gives bo Edit.
    assert.equal((await run(anaToken, 'set', 'books', 'bo@acme.test', 'edit')).code, 0)
    const list = await run(anaToken, 'list', 'books')
    assert.equal(list.code, 0, list.err)
    assert.match(list.out[0]!, /^owner@acme\.test\s+owner \(use, edit, administer\)$/)
    assert.match(list.out.find((l) => l.startsWith('ana@'))!, /\sadminister$/)
    assert.match(list.out.find((l) => l.startsWith('bo@'))!, /\sedit$/)
    const removed = await run(ownerToken, 'remove', 'books', 'bo@acme.test')
    assert.deepEqual(removed.out, ['bo@acme.test holds no role on books any more'])
    assert.equal((await run(ownerToken, 'list', 'books')).out.some((l) => l.startsWith('bo@')), false)
  })

  test('refusals exit 1 with the platform code', async () => {
    const outside = await run(ownerToken, 'set', 'books', 'rival@globex.test', 'use')
    assert.equal(outside.code, 1)
    assert.match(outside.err, /^error MEMBER_OUTSIDE_ORGANISATION: rival@globex\.test belongs to another organisation/)
    await run(ownerToken, 'set', 'books', 'ana@acme.test', 'edit')
    const byEdit = await run(anaToken, 'set', 'books', 'bo@acme.test', 'use')
    assert.equal(byEdit.code, 1)
    assert.match(byEdit.err, /^error FORBIDDEN: this needs Administer on "books"; you hold Edit/)
    const missing = await run(ownerToken, 'remove', 'books', 'bo@acme.test')
    assert.match(missing.err, /^error NOT_FOUND/)
  })

  test('audience shows and sets who may use and administer the integration', async () => {
    const shown = await run(ownerToken, 'audience', 'books')
    assert.deepEqual(shown.out, ['integration of books', '  use:        the whole organisation', '  administer: the owner'])
    const people = await run(ownerToken, 'audience', 'books', 'people', 'ana@acme.test,bo@acme.test')
    assert.equal(people.code, 0, people.err)
    assert.equal(people.out[1], '  use:        ana@acme.test, bo@acme.test')
    const admins = await run(ownerToken, 'audience', 'books', 'administer', 'bo@acme.test')
    assert.equal(admins.out[2], '  administer: the owner, bo@acme.test')
    assert.equal((await run(ownerToken, 'audience', 'books', 'administer', 'none')).out[2], '  administer: the owner')
    assert.equal((await run(ownerToken, 'audience', 'books', 'organisation')).out[1], '  use:        the whole organisation')
    const outside = await run(ownerToken, 'audience', 'books', 'people', 'rival@globex.test')
    assert.match(outside.err, /^error MEMBER_OUTSIDE_ORGANISATION/)
  })

  test('an Edit holder deploys with service deploy; a Use holder is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'access-deploy-'))
    try {
      writeFileSync(join(dir, 'service.yaml'), manifest('books', '', 'private'))
      mkdirSync(join(dir, 'public'))
      writeFileSync(join(dir, 'public/index.html'), 'books page')
      await run(ownerToken, 'set', 'books', 'ana@acme.test', 'edit')
      const deploy = async (token: string) => {
        const { io, out, err } = capture({ SERVICE_URL: url, SERVICE_TOKEN: token })
        return { code: await main(['deploy', dir], io), out, err: err.join('\n') }
      }
      const byEdit = await deploy(anaToken)
      assert.equal(byEdit.code, 0, byEdit.err)
      await run(ownerToken, 'set', 'books', 'ana@acme.test', 'use')
      const byUse = await deploy(anaToken)
      assert.equal(byUse.code, 1)
      assert.match(byUse.err, /error FORBIDDEN: this needs Edit on "books"; you hold Use/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('usage errors exit 2 without calling the platform', async () => {
    for (const args of [
      ['list'], ['set', 'books', 'ana@acme.test'], ['set', 'books', 'ana@acme.test', 'owner'], ['remove', 'books'],
      ['audience', 'books', 'people'], ['audience', 'books', 'everyone'], ['grant', 'books'],
    ]) {
      const result = await run(ownerToken, ...args)
      assert.equal(result.code, 2, args.join(' '))
      assert.match(result.err, /usage: service access|the role is use, edit or administer/)
      assert.equal(result.out.length, 0)
    }
  })
})
