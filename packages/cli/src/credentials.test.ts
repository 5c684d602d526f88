// The CLI's credential store (spec 4.5): the OS store through an injected backend, the 0600
// file where none answers (fallback, with the reason), and the real @napi-rs/keyring on
// this machine: without a session bus it falls back; with a Secret Service (gnome-keyring on
// a private D-Bus session, when both are installed) the token round-trips through it.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { fileURLToPath } from 'node:url'
import { describe, test } from 'node:test'
import { KEYRING_SERVICE, openCredentialStore, type KeyringBackend } from './credentials.ts'

const TOKEN = 'svc_owner_' + 'x'.repeat(43)

/** An OS store in memory that records each call's account. */
function memoryKeyring(): KeyringBackend & { secrets: Map<string, string>; calls: string[] } {
  const secrets = new Map<string, string>()
  const calls: string[] = []
  return {
    name: 'the test keyring',
    secrets,
    calls,
    async get(account) {
      calls.push(`get ${account}`)
      return secrets.get(account) ?? null
    },
    async set(account, secret) {
      calls.push(`set ${account}`)
      secrets.set(account, secret)
    },
    async delete(account) {
      calls.push(`delete ${account}`)
      return secrets.delete(account)
    },
  }
}

describe('the CLI credential store', () => {
  test('SERVICE_CREDENTIALS_FILE forces a 0600 file keyed by base URL origin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-creds-'))
    const path = join(dir, 'deep', 'credentials.json')
    const keyring = memoryKeyring()
    const store = await openCredentialStore({ env: { SERVICE_CREDENTIALS_FILE: path }, openKeyring: async () => keyring })
    assert.equal(store.kind, 'file')
    assert.equal(store.fallback, false)
    assert.equal(await store.get('http://localhost:8787'), null)
    await store.set('http://localhost:8787/', TOKEN)
    await store.set('https://platform.example', 'svc_owner_other')
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.equal(statSync(join(dir, 'deep')).mode & 0o777, 0o700)
    assert.equal(await store.get('http://localhost:8787'), TOKEN)
    assert.equal(await store.get('https://platform.example/some/path'), 'svc_owner_other')
    assert.equal(await store.clear('http://localhost:8787'), true)
    assert.equal(await store.clear('http://localhost:8787'), false)
    assert.equal(await store.get('http://localhost:8787'), null)
    assert.equal(await store.get('https://platform.example'), 'svc_owner_other')
    assert.equal(statSync(path).mode & 0o777, 0o600)
    assert.deepEqual(keyring.calls, [], 'the OS store is not consulted')
  })

  test('an OS store that answers keeps the token under the platform origin, and no file is written', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const keyring = memoryKeyring()
    const store = await openCredentialStore({ env: { XDG_CONFIG_HOME: config }, openKeyring: async () => keyring })
    assert.equal(store.kind, 'os')
    assert.equal(store.fallback, false)
    assert.equal(store.location, 'the test keyring')
    assert.equal(await store.get('http://localhost:8787/'), null)
    await store.set('http://localhost:8787/some/path', TOKEN)
    assert.deepEqual([...keyring.secrets], [['http://localhost:8787', TOKEN]])
    assert.equal(await store.get('http://localhost:8787'), TOKEN)
    assert.equal(await store.clear('http://localhost:8787'), true)
    assert.equal(await store.clear('http://localhost:8787'), false)
    assert.equal(keyring.calls[0], `get ${KEYRING_SERVICE}-availability-check`)
    assert.ok(!existsSync(join(config, 'service')), 'no file was written')
  })

  test('where no OS store answers, the token goes to a 0600 file in a 0700 directory under XDG_CONFIG_HOME, marked as a fallback with the reason', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const store = await openCredentialStore({
      env: { XDG_CONFIG_HOME: config },
      openKeyring: async () => {
        throw new Error('DBus error: no session bus')
      },
    })
    assert.equal(store.kind, 'file')
    assert.equal(store.fallback, true)
    assert.equal(store.fallbackReason, 'DBus error: no session bus')
    assert.equal(store.location, join(config, 'service', 'credentials.json'))
    await store.set('http://localhost:8787', TOKEN)
    assert.equal(statSync(store.location).mode & 0o777, 0o600)
    assert.equal(statSync(join(config, 'service')).mode & 0o777, 0o700)
    assert.equal(await store.get('http://localhost:8787'), TOKEN)
  })

  test('an OS store whose lookup fails or never answers counts as none', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const locked: KeyringBackend = {
      ...memoryKeyring(),
      get: async () => {
        throw new Error('the collection is locked')
      },
    }
    const lockedStore = await openCredentialStore({ env: { XDG_CONFIG_HOME: config }, openKeyring: async () => locked })
    assert.equal(lockedStore.kind, 'file')
    assert.equal(lockedStore.fallbackReason, 'the collection is locked')

    const hanging: KeyringBackend = {
      ...memoryKeyring(),
      get: (_account, signal) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))),
    }
    const started = Date.now()
    const slowStore = await openCredentialStore({ env: { XDG_CONFIG_HOME: config }, openKeyring: async () => hanging, timeoutMs: 50 })
    assert.equal(slowStore.kind, 'file')
    assert.equal(slowStore.fallbackReason, 'it did not answer in time')
    assert.ok(Date.now() - started < 5000)
  })

  test('an OS store that answers but refuses to store says so and names the file alternative', async () => {
    const refusing: KeyringBackend = {
      ...memoryKeyring(),
      set: async () => {
        throw new Error('AccessDenied')
      },
    }
    const store = await openCredentialStore({ env: {}, openKeyring: async () => refusing })
    await assert.rejects(store.set('http://localhost:8787', TOKEN),
      /the test keyring failed to store the token \(AccessDenied\); set SERVICE_CREDENTIALS_FILE/)
  })
})

