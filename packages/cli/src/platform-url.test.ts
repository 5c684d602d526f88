// How the CLI finds the platform (issue 11): --url, then SERVICE_URL, then the URL a
// platform started in this directory recorded in ./.service/url, then the default; the
// operator key is read from the same data directory. Real HTTP against the in-process platform.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { ServerType } from '@hono/node-server'
import { startHarness, type Harness } from '../../platform/test/harness.ts'
import { backend } from '../../platform/test/test-db.ts'
import { capture, serveHarness } from '../test/cli-harness.ts'
import { main } from './main.ts'
import { DEFAULT_PLATFORM_URL, platformUrl } from './platform-url.ts'

function dataDirWith(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'svc-cli-url-'))
  mkdirSync(join(root, '.service'))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(root, '.service', name), text)
  return root
}

/** Runs `fn` with the process in `dir`, as a person running the CLI there. */
async function inDirectory<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  const cwd = process.cwd()
  process.chdir(dir)
  try {
    return await fn()
  } finally {
    process.chdir(cwd)
  }
}

/** A loopback port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

describe('platformUrl', () => {
  const root = dataDirWith({ url: 'http://localhost:9100\n' })
  after(() => rmSync(root, { recursive: true, force: true }))
  const dataDir = join(root, '.service')

  test('takes --url, then SERVICE_URL, then <data dir>/url, then http://localhost:8787', () => {
    const env = { SERVICE_URL: 'http://localhost:9200', SERVICE_DATA_DIR: dataDir }
    assert.deepEqual(platformUrl({ flag: 'http://localhost:9300', env }), { url: 'http://localhost:9300', source: '--url' })
    assert.deepEqual(platformUrl({ flag: undefined, env }), { url: 'http://localhost:9200', source: 'SERVICE_URL' })
    assert.deepEqual(platformUrl({ flag: undefined, env: { SERVICE_DATA_DIR: dataDir } }),
      { url: 'http://localhost:9100', source: join(dataDir, 'url') })
    assert.deepEqual(platformUrl({ flag: undefined, env: { SERVICE_DATA_DIR: join(root, 'missing') } }),
      { url: DEFAULT_PLATFORM_URL, source: 'the default' })
  })

  test('without SERVICE_DATA_DIR the data directory is the nearest .service here or above', async () => {
    const expected = { url: 'http://localhost:9100', source: join(dataDir, 'url') }
    assert.deepEqual(await inDirectory(root, async () => platformUrl({ flag: undefined, env: {} })), expected)
    const appDir = join(root, 'apps', 'my-app')
    mkdirSync(appDir, { recursive: true })
    assert.deepEqual(await inDirectory(appDir, async () => platformUrl({ flag: undefined, env: {} })), expected)
    mkdirSync(join(root, 'apps', '.service'))
    assert.deepEqual(await inDirectory(appDir, async () => platformUrl({ flag: undefined, env: {} })),
      { url: DEFAULT_PLATFORM_URL, source: 'the default' }, 'a nearer .service without a url file is the data directory')
  })

  test('a value that is not an http(s) URL is an error naming where it came from', () => {
    const bad = dataDirWith({ url: 'localhost:9100\n' })
    try {
      assert.deepEqual(platformUrl({ flag: undefined, env: { SERVICE_DATA_DIR: join(bad, '.service') } }),
        { error: `the platform URL "localhost:9100" (from ${join(bad, '.service', 'url')}) is not an http or https URL` })
      assert.deepEqual(platformUrl({ flag: undefined, env: { SERVICE_URL: 'not a url' } }),
        { error: 'the platform URL "not a url" (from SERVICE_URL) is not a URL' })
    } finally {
      rmSync(bad, { recursive: true, force: true })
    }
  })
})

describe(`the CLI finds a local platform through its data directory (${backend})`, () => {
  let h: Harness
  let server: ServerType
  let url: string
  before(async () => {
    h = await startHarness()
    ;({ server, url } = await serveHarness(h))
  })
  after(async () => {
    server.close()
    await h.close()
  })

  test('without SERVICE_URL, operator create-user reaches the platform on its port through ./.service/url and reads the operator key beside it', async () => {
    const root = dataDirWith({ url: `${url}\n`, 'operator-key': `${h.operatorKey}\n` })
    try {
      const run = capture({})
      const code = await inDirectory(root, () => main(['operator', 'create-user', '--email', 'url@acme.test', '--company', 'Acme'], run.io))
      assert.equal(code, 0, run.err.join('\n'))
      assert.match(run.out.join('\n'), /^svc_owner_/m)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('SERVICE_URL wins over the recorded URL', async () => {
    const root = dataDirWith({ url: `http://127.0.0.1:${await closedPort()}\n`, 'operator-key': `${h.operatorKey}\n` })
    try {
      const run = capture({ SERVICE_URL: url, SERVICE_DATA_DIR: join(root, '.service') })
      assert.equal(await main(['operator', 'create-user', '--email', 'env@acme.test', '--company', 'Acme'], run.io), 0, run.err.join('\n'))
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('an unreachable platform is reported with where its URL came from', async () => {
    const port = await closedPort()
    const root = dataDirWith({ url: `http://127.0.0.1:${port}\n` })
    try {
      const run = capture({ SERVICE_DATA_DIR: join(root, '.service'), SERVICE_TOKEN: 'svc_owner_x' })
      assert.equal(await main(['apps', 'list'], run.io), 4, 'exit 4: the platform is unreachable (docs/cli.md)')
      assert.match(run.err[0]!, new RegExp(`^error PLATFORM_UNREACHABLE: cannot reach the platform at http://127\\.0\\.0\\.1:${port}`))
      assert.equal(run.err[1], `  (the URL is from ${join(root, '.service', 'url')}, written by the platform when it last started; start it again, or set SERVICE_URL)`)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

// SERVICE_TOKEN and SERVICE_OPERATOR_KEY are the person's, not a directory's: a .service/url
// that came with a cloned repository must not receive them. The CLI sends them to --url,
// SERVICE_URL, the default, or a loopback URL recorded by a platform on this machine.
describe('credentials from the environment go only where the person pointed the CLI', () => {
  /** Replaces fetch while `fn` runs, recording each request's URL and Authorization header; every request fails as unreachable. */
  async function recordingRequests<T>(fn: () => Promise<T>): Promise<{ result: T; requests: { url: string; authorization: string | null }[] }> {
    const requests: { url: string; authorization: string | null }[] = []
    const real = globalThis.fetch
    globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
      requests.push({ url: String(input), authorization: new Headers(init?.headers).get('authorization') })
      throw new TypeError('fetch failed')
    }) as typeof fetch
    try {
      return { result: await fn(), requests }
    } finally {
      globalThis.fetch = real
    }
  }

  test('a .service/url found from here up that is not loopback gets neither SERVICE_TOKEN nor SERVICE_OPERATOR_KEY: exit 2 naming SERVICE_URL and --url, no request', async () => {
    const root = dataDirWith({ url: 'http://203.0.113.7:1\n' })
    try {
      const token = capture({ SERVICE_TOKEN: 'svc_owner_secret' })
      const listed = await recordingRequests(() => inDirectory(root, () => main(['apps', 'list'], token.io)))
      assert.deepEqual(listed.requests, [])
      assert.equal(listed.result, 2)
      assert.match(token.err[0]!, /^service: SERVICE_TOKEN is not sent to http:\/\/203\.0\.113\.7:1, /)
      assert.match(token.err.join('\n'), /SERVICE_URL/)
      assert.match(token.err.join('\n'), /--url/)

      const key = capture({ SERVICE_OPERATOR_KEY: 'operator-secret' })
      const created = await recordingRequests(() => inDirectory(root, () => main(['operator', 'create-user', '--email', 'x@acme.test', '--company', 'Acme', '--json'], key.io)))
      assert.deepEqual(created.requests, [])
      assert.equal(created.result, 2)
      assert.equal(JSON.parse(key.err.at(-1)!).error.code, 'USAGE')
      assert.match(JSON.parse(key.err.at(-1)!).error.message, /SERVICE_OPERATOR_KEY is not sent to http:\/\/203\.0\.113\.7:1/)

      // Named by the person (SERVICE_URL or --url), the same address gets the token.
      for (const [args, env] of [
        [['apps', 'list'], { SERVICE_TOKEN: 'svc_owner_secret', SERVICE_URL: 'http://203.0.113.7:1' }],
        [['apps', 'list', '--url', 'http://203.0.113.7:1'], { SERVICE_TOKEN: 'svc_owner_secret' }],
      ] as const) {
        const run = capture({ ...env })
        const sent = await recordingRequests(() => inDirectory(root, () => main([...args], run.io)))
        assert.equal(sent.result, 4, run.err.join('\n'))
        assert.deepEqual(sent.requests, [{ url: 'http://203.0.113.7:1/v1/apps', authorization: 'Bearer svc_owner_secret' }])
      }
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('only 127.0.0.0/8, ::1 and localhost count as loopback', async () => {
    for (const [recorded, loopback] of [
      ['http://127.0.0.1:8787', true], ['http://127.9.8.7:8787', true], ['http://localhost:8787', true], ['http://LOCALHOST:8787', true],
      ['http://[::1]:8787', true], ['https://203.0.113.7', false], ['http://example.com:8787', false],
      ['http://localhost.example.com:8787', false], ['http://127.0.0.1.nip.io:8787', false], ['http://128.0.0.1:8787', false],
    ] as const) {
      const root = dataDirWith({ url: `${recorded}\n` })
      try {
        const run = capture({ SERVICE_DATA_DIR: join(root, '.service'), SERVICE_TOKEN: 'svc_owner_secret' })
        const sent = await recordingRequests(() => main(['apps', 'list'], run.io))
        assert.equal(sent.result, loopback ? 4 : 2, `${recorded}: ${run.err.join('\n')}`)
        assert.deepEqual(sent.requests.map((r) => r.authorization), loopback ? ['Bearer svc_owner_secret'] : [], recorded)
      } finally {
        rmSync(root, { recursive: true, force: true })
      }
    }
  })

  test('a loopback .service/url gets SERVICE_TOKEN and SERVICE_OPERATOR_KEY, as a platform started on this machine', async () => {
    const seen: (string | undefined)[] = []
    const server = createHttpServer((req, res) => {
      seen.push(req.headers.authorization)
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(req.url === '/v1/apps'
        ? '{"apps": []}'
        : '{"user": {"id": "u1", "email": "x@acme.test", "organisationRole": "member"}, "token": "svc_owner_new"}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const root = dataDirWith({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}\n` })
    try {
      const token = capture({ SERVICE_TOKEN: 'svc_owner_mine' })
      assert.equal(await inDirectory(root, () => main(['apps', 'list'], token.io)), 0, token.err.join('\n'))
      const key = capture({ SERVICE_OPERATOR_KEY: 'operator-mine' })
      assert.equal(await inDirectory(root, () => main(['operator', 'create-user', '--email', 'x@acme.test', '--company', 'Acme'], key.io)), 0, key.err.join('\n'))
      assert.deepEqual(seen, ['Bearer svc_owner_mine', 'Bearer operator-mine'])
    } finally {
      server.close()
      rmSync(root, { recursive: true, force: true })
    }
  })
})
