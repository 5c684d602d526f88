// How the CLI finds the platform (issue 11): --url, then SERVICE_URL, then the URL a
// platform started in this directory recorded in ./.service/url, then the default; the
// operator key is read from the same data directory. Real HTTP against the in-process platform.
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
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