/** Runs the default store (the real @napi-rs/keyring) in a child process with `env`; returns what it printed. */
async function realStore(env: Record<string, string | undefined>, wrapper: string[] = []): Promise<{ kind: string; fallbackReason?: string; roundTrip?: unknown[] }> {
  const module = fileURLToPath(new URL('./credentials.ts', import.meta.url))
  const script = `
    const { openCredentialStore } = await import(${JSON.stringify(module)})
    const store = await openCredentialStore({ env: process.env })
    const result = { kind: store.kind, fallbackReason: store.fallbackReason }
    if (store.kind === 'os') {
      const url = 'http://credentials-test.invalid'
      result.roundTrip = [await store.get(url)]
      await store.set(url, 'svc_owner_roundtrip')
      result.roundTrip.push(await store.get(url), await store.clear(url), await store.get(url))
    }
    console.log(JSON.stringify(result))`
  const command = [...wrapper, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script]
  const { stdout } = await promisify(execFile)(command[0]!, command.slice(1), { env: env as NodeJS.ProcessEnv, timeout: 60_000 })
  return JSON.parse(stdout.trim().split('\n').at(-1)!)
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => existsSync(join(dir, command)))
}

describe('the real OS credential store (@napi-rs/keyring)', { skip: process.platform !== 'linux' && 'Linux only' }, () => {
  test('without a session bus (a headless machine) no Secret Service answers and the file is used, with the reason', async () => {
    const { DBUS_SESSION_BUS_ADDRESS: _bus, ...rest } = process.env
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const result = await realStore({ ...rest, XDG_CONFIG_HOME: config, SERVICE_CREDENTIALS_FILE: undefined, DISPLAY: undefined })
    assert.equal(result.kind, 'file')
    assert.match(result.fallbackReason ?? '', /DBus|D-Bus|dbus/i)
  })

  const haveSecretService = onPath('dbus-run-session') && onPath('gnome-keyring-daemon')
  test('with a Secret Service (gnome-keyring on a private session bus) the token round-trips through it', { skip: !haveSecretService && 'needs dbus-run-session and gnome-keyring-daemon' }, async () => {
    const home = mkdtempSync(join(tmpdir(), 'svc-keyring-home-'))
    const runtime = mkdtempSync(join(tmpdir(), 'svc-keyring-run-'))
    // A login keyring with a known password, unlocked, then the daemon's secrets component.
    const start = 'printf pw | gnome-keyring-daemon --login >/dev/null 2>&1; gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1; exec "$@"'
    const result = await realStore(
      { ...process.env, HOME: home, XDG_RUNTIME_DIR: runtime, XDG_CONFIG_HOME: join(home, '.config'), SERVICE_CREDENTIALS_FILE: undefined },
      ['dbus-run-session', '--', 'sh', '-c', start, 'sh'],
    )
    assert.equal(result.kind, 'os')
    assert.deepEqual(result.roundTrip, [null, 'svc_owner_roundtrip', true, null])
    assert.ok(!existsSync(join(home, '.config', 'service')), 'no file was written')
  })
})
