import assert from 'node:assert/strict'
import { chmodSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { openCredentialStore } from './credentials.ts'

const TOKEN = 'svc_owner_' + 'x'.repeat(43)

/** A stand-in `secret-tool` that keeps secrets in files beside it and logs its arguments. */
function fakeSecretTool(options: { broken?: boolean } = {}): { command: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-secret-tool-'))
  const command = join(dir, 'secret-tool')
  writeFileSync(command, options.broken
    ? '#!/bin/sh\necho "Cannot autolaunch D-Bus without X11 $DISPLAY" >&2\nexit 1\n'
    : `#!/bin/sh
here="$(dirname "$0")"
printf '%s\\n' "$*" >> "$here/argv.log"
eval last=\\"\\$$#\\"
key="$here/secret-$(printf %s "$last" | cksum | cut -d' ' -f1)"
case "$1" in
  store) cat > "$key" ;;
  lookup) [ -f "$key" ] || exit 1; cat "$key" ;;
  clear) rm -f "$key" ;;
esac
`)
  chmodSync(command, 0o755)
  return { command, dir }
}

describe('the CLI credential store', () => {
  test('SERVICE_CREDENTIALS_FILE forces a 0600 file keyed by base URL origin', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-creds-'))
    const path = join(dir, 'deep', 'credentials.json')
    const store = await openCredentialStore({ env: { SERVICE_CREDENTIALS_FILE: path } })
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
  })

  test('without a working secret-tool the default file under XDG_CONFIG_HOME is used, marked as a fallback', async () => {
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    for (const secretTool of [join(config, 'no-such-secret-tool'), fakeSecretTool({ broken: true }).command]) {
      const store = await openCredentialStore({ env: { XDG_CONFIG_HOME: config }, secretTool })
      assert.equal(store.kind, 'file')
      assert.equal(store.fallback, true)
      assert.equal(store.location, join(config, 'service', 'credentials.json'))
    }
  })

  test('a working secret-tool is used, with the token on stdin and never in its arguments', async () => {
    const fake = fakeSecretTool()
    const config = mkdtempSync(join(tmpdir(), 'svc-xdg-'))
    const store = await openCredentialStore({ env: { XDG_CONFIG_HOME: config }, secretTool: fake.command })
    assert.equal(store.kind, 'os')
    assert.equal(store.fallback, false)
    assert.equal(await store.get('http://localhost:8787'), null)
    await store.set('http://localhost:8787', TOKEN)
    assert.equal(await store.get('http://localhost:8787'), TOKEN)
    assert.equal(await store.clear('http://localhost:8787'), true)
    assert.equal(await store.get('http://localhost:8787'), null)
    const argv = readFileSync(join(fake.dir, 'argv.log'), 'utf8')
    assert.ok(!argv.includes(TOKEN))
    assert.match(argv, /^store --label=service CLI service service-platform url http:\/\/localhost:8787$/m)
    assert.match(argv, /^lookup service service-platform url http:\/\/localhost:8787$/m)
    assert.match(argv, /^clear service service-platform url http:\/\/localhost:8787$/m)
    assert.ok(!existsSync(join(config, 'service')), 'no file was written')
  })
})
