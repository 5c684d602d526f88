// The worker sandbox against real Deno: files outside the bundle, writes, environment,
// subprocesses, FFI, private and loopback addresses and remote imports are refused; a
// loopback server opens only when the pool lists it in `allowNet`. Also the pure parts:
// the deny list, the worker command and entrypoint checks.

import assert from 'node:assert/strict'
import { existsSync, symlinkSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { entrypointProblem } from './entrypoint.ts'
import type { FunctionResult } from './failures.ts'
import { DENIED_IPV4_RANGES, deniedNetwork, workerCommand } from './sandbox.ts'
import { SDK_ENTRY, metaFor, removeBundle, testPool, writeBundle, type TestPool } from './test-bundle.ts'

const PROBE = `
  import { defineFunction, enum as enumOf, object, optional, string } from '@service/server'
  async function attempt(run: () => unknown) {
    try {
      const value = await run()
      return { allowed: true, value: value === undefined ? null : value }
    } catch (error) {
      return { allowed: false, name: error.name, message: error.message, cause: error.cause ? String(error.cause.message ?? error.cause) : null }
    }
  }
  export default defineFunction({
    input: object({
      probe: enumOf(['readPasswd', 'readBundle', 'readSdk', 'writeBundle', 'writeTmp', 'env', 'command', 'ffi', 'fetch', 'listen', 'importRemote', 'importFile']),
      url: optional(string()),
    }),
    async handler({ input }) {
      switch (input.probe) {
        case 'readPasswd': return await attempt(() => Deno.readTextFile('/etc/passwd'))
        case 'readBundle': return await attempt(async () => (await Deno.readTextFile('./functions/probe.ts')).length > 0)
        case 'readSdk': return await attempt(async () => (await Deno.readTextFile(new URL(import.meta.resolve('@service/server')))).length > 0)
        case 'writeBundle': return await attempt(() => Deno.writeTextFile('./functions/written.txt', 'x'))
        case 'writeTmp': return await attempt(() => Deno.writeTextFile('/tmp/service-functions-probe.txt', 'x'))
        case 'env': return await attempt(() => Deno.env.get('PATH'))
        case 'command': return await attempt(async () => (await new Deno.Command('/bin/sh', { args: ['-c', 'true'] }).output()).code)
        case 'ffi': return await attempt(() => { Deno.dlopen('libc.so.6', {}) })
        case 'fetch': return await attempt(async () => await (await fetch(input.url ?? '')).text())
        case 'listen': return await attempt(() => { const listener = Deno.listen({ port: 0 }); listener.close() })
        case 'importRemote': return await attempt(async () => Object.keys(await import('https://deno.land/std@0.224.0/version.ts')))
        case 'importFile': return await attempt(async () => Object.keys(await import('file:///etc/hostname')))
      }
    },
  })`

const REMOTE_IMPORT = `
  import { VERSION } from 'https://deno.land/std@0.224.0/version.ts'
  import { defineFunction, object } from '@service/server'
  export default defineFunction({ input: object({}), handler: () => VERSION })`

interface Probe {
  allowed: boolean
  name?: string
  message?: string
  cause?: string | null
  value?: unknown
}

function probeResult(result: FunctionResult): Probe {
  if (!result.ok) assert.fail(`the probe Function failed: ${JSON.stringify(result.error)}`)
  return result.value as Probe
}

let bundleDir: string
let pool: TestPool
let server: Server
let serverUrl: string
let serverHits = 0

before(async () => {
  bundleDir = writeBundle({ 'functions/probe.ts': PROBE, 'functions/remote-import.ts': REMOTE_IMPORT })
  pool = testPool(bundleDir)
  server = createServer((_request, response) => {
    serverHits += 1
    response.end('hello from loopback')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
})

after(async () => {
  await pool.close()
  await new Promise((resolve) => server.close(resolve))
  removeBundle(bundleDir)
})

const meta = metaFor()
const probe = async (input: Record<string, string>, on: TestPool = pool) =>
  probeResult(await on.invoke({ entrypoint: 'functions/probe.ts', input, meta }))

function assertRefused(result: Probe, name: string, message: RegExp): void {
  assert.equal(result.allowed, false, `expected refusal, got ${JSON.stringify(result)}`)
  assert.equal(result.name, name, JSON.stringify(result))
  assert.match(result.message ?? '', message)
}

describe('the worker sandbox', () => {
  test('a Function can read its own bundle and the SDK', async () => {
    assert.deepEqual(await probe({ probe: 'readBundle' }), { allowed: true, value: true })
    assert.deepEqual(await probe({ probe: 'readSdk' }), { allowed: true, value: true })
  })

  test('reading /etc/passwd is refused', async () => {
    assertRefused(await probe({ probe: 'readPasswd' }), 'NotCapable', /Requires read access to "\/etc\/passwd"/)
    assertRefused(await probe({ probe: 'importFile' }), 'TypeError', /Requires read access/)
  })

  test('writing a file is refused, even inside the bundle', async () => {
    assertRefused(await probe({ probe: 'writeBundle' }), 'NotCapable', /Requires write access/)
    assertRefused(await probe({ probe: 'writeTmp' }), 'NotCapable', /Requires write access/)
    assert.equal(existsSync(join(bundleDir, 'functions/written.txt')), false)
  })

  test('reading the environment is refused', async () => {
    assertRefused(await probe({ probe: 'env' }), 'NotCapable', /Requires env access to "PATH"/)
  })

  test('starting a subprocess is refused', async () => {
    assertRefused(await probe({ probe: 'command' }), 'NotCapable', /Requires run access to "\/bin\/sh"/)
  })

  test('loading a native library (FFI) is refused', async () => {
    assertRefused(await probe({ probe: 'ffi' }), 'NotCapable', /Requires ffi access/)
  })

  test('listening on a port is refused', async () => {
    assertRefused(await probe({ probe: 'listen' }), 'NotCapable', /Requires net access to "0\.0\.0\.0:0"/)
  })

  test('fetching a loopback server is refused, by address and by a name that resolves to it', async () => {
    const hits = serverHits
    assertRefused(await probe({ probe: 'fetch', url: serverUrl }), 'NotCapable', /Requires net access to "127\.0\.0\.1:/)
    const byName = await probe({ probe: 'fetch', url: serverUrl.replace('127.0.0.1', 'localhost') })
    assert.equal(byName.allowed, false)
    assert.match(`${byName.message} ${byName.cause}`, /Requires net access to "(127\.0\.0\.1|\[::1\]):/)
    const mapped = await probe({ probe: 'fetch', url: serverUrl.replace('127.0.0.1', '[::ffff:127.0.0.1]') })
    assertRefused(mapped, 'NotCapable', /Requires net access to "127\.0\.0\.1:/)
    assert.equal(serverHits, hits, 'the server saw no request')
  })

  test('private and link-local addresses are refused before any connection', async () => {
    for (const url of ['http://10.1.2.3/', 'http://172.16.0.1/', 'http://192.168.1.1/', 'http://169.254.169.254/latest/meta-data/', 'http://0.0.0.0/', 'http://[::1]/']) {
      const result = await probe({ probe: 'fetch', url })
      assertRefused(result, 'NotCapable', /Requires net access/)
    }
  })

  test('the same loopback server is reachable when the pool lists it in allowNet', async () => {
    const port = (server.address() as AddressInfo).port
    const open = testPool(bundleDir, { allowNet: [`127.0.0.1:${port}`] })
    try {
      const hits = serverHits
      assert.deepEqual(await probe({ probe: 'fetch', url: serverUrl }, open), { allowed: true, value: 'hello from loopback' })
      assert.equal(serverHits, hits + 1)
      assertRefused(await probe({ probe: 'fetch', url: 'http://10.1.2.3/' }, open), 'NotCapable', /Requires net access/)
      assertRefused(await probe({ probe: 'fetch', url: 'http://127.0.0.2/' }, open), 'NotCapable', /Requires net access/)
    } finally {
      await open.close()
    }
  })

  test('a bundle holding a symbolic link is refused, because Deno would follow it out of the bundle', () => {
    const linked = writeBundle({ 'functions/a.ts': 'export default 1' })
    try {
      symlinkSync('/etc/passwd', join(linked, 'functions/passwd.ts'))
      assert.throws(() => testPool(linked), /symbolic link at .*passwd\.ts/)
    } finally {
      removeBundle(linked)
    }
  })

  test('importing a remote module is refused, statically or dynamically', async () => {
    const result = await pool.invoke({ entrypoint: 'functions/remote-import.ts', input: {}, meta: metaFor() })
    assert.equal(result.ok, false)
    assert.ok(!result.ok && result.error.kind === 'import')
    assert.match(result.error.message, /--no-remote/)
    const dynamic = await probe({ probe: 'importRemote' })
    assert.equal(dynamic.allowed, false)
    assert.match(dynamic.message ?? '', /--no-remote/)
  })
})

describe('the deny list', () => {
  test('it holds the private, loopback and link-local ranges, IPv6 loopback and the host addresses', () => {
    const denied = deniedNetwork({ localAddresses: ['192.0.2.7', 'fd00::2', 'fe80::1%eth0', '127.0.0.1'], denyNet: ['platform.example.com:443'] })
    for (const range of DENIED_IPV4_RANGES) assert.ok(denied.includes(range), range)
    assert.ok(denied.includes('[::1]'))
    assert.ok(denied.includes('[::]'))
    assert.ok(denied.includes('192.0.2.7'))
    assert.ok(denied.includes('[fd00::2]'))
    assert.ok(denied.includes('[fe80::1]'), 'the zone index is dropped')
    assert.ok(!denied.includes('127.0.0.1'), 'an address inside a denied range is not listed again')
    assert.ok(denied.includes('platform.example.com:443'))
  })

  test('allowNet carves one address out of its range and nothing more', () => {
    const denied = deniedNetwork({ allowNet: ['127.0.0.1:8080'], localAddresses: [] })
    assert.ok(!denied.includes('127.0.0.0/8'))
    const loopback = denied.filter((entry) => entry.startsWith('127.'))
    assert.equal(loopback.length, 24)
    assert.ok(loopback.includes('127.0.0.0'))
    assert.ok(loopback.includes('127.0.0.2/31'))
    assert.ok(loopback.includes('127.128.0.0/9'))
    assert.ok(denied.includes('10.0.0.0/8'))
  })

  test('allowNet opens an IPv6 address and rejects host names', () => {
    assert.ok(!deniedNetwork({ allowNet: ['[::1]:9000'], localAddresses: [] }).includes('[::1]'))
    assert.throws(() => deniedNetwork({ allowNet: ['localhost:9000'] }), /host name cannot be opened/)
  })

  test('the worker command grants read and net only, with no remote or npm modules', () => {
    const { args, env } = workerCommand({ bundleDir: '/srv/bundle', sdkEntry: SDK_ENTRY, workerScript: '/srv/worker.ts', denoDir: '/srv/deno', localAddresses: [] })
    assert.deepEqual(args.slice(0, 6), ['run', '--no-prompt', '--no-remote', '--no-npm', '--no-config', '--no-lock'])
    assert.ok(args.some((arg) => arg.startsWith('--import-map=data:application/json,')))
    assert.ok(args.includes(`--allow-read=/srv/bundle,${SDK_ENTRY.replace(/\/index\.ts$/, '')}`))
    assert.ok(args.includes('--allow-net'))
    for (const flag of ['--allow-env', '--allow-write', '--allow-run', '--allow-ffi', '--allow-sys', '--allow-all', '-A', '--allow-import']) {
      assert.ok(!args.some((arg) => arg.startsWith(flag)), flag)
    }
    assert.deepEqual(args.slice(-2), ['/srv/worker.ts', 'file:///srv/bundle/'])
    assert.deepEqual(Object.keys(env).sort(), ['DENO_DIR', 'DENO_NO_UPDATE_CHECK', 'NO_COLOR'])
  })

  test('a bundle path with a comma is refused, because Deno splits permission lists on commas', () => {
    assert.throws(() => workerCommand({ bundleDir: '/srv/a,b', sdkEntry: SDK_ENTRY, workerScript: '/w.ts', denoDir: '/d' }), /comma/)
  })
})

describe('entrypoints', () => {
  test('bundle-relative module paths are accepted', () => {
    assert.equal(entrypointProblem('functions/create-task.ts'), null)
    assert.equal(entrypointProblem('functions/nested/job.js'), null)
  })

  test('absolute paths, parent segments, URLs and non-modules are refused', () => {
    for (const entrypoint of ['/etc/passwd.ts', '../x.ts', 'functions/../../x.ts', './functions/a.ts', 'https://e.com/a.ts', 'file:///a.ts', 'functions/a.json', 'functions\\a.ts', '']) {
      assert.notEqual(entrypointProblem(entrypoint), null, entrypoint)
    }
  })
})
