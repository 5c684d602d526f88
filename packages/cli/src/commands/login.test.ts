import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { startHarness, type Harness } from '../../../platform/test/harness.ts'
import { backend } from '../../../platform/test/test-db.ts'
import { CookieClient, field } from '../../../platform/test/cookie-client.ts'
import { deployPage, signInTo } from '../../../platform/test/sign-in-flow.ts'
import { capture, printed, serveHarness } from '../../test/cli-harness.ts'
import { main } from '../main.ts'
import type { KeyringBackend } from '../credentials.ts'

describe(`service login and logout over HTTP (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let baseUrl: string
  before(async () => {
    h = await startHarness()
    const owner = await h.createOwner('owner@acme.test')
    await deployPage(h, owner.token, 'vault', 'private', 'vault page')
    let url: string
    ;({ server, url } = await serveHarness(h))
    baseUrl = url
  })
  after(async () => {
    server.close()
    await h.close()
  })

  test('login prints a URL and code, waits for approval in the browser, keeps the token in a 0600 file and never prints it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-login-')), 'service', 'credentials.json')
    const env = { SERVICE_URL: baseUrl, SERVICE_CREDENTIALS_FILE: file, SERVICE_POLL_INTERVAL_MS: '10' }
    const login = capture(env)
    const running = main(['login'], login.io)

    // The person's browser: signed in at the auth host, opens the URL, checks the code, approves.
    const approveUrl = await printed(login.out, /http:\/\/auth\.localhost:8787\/cli\/login\/[0-9a-f-]{36}/)
    const code = await printed(login.out, /[A-Z]{4}-[A-Z]{4}/)
    const browser = new CookieClient(h)
    await signInTo(browser, 'vault', 'owner@acme.test')
    const review = await browser.fetch(approveUrl)
    const html = await review.text()
    assert.ok(html.includes(code))
    assert.equal((await browser.post(approveUrl, { csrf: field(html, 'csrf') })).status, 200)

    assert.equal(await running, 0, login.err.join('\n'))
    assert.equal(login.out.at(-1), 'signed in as owner@acme.test')
    assert.doesNotMatch([...login.out, ...login.err].join('\n'), /svc_owner_/)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    const stored = (JSON.parse(readFileSync(file, 'utf8')) as { credentials: Record<string, { token: string }> }).credentials
    const token = stored[baseUrl]!.token
    assert.match(token, /^svc_owner_/)

    // Later commands use the stored token when SERVICE_TOKEN is not set.
    const list = capture(env)
    assert.equal(await main(['apps', 'list'], list.io), 0, list.err.join('\n'))
    assert.match(list.out[0]!, /^vault\s+private/)

    const logout = capture(env)
    assert.equal(await main(['logout'], logout.io), 0)
    assert.match(logout.out[0]!, /^signed out/)
    assert.equal((await h.request('/v1/me', { token })).status, 401, 'the token is revoked on the platform')
    assert.ok(existsSync(file))
    assert.deepEqual((JSON.parse(readFileSync(file, 'utf8')) as { credentials: object }).credentials, {})

    const again = capture(env)
    assert.equal(await main(['logout'], again.io), 0)
    assert.match(again.out[0]!, /^not signed in/)
    const signedOut = capture(env)
    assert.equal(await main(['apps', 'list'], signedOut.io), 3)
    assert.match(signedOut.err[0]!, /^error UNAUTHENTICATED/)
    assert.match(signedOut.err.at(-1)!, /^next: service login/)
  })

  /** The person approves the login whose URL and code the CLI printed (as text, or as JSON under --json). */
  async function approve(lines: string[]) {
    const approveUrl = await printed(lines, /http:\/\/auth\.localhost:8787\/cli\/login\/[0-9a-f-]{36}/)
    const code = await printed(lines, /[A-Z]{4}-[A-Z]{4}/)
    const browser = new CookieClient(h)
    await signInTo(browser, 'vault', 'owner@acme.test')
    const html = await (await browser.fetch(approveUrl)).text()
    assert.ok(html.includes(code))
    assert.equal((await browser.post(approveUrl, { csrf: field(html, 'csrf') })).status, 200)
  }

  test('where no OS credential store answers, login keeps the token in a 0600 file in the config directory and says so on stderr', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const env = { SERVICE_URL: baseUrl, XDG_CONFIG_HOME: config, SERVICE_POLL_INTERVAL_MS: '10' }
    const noKeyring = {
      openKeyring: async (): Promise<KeyringBackend> => {
        throw new Error('DBus error: no session bus')
      },
    }
    const login = capture(env)
    const running = main(['login'], login.io, noKeyring)
    await approve(login.out)
    assert.equal(await running, 0, login.err.join('\n'))
    const file = join(config, 'service', 'credentials.json')
    assert.deepEqual(login.err, [`warning: no OS credential store answered (DBus error: no session bus); the token is kept in ${file}, a file only you can read (mode 0600)`])
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.equal(statSync(join(config, 'service')).mode & 0o777, 0o700)
    const list = capture(env)
    assert.equal(await main(['apps', 'list'], list.io, noKeyring), 0, list.err.join('\n'))
    assert.equal(await main(['logout'], capture(env).io, noKeyring), 0)
  })

  test('with an OS credential store, login --json keeps the token there (no file), prints the link then the result as JSON lines', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const env = { SERVICE_URL: baseUrl, XDG_CONFIG_HOME: config, SERVICE_POLL_INTERVAL_MS: '10' }
    const secrets = new Map<string, string>()
    const keyring: KeyringBackend = {
      name: 'the test keyring',
      get: async (account) => secrets.get(account) ?? null,
      set: async (account, secret) => void secrets.set(account, secret),
      delete: async (account) => secrets.delete(account),
    }
    const withKeyring = { openKeyring: async () => keyring }
    const login = capture(env)
    const running = main(['login', '--json'], login.io, withKeyring)
    await approve(login.out)
    assert.equal(await running, 0, login.err.join('\n'))
    assert.deepEqual(login.err, [])
    const [started, done] = login.out.map((line) => JSON.parse(line))
    assert.equal(login.out.length, 2)
    assert.deepEqual(Object.keys(started).sort(), ['approveUrl', 'expiresAt', 'userCode'])
    assert.deepEqual(done, { user: { email: 'owner@acme.test' }, store: { kind: 'os', location: 'the test keyring', fallback: false } })
    assert.match(secrets.get(baseUrl) ?? '', /^svc_owner_/)
    assert.ok(!existsSync(join(config, 'service')), 'no file was written')
    assert.doesNotMatch(login.out.join('\n'), /svc_owner_/)

    const list = capture(env)
    assert.equal(await main(['apps', 'list'], list.io, withKeyring), 0, list.err.join('\n'))
    const logout = capture(env)
    assert.equal(await main(['logout', '--json'], logout.io, withKeyring), 0)
    assert.deepEqual(JSON.parse(logout.out[0]!), { signedOut: true })
    assert.equal(secrets.size, 0)
  })

  test('login gives up with exit 1 when the login expires unapproved', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'svc-login-')), 'credentials.json')
    const login = capture({ SERVICE_URL: baseUrl, SERVICE_CREDENTIALS_FILE: file, SERVICE_POLL_INTERVAL_MS: '10' })
    const running = main(['login'], login.io)
    await printed(login.out, /cli\/login\//)
    h.clock.advance(10 * 60 * 1000 + 1000)
    assert.equal(await running, 1)
    assert.match(login.err.join('\n'), /LOGIN_EXPIRED/)
    assert.match(login.err.at(-1)!, /^next: service login$/)
    assert.ok(!existsSync(file))
  })
})
