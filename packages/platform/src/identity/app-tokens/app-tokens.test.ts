import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { backend } from '../../../test/test-db.ts'
import { startHarness, type Harness } from '../../../test/harness.ts'
import { CookieClient, field } from '../../../test/cookie-client.ts'
import { AUTH, deployPage, signedInBrowser } from '../../../test/sign-in-flow.ts'
import { sha256 } from '../../lib/crypto.ts'
import { APP_CHANGED } from '../../apps/apps.ts'
import { announceChange, dropLocal } from '../../db/notified-cache.ts'
import { createAppToken } from './app-tokens.ts'
import { eventually } from '../../../test/eventually.ts'

const SECRET = /svc_app_[A-Za-z0-9_-]{43}/

/** A browser signed in at the auth host (an unknown address gets a new, confirmed account). */
async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code
}

describe(`app access tokens (${backend})`, () => {
  let h: Harness
  let owner: { token: string; userId: string }
  let ownerBrowser: CookieClient
  before(async () => {
    h = await startHarness()
    owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
    await deployPage(h, owner.token, 'other', 'private', 'other page')
    ownerBrowser = await signedInBrowser(h, 'owner@acme.test')
  })
  after(() => h.close())

  async function create(name = 'ci', app = 'vault') {
    const res = await h.request(`/v1/apps/${app}/access-tokens`, { token: owner.token, json: { name } })
    assert.equal(res.status, 201)
    const text = await res.text()
    return { text, body: JSON.parse(text) as { token: { id: string; name: string; createdAt: string }; revealUrl: string } }
  }

  /** Opens the reveal page and presses the button, as the owner does. */
  async function reveal(b: CookieClient, revealUrl: string): Promise<{ res: Response; html: string }> {
    const review = await b.fetch(revealUrl)
    const html = await review.text()
    assert.equal(review.status, 200, html)
    const res = await b.post(`${AUTH}/app-tokens/reveal`, { csrf: field(html, 'csrf'), id: field(html, 'id'), k: field(html, 'k') })
    return { res, html: await res.text() }
  }

  async function newSecret(name = 'ci', app = 'vault') {
    const { body } = await create(name, app)
    const { res, html } = await reveal(ownerBrowser, body.revealUrl)
    assert.equal(res.status, 200)
    return { id: body.token.id, secret: SECRET.exec(html)![0] }
  }

  test('the owner creates, lists and revokes tokens; neither the create response nor the list contains the value', async () => {
    const { text, body } = await create('deploy bot')
    assert.doesNotMatch(text, /svc_app_/)
    assert.equal(body.token.name, 'deploy bot')
    assert.equal(body.token.createdAt, h.clock.now().toISOString())
    assert.ok(body.revealUrl.startsWith(`${AUTH}/app-tokens/reveal?id=`))

    const list = await h.request('/v1/apps/vault/access-tokens', { token: owner.token })
    const listText = await list.text()
    assert.equal(list.status, 200)
    assert.doesNotMatch(listText, /svc_app_|hash/i)
    const tokens = (JSON.parse(listText) as { tokens: { id: string; name: string; lastUsedAt: string | null }[] }).tokens
    assert.deepEqual(tokens.find((t) => t.id === body.token.id), {
      id: body.token.id, name: 'deploy bot', createdAt: body.token.createdAt, lastUsedAt: null,
    })

    const revoke = () => h.request(`/v1/apps/vault/access-tokens/${body.token.id}`, { token: owner.token, method: 'DELETE' })
    assert.equal((await revoke()).status, 204)
    const reveals = await h.t.db.query<{ sealed: boolean }>('select secret_enc is not null as sealed from platform.app_token_reveals where token_id = $1', [body.token.id])
    assert.deepEqual(reveals.map((r) => r.sealed), [false], 'the pending reveal is burnt with the revocation')
    const after = (await (await h.request('/v1/apps/vault/access-tokens', { token: owner.token })).json()) as { tokens: { id: string }[] }
    assert.ok(!after.tokens.some((t) => t.id === body.token.id))
    const again = await revoke()
    assert.equal(again.status, 404)
    assert.equal(await errorCode(again), 'NOT_FOUND')
  })

  test('another owner gets 404 for every token route of an app they do not own', async () => {
    const { body } = await create()
    const mallory = await h.createOwner('mallory@acme.test')
    for (const [path, init] of [
      ['/v1/apps/vault/access-tokens', {}],
      ['/v1/apps/vault/access-tokens', { json: { name: 'mine now' } }],
      [`/v1/apps/vault/access-tokens/${body.token.id}`, { method: 'DELETE' }],
    ] as const) {
      const res = await h.request(path, { token: mallory.token, ...init })
      assert.equal(res.status, 404)
      assert.equal(await errorCode(res), 'APP_NOT_FOUND')
    }
  })

  test('an owner whose email is not confirmed gets 403 CONFIRMATION_REQUIRED', async () => {
    const drafter = await h.createOwner('drafter@acme.test')
    await deployPage(h, drafter.token, 'drafts', 'private')
    const made = await h.request('/v1/apps/drafts/access-tokens', { token: drafter.token, json: { name: 'early' } })
    const { token } = (await made.json()) as { token: { id: string } }
    await h.t.db.query('update platform.users set email_confirmed_at = null where id = $1', [drafter.userId])
    for (const [path, init] of [
      ['/v1/apps/drafts/access-tokens', {}],
      ['/v1/apps/drafts/access-tokens', { json: { name: 'x' } }],
      [`/v1/apps/drafts/access-tokens/${token.id}`, { method: 'DELETE' }],
    ] as const) {
      const res = await h.request(path, { token: drafter.token, ...init })
      assert.equal(res.status, 403)
      assert.equal(await errorCode(res), 'CONFIRMATION_REQUIRED')
    }
  })

  test('the reveal link shows the value once to the signed-in owner, after a button press, then it is burnt', async () => {
    const { body } = await create()
    const review = await ownerBrowser.fetch(body.revealUrl)
    const reviewHtml = await review.text()
    assert.equal(review.status, 200)
    assert.doesNotMatch(reviewHtml, /svc_app_/, 'a GET shows no value')
    const { res, html } = await reveal(ownerBrowser, body.revealUrl)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('cache-control'), 'no-store')
    const secret = SECRET.exec(html)![0]
    const [row] = await h.t.db.query<{ token_hash: Uint8Array }>(
      'select token_hash from platform.app_access_tokens where id = $1', [body.token.id])
    assert.deepEqual(Buffer.from(row!.token_hash), sha256(secret))

    const second = await ownerBrowser.fetch(body.revealUrl)
    assert.equal(second.status, 410)
    assert.match(await second.text(), /already shown/)
    const replay = await ownerBrowser.post(`${AUTH}/app-tokens/reveal`, {
      csrf: field(reviewHtml, 'csrf'), id: field(reviewHtml, 'id'), k: field(reviewHtml, 'k'),
    })
    assert.equal(replay.status, 410)
    assert.doesNotMatch(await replay.text(), /svc_app_/)
  })

  test('the reveal link refuses anonymous browsers and other users without burning it', async () => {
    const { body } = await create()
    const anonymous = new CookieClient(h)
    const redirected = await anonymous.fetch(body.revealUrl)
    assert.equal(redirected.status, 302)
    const location = new URL(redirected.headers.get('location')!, AUTH)
    assert.equal(location.pathname, '/sign-in')
    assert.equal(location.searchParams.get('continue'), body.revealUrl.slice(AUTH.length))

    const stranger = await signedInBrowser(h, 'stranger@elsewhere.test')
    const refused = await stranger.fetch(body.revealUrl)
    assert.equal(refused.status, 403)
    assert.doesNotMatch(await refused.text(), /svc_app_/)
    const csrfPage = await (await stranger.fetch(`${AUTH}/`)).text()
    const posted = await stranger.post(`${AUTH}/app-tokens/reveal`, {
      csrf: field(csrfPage, 'csrf'), id: new URL(body.revealUrl).searchParams.get('id')!, k: new URL(body.revealUrl).searchParams.get('k')!,
    })
    assert.equal(posted.status, 403)
    assert.doesNotMatch(await posted.text(), /svc_app_/)

    const { res, html } = await reveal(ownerBrowser, body.revealUrl)
    assert.equal(res.status, 200)
    assert.match(html, SECRET)
  })

  test('the reveal link expires after 15 minutes', async () => {
    const { body } = await create()
    const review = await ownerBrowser.fetch(body.revealUrl)
    const html = await review.text()
    h.clock.advance(15 * 60 * 1000 + 1000)
    const late = await ownerBrowser.fetch(body.revealUrl)
    assert.equal(late.status, 410)
    assert.match(await late.text(), /expired/)
    const posted = await ownerBrowser.post(`${AUTH}/app-tokens/reveal`, { csrf: field(html, 'csrf'), id: field(html, 'id'), k: field(html, 'k') })
    assert.equal(posted.status, 410)
    assert.doesNotMatch(await posted.text(), /svc_app_/)
    const [row] = await h.t.db.query<{ secret_enc: string | null }>(
      'select r.secret_enc from platform.app_token_reveals r where r.token_id = $1', [body.token.id])
    assert.ok(row, 'the reveal row exists')
    await create() // creating clears the sealed values of expired links
    const [cleared] = await h.t.db.query<{ secret_enc: string | null }>(
      'select r.secret_enc from platform.app_token_reveals r where r.token_id = $1', [body.token.id])
    assert.equal(cleared!.secret_enc, null)
  })

  test('an app token reads a private app as its owner, and last use is recorded', async () => {
    const { id, secret } = await newSecret()
    const res = await h.request('/', { host: 'vault', token: secret })
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'vault page')
    const me = await h.request('/_service/auth/user', { host: 'vault', token: secret })
    assert.equal(((await me.json()) as { user: { email: string } }).user.email, 'owner@acme.test')
    const session = await h.request('/_service/api/session', { host: 'vault', token: secret, method: 'POST' })
    assert.equal(session.status, 401, 'an app token cannot be traded for a session token')
    // Recorded off the request path: wait for it briefly.
    const lastUsed = async () => (await h.t.db.query<{ last_used_at: Date | null }>(
      'select last_used_at from platform.app_access_tokens where id = $1', [id]))[0]!.last_used_at
    await eventually(async () => (await lastUsed()) !== null, 'last_used_at was recorded', 10_000)
    assert.equal((await lastUsed())?.toISOString(), h.clock.now().toISOString())
  })

  test('a revoked token is refused on the next request', async () => {
    const { id, secret } = await newSecret()
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)
    assert.equal((await h.request(`/v1/apps/vault/access-tokens/${id}`, { token: owner.token, method: 'DELETE' })).status, 204)
    const res = await h.request('/', { host: 'vault', token: secret })
    assert.equal(res.status, 401)
    assert.equal(await errorCode(res), 'AUTH_REQUIRED')
  })

  test('a token for one app gets 401 AUTH_REQUIRED on another app of the same owner', async () => {
    const { secret } = await newSecret()
    const res = await h.request('/', { host: 'other', token: secret, headers: { accept: 'text/html' } })
    assert.equal(res.status, 401)
    assert.equal(await errorCode(res), 'AUTH_REQUIRED')
  })

  test('a token stops working while its owner is not confirmed, and when the app changes owner', async () => {
    const { secret } = await newSecret()
    // No endpoint unconfirms an account or moves an app yet: change the rows as such a writer
    // must, announcing the change in its transaction and dropping this process's caches after.
    const change = async (sql: string, params: unknown[]) => {
      await h.t.db.transaction(async (tx) => {
        await tx.query(sql, params)
        await announceChange(tx, APP_CHANGED, 'test')
      })
      dropLocal(h.t.db, APP_CHANGED)
    }
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)
    await change('update platform.users set email_confirmed_at = null where id = $1', [owner.userId])
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 401)
    await change('update platform.users set email_confirmed_at = $2 where id = $1', [owner.userId, h.clock.now()])
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)

    const heir = await h.createOwner('heir@acme.test')
    await change('update platform.apps set owner_id = $2 where slug = $1', ['vault', heir.userId])
    try {
      assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 401)
    } finally {
      await change('update platform.apps set owner_id = $2 where slug = $1', ['vault', owner.userId])
    }
  })

  test('the table of valid tokens stays exact when a token is created while its app changes owner or its owner loses confirmation (concurrent transactions)', { skip: backend !== 'postgres' && 'PGlite is one session' }, async () => {
    const [app] = await h.t.db.query<{ id: string }>(`select id from platform.apps where slug = 'vault'`)
    const appId = app!.id
    const heir = await h.createOwner('heir-race@acme.test')
    /** Resolves once another session's statement starting with `text` waits for a lock. */
    const waiting = async (text: string) => {
      for (let i = 0; i < 1000; i++) {
        const [row] = await h.t.db.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like $1`, [`${text}%`])
        if (row!.n > 0) return
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      throw new Error(`no statement waited: ${text}`)
    }
    const valid = async (tokenId: string) => (await h.t.db.query(
      'select 1 from platform.app_token_callers where token_id = $1 and created_by = owner_id and owner_confirmed', [tokenId])).length === 1
    /** Creates a token in a transaction and, before it commits, starts `change` on another connection and sees it wait. */
    const createDuring = async (change: string, params: unknown[]) => {
      let changed: Promise<unknown> = Promise.resolve()
      const created = await h.t.db.transaction(async (tx) => {
        const made = await createAppToken(tx, h.clock, { appId, name: 'race', createdBy: owner.userId })
        changed = h.t.db.query(change, params)
        await waiting(change)
        return made
      })
      await changed
      // The app edge's cache of this process is told, as every writer of apps must (see `change` above).
      dropLocal(h.t.db, APP_CHANGED)
      return created
    }
    const confirmAgain = () => h.t.db.query('update platform.users set email_confirmed_at = $2 where id = $1', [owner.userId, h.clock.now()])

    // The change waits for the new token's transaction, then its trigger updates the new row.
    const moved = await createDuring('update platform.apps set owner_id = $2 where id = $1', [appId, heir.userId])
    try {
      assert.equal(await valid(moved.token.id), false, 'moved to another owner while the token was created')
      assert.equal((await h.request('/', { host: 'vault', token: moved.secret })).status, 401)
    } finally {
      await h.t.db.query('update platform.apps set owner_id = $2 where id = $1', [appId, owner.userId])
      dropLocal(h.t.db, APP_CHANGED)
    }
    assert.equal(await valid(moved.token.id), true, 'moved back')
    const unconfirmed = await createDuring('update platform.users set email_confirmed_at = null where id = $1', [owner.userId])
    try {
      assert.equal(await valid(unconfirmed.token.id), false, 'the owner lost confirmation while the token was created')
    } finally {
      await confirmAgain()
    }

    // The other way round: the token's trigger waits for the uncommitted change, then copies it.
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    let started!: () => void
    const changing = new Promise<void>((resolve) => { started = resolve })
    const change = h.t.db.transaction(async (tx) => {
      await tx.query('update platform.users set email_confirmed_at = null where id = $1', [owner.userId])
      started()
      await held
    })
    await changing
    const creating = createAppToken(h.t.db, h.clock, { appId, name: 'race', createdBy: owner.userId })
    await waiting('insert into platform.app_access_tokens')
    release()
    await change
    const late = await creating
    try {
      assert.equal(await valid(late.token.id), false, 'created while the owner was losing confirmation')
    } finally {
      await confirmAgain()
    }
    assert.equal(await valid(late.token.id), true, 'confirmed again')
  })

  test('an app token on the control plane gets 403 APP_TOKEN_NOT_ALLOWED', async () => {
    const { secret } = await newSecret()
    for (const path of ['/v1/apps', '/v1/apps/vault/access-tokens', '/v1/me', '/v1/me/token']) {
      const res = await h.request(path, { token: secret, method: path === '/v1/me/token' ? 'DELETE' : 'GET' })
      assert.equal(res.status, 403, path)
      assert.equal(await errorCode(res), 'APP_TOKEN_NOT_ALLOWED')
    }
  })

  test('the database holds only the hash: no token value in any token table', async () => {
    const { secret } = await newSecret()
    const pending = await create('unrevealed')
    assert.ok(pending.body.revealUrl)
    const dump = JSON.stringify(await Promise.all([
      h.t.db.query('select * from platform.app_access_tokens'),
      h.t.db.query('select * from platform.app_token_reveals'),
      h.t.db.query('select * from platform.app_token_requests'),
    ]), (_, value) => (value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value))
    assert.ok(!dump.includes(secret))
    assert.doesNotMatch(dump, /svc_app_/)
  })

  test('an agent asks for a token; the owner approves in the browser and sees it once; the poll learns only the id', async () => {
    const started = await h.request('/v1/app-token-requests', { json: { app: 'vault', name: 'agent' } })
    assert.equal(started.status, 201)
    const request = (await started.json()) as { id: string; approveUrl: string; pollToken: string }
    assert.equal(request.approveUrl, `${AUTH}/app-tokens/requests/${request.id}`)
    const poll = async () => {
      const res = await h.request(`/v1/app-token-requests/${request.id}/poll`, { json: { pollToken: request.pollToken } })
      assert.equal(res.status, 200)
      return res.text()
    }
    assert.deepEqual(JSON.parse(await poll()), { status: 'pending' })

    const anonymous = await new CookieClient(h).fetch(request.approveUrl)
    assert.equal(anonymous.status, 302)
    assert.match(anonymous.headers.get('location')!, new RegExp(`^${AUTH}/sign-in\\?continue=`))
    const stranger = await signedInBrowser(h, 'stranger2@elsewhere.test')
    assert.equal((await stranger.fetch(request.approveUrl)).status, 404)

    const review = await ownerBrowser.fetch(request.approveUrl)
    const html = await review.text()
    assert.equal(review.status, 200)
    assert.match(html, /agent/)
    assert.doesNotMatch(html, /svc_app_/)
    const action = `${AUTH}/app-tokens/requests/${request.id}`
    assert.equal((await ownerBrowser.post(action, {})).status, 403, 'no CSRF token, no approval')
    assert.equal((await stranger.post(action, { csrf: field(await (await stranger.fetch(`${AUTH}/`)).text(), 'csrf') })).status, 404)
    assert.deepEqual(JSON.parse(await poll()), { status: 'pending' })

    const approved = await ownerBrowser.post(action, { csrf: field(html, 'csrf') })
    assert.equal(approved.status, 200)
    const secret = SECRET.exec(await approved.text())![0]
    const answer = await poll()
    assert.doesNotMatch(answer, /svc_app_/)
    const { status, tokenId } = JSON.parse(answer) as { status: string; tokenId: string }
    assert.equal(status, 'approved')
    const [row] = await h.t.db.query<{ token_hash: Uint8Array; name: string }>(
      'select token_hash, name from platform.app_access_tokens where id = $1', [tokenId])
    assert.deepEqual(Buffer.from(row!.token_hash), sha256(secret))
    assert.equal(row!.name, 'agent')
    assert.equal((await h.request('/', { host: 'vault', token: secret })).status, 200)

    assert.equal((await ownerBrowser.fetch(request.approveUrl)).status, 410)
    const again = await ownerBrowser.post(action, { csrf: field(html, 'csrf') })
    assert.equal(again.status, 410)
    assert.doesNotMatch(await again.text(), /svc_app_/)
  })

  test('a token request expires after 15 minutes and can no longer be approved', async () => {
    const started = await h.request('/v1/app-token-requests', { json: { app: 'vault' } })
    const request = (await started.json()) as { id: string; approveUrl: string; pollToken: string }
    const html = await (await ownerBrowser.fetch(request.approveUrl)).text()
    h.clock.advance(15 * 60 * 1000 + 1000)
    const late = await ownerBrowser.post(`${AUTH}/app-tokens/requests/${request.id}`, { csrf: field(html, 'csrf') })
    assert.equal(late.status, 410)
    assert.doesNotMatch(await late.text(), /svc_app_/)
    const polled = await h.request(`/v1/app-token-requests/${request.id}/poll`, { json: { pollToken: request.pollToken } })
    assert.deepEqual(await polled.json(), { status: 'expired' })
  })

  test('a poll with the wrong secret, or a request for an unknown app, learns nothing', async () => {
    const started = await h.request('/v1/app-token-requests', { json: { app: 'vault' } })
    const request = (await started.json()) as { id: string }
    const wrong = await h.request(`/v1/app-token-requests/${request.id}/poll`, { json: { pollToken: 'guess' } })
    assert.equal(wrong.status, 404)
    const malformed = await h.request('/v1/app-token-requests/not-a-uuid/poll', { json: { pollToken: 'guess' } })
    assert.equal(malformed.status, 404)
    const unknown = await h.request('/v1/app-token-requests', { json: { app: 'nowhere' } })
    assert.equal(unknown.status, 404)
    assert.equal(await errorCode(unknown), 'APP_NOT_FOUND')
  })
})
